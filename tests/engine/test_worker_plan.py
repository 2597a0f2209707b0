"""The scheduler's decisions, pure (`app/engine/worker/plan.py`), from views built by hand:
which sequence a request gets, who starts, waits or is withdrawn, what ends or has an image
evaluated before the batch, how the batch is laid out (decodes and drafts, chunks within the
room, never past an image, in the order of the sequences) and how much to draft."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.engine.worker.plan import (
    PROBE_EVERY,
    SHARE_MIN,
    SHARED_CHUNK,
    Active,
    Chunk,
    Decode,
    Draft,
    Seat,
    Start,
    Waiting,
    Withdrawn,
    admit,
    batch,
    choose,
    context_refusal,
    draft_limit,
    lookup_length,
    model_length,
    prelude,
)
from app.engine.worker.speculate import DRAFT_MAX, StepCosts

IMAGE = -7  # an image's position (any id below IMAGE_ID)
LONG = tuple(range(100, 100 + 3 * SHARE_MIN))  # a prompt several prefixes long


def seat(
    id: int,
    tokens: tuple[int, ...] = (),
    *,
    busy: bool = False,
    used: float = 0.0,
    reserved: bool = False,
) -> Seat:
    return Seat(id, reserved, busy, used, tokens)


def waiting(
    request: int,
    prompt: tuple[int, ...] = (1, 2, 3),
    *,
    reserved: bool = False,
    cancelled: bool = False,
) -> Waiting:
    return Waiting(request, prompt, reserved, cancelled)


def active(
    seq: int,
    *,
    todo: tuple[int, ...] = (),
    next: int | None = None,
    held: int = 0,
    prompt: tuple[int, ...] = (),
    cancelled: bool = False,
) -> Active:
    return Active(seq, 100 + seq, prompt or todo, held, todo, next, cancelled)


# --- choosing a sequence ----------------------------------------------------------------


def test_a_request_gets_the_idle_sequence_holding_most_of_its_prompt() -> None:
    seats = [seat(0, (1, 9)), seat(1, (1, 2, 3)), seat(2, (1, 2, 3, 4), busy=True)]
    chosen = choose(seats, (1, 2, 3, 4, 5), reserved=False, split=False)
    assert chosen is not None and chosen.id == 1  # the busy one holds more, but is busy
    assert choose([seat(0, busy=True)], (1, 2), reserved=False, split=False) is None


def test_the_last_prompt_token_never_counts_and_ties_go_to_the_least_recently_used() -> None:
    seats = [seat(0, (1, 2, 3), used=5.0), seat(1, (1, 2), used=1.0)]
    chosen = choose(seats, (1, 2, 3), reserved=False, split=False)
    assert chosen is not None and chosen.id == 1  # both hold (1, 2) of what counts: the older


def test_a_split_pool_keeps_the_reserved_sequences_for_the_windows_turn() -> None:
    seats = [seat(0, (1, 2, 3), reserved=True), seat(1)]
    for_client = choose(seats, (1, 2, 3, 4), reserved=False, split=True)
    for_window = choose(seats, (5, 6), reserved=True, split=True)
    assert for_client is not None and for_client.id == 1
    assert for_window is not None and for_window.id == 0
    anyone = choose(seats, (1, 2, 3, 4), reserved=False, split=False)
    assert anyone is not None and anyone.id == 0


# --- admission --------------------------------------------------------------------------


def test_requests_start_in_the_order_they_came_each_taking_its_sequence() -> None:
    plan = admit([waiting(7), waiting(8), waiting(9)], [seat(0), seat(1)], [], split=False)
    assert plan.decisions == (Start(7, 0), Start(8, 1))
    assert plan.waiting == (9,)


def test_a_cancelled_request_is_withdrawn_and_leaves_its_sequence_to_the_next() -> None:
    plan = admit([waiting(7, cancelled=True), waiting(8)], [seat(0)], [], split=False)
    assert plan.decisions == (Withdrawn(7), Start(8, 0))
    assert plan.waiting == ()


def test_a_request_waits_for_a_generation_evaluating_the_same_prompt() -> None:
    evaluating = active(0, todo=LONG)
    plan = admit([waiting(8, LONG)], [seat(0, busy=True), seat(1)], [evaluating], split=False)
    assert plan.decisions == () and plan.waiting == (8,)
    done = active(0, next=5, prompt=LONG)  # its prompt evaluated: nothing to wait for
    plan = admit([waiting(8, LONG)], [seat(0, busy=True), seat(1)], [done], split=False)
    assert plan.decisions == (Start(8, 1),)


def test_the_choices_of_one_request_start_one_and_wait_for_its_prompt() -> None:
    plan = admit([waiting(7, LONG), waiting(8, LONG)], [seat(0), seat(1)], [], split=False)
    assert plan.decisions == (Start(7, 0),) and plan.waiting == (8,)


def test_a_request_whose_own_cache_holds_the_prompt_does_not_wait() -> None:
    evaluating = active(0, todo=LONG)
    seats = [seat(0, busy=True), seat(1, LONG[:-1])]  # it holds all the other would give
    plan = admit([waiting(8, LONG)], seats, [evaluating], split=False)
    assert plan.decisions == (Start(8, 1),)


def test_a_short_shared_prefix_is_not_worth_waiting_for() -> None:
    prompt = (*range(SHARE_MIN - 1), 999)
    evaluating = active(0, todo=(*range(SHARE_MIN - 1), 555))
    plan = admit([waiting(8, prompt)], [seat(0, busy=True), seat(1)], [evaluating], split=False)
    assert plan.decisions == (Start(8, 1),)


def test_the_windows_turn_starts_while_every_client_sequence_is_busy() -> None:
    seats = [seat(0, reserved=True), seat(1, busy=True), seat(2, busy=True)]
    queue = [waiting(7), waiting(8, (4, 5), reserved=True)]
    plan = admit(queue, seats, [], split=True)
    assert plan.decisions == (Start(8, 0),) and plan.waiting == (7,)


def test_a_prompt_must_leave_room_in_the_context() -> None:
    assert context_refusal(99, 100) == ""
    assert context_refusal(100, 100) == "the prompt has 100 tokens; the context holds 100"


# --- before the batch -------------------------------------------------------------------


def test_the_prelude_ends_the_cancelled_and_evaluates_the_images_reached() -> None:
    runs = [
        active(2, todo=(IMAGE, IMAGE, 5)),
        active(0, todo=(IMAGE, 4), cancelled=True),
        active(1, todo=(4, IMAGE)),
        active(3, next=9, cancelled=True),
        active(4, todo=(IMAGE,)),
    ]
    before = prelude(runs)
    assert before.cancelled == (0, 3)
    assert before.images == (2, 4)  # in the order they were admitted, not by sequence


# --- the batch --------------------------------------------------------------------------


def test_decodes_and_chunks_go_in_the_order_of_their_sequences() -> None:
    runs = [
        active(2, todo=(7, 8, 9), held=4),
        active(0, next=5, held=10),
        active(1, next=6, held=3),
    ]
    step = batch(runs, {1: Draft(3, (11, 12))}, n_batch=16, chunk=16)
    assert step.parts == (
        Decode(0, 10, 5),
        Decode(1, 3, 6, Draft(3, (11, 12))),
        Chunk(2, 4, (7, 8, 9), ends=True),
    )
    assert [(r.seq, r.pos, r.token, r.logits) for r in step.rows] == [
        (0, 10, 5, True),
        (1, 3, 6, True),
        (1, 4, 11, True),
        (1, 5, 12, True),
        (2, 4, 7, False),
        (2, 5, 8, False),
        (2, 6, 9, True),
    ]
    assert step.sampled() == {0: [0], 1: [1, 2, 3], 2: [6]}
    assert step.prompting and step.stepping == (0, 1, 2)


def test_a_prompt_beside_decoding_answers_takes_a_shared_chunk() -> None:
    todo = tuple(range(500))
    step = batch([active(0, next=5), active(1, todo=todo)], {}, n_batch=512, chunk=512)
    chunk = step.parts[1]
    assert isinstance(chunk, Chunk)
    assert len(chunk.tokens) == SHARED_CHUNK and not chunk.ends
    assert step.sampled() == {0: [0]}  # a prompt not ended is not sampled
    alone = batch([active(1, todo=todo)], {}, n_batch=512, chunk=512)
    assert [len(p.tokens) for p in alone.parts if isinstance(p, Chunk)] == [500]


def test_chunks_fill_the_room_left_shared_fairly_the_shortest_first() -> None:
    runs = [
        active(0, todo=tuple(range(10))),
        active(1, todo=tuple(range(10))),
        active(2, todo=(1,)),
    ]
    step = batch(runs, {}, n_batch=14, chunk=8)
    assert [(p.seq, len(p.tokens)) for p in step.parts if isinstance(p, Chunk)] == [(0, 6), (1, 7), (2, 1)]
    assert step.stepping == (0, 1, 2)


def test_a_short_prompt_beside_a_long_one_is_read_whole_in_the_next_step() -> None:
    long, short = active(0, todo=tuple(range(3000))), active(1, todo=tuple(range(40)))
    step = batch([long, short], {}, n_batch=256, chunk=256)
    assert [(p.seq, len(p.tokens), p.ends) for p in step.parts if isinstance(p, Chunk)] == [
        (0, SHARED_CHUNK, False), (1, 40, True)]  # the short one answers after this short step
    crowd = batch([active(s, todo=tuple(range(1000))) for s in range(4)], {}, n_batch=256, chunk=256)
    assert [len(p.tokens) for p in crowd.parts] == [64, 64, 64, 64]  # none starves
    full = batch(
        [active(0, next=1, held=5), active(1, todo=(3, 4))],
        {0: Draft(0, (2, 3))},
        n_batch=3,
        chunk=8,
    )
    assert [p.seq for p in full.parts] == [0] and not full.prompting


def test_a_chunk_stops_before_an_image() -> None:
    step = batch(
        [active(0, todo=(1, 2, IMAGE, 3)), active(1, todo=(IMAGE, 4)), active(2, todo=(5,))],
        {},
        n_batch=64,
        chunk=64,
    )
    assert step.parts == (Chunk(0, 0, (1, 2), ends=False), Chunk(2, 0, (5,), ends=True))  # 1 waits


def test_a_step_with_nothing_to_do_is_empty() -> None:
    step = batch([active(0, held=3)], {}, n_batch=8, chunk=8)
    assert step.parts == () and step.rows == () and step.stepping == ()


@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, 40), st.integers(0, 3), st.integers(0, 50)),
        min_size=1,
        max_size=6,
    ),
    st.integers(1, 64),
    st.integers(1, 64),
)
def test_a_batch_never_overflows_and_keeps_each_sequence_in_place(
    shape: list[tuple[bool, int, int, int]], n_batch: int, chunk: int
) -> None:
    runs, drafts, width = [], {}, 0
    for seq, (decoding, todo, drafted, held) in reversed(list(enumerate(shape))):
        if decoding and width < n_batch:
            runs.append(active(seq, next=seq, held=held))
            room = min(drafted, n_batch - width - 1)
            drafts[seq] = Draft(0, tuple(range(room)))
            width += 1 + room
        elif not decoding:
            runs.append(active(seq, todo=tuple(range(1, todo + 1)), held=held))
    step = batch(runs, drafts, n_batch, chunk)
    assert len(step.rows) <= n_batch
    seqs = [row.seq for row in step.rows]
    assert seqs == sorted(seqs)
    for part in step.parts:
        positions = [row.pos for row in step.rows if row.seq == part.seq]
        assert positions == list(range(part.held, part.held + len(positions)))
        if isinstance(part, Chunk):
            assert 0 < len(part.tokens) <= chunk


# --- drafts -----------------------------------------------------------------------------


def test_drafts_stay_within_the_room_and_the_context() -> None:
    assert draft_limit(room=100, n_ctx=1000, held=10) == DRAFT_MAX
    assert draft_limit(room=3, n_ctx=1000, held=10) == 3
    assert draft_limit(room=100, n_ctx=20, held=15) == 3  # the next token and one more kept free


def test_drafting_always_checks_all_it_may_and_otherwise_only_what_pays() -> None:
    dear = StepCosts()
    dear.record(1, 10.0)
    dear.record(2, 19.0)  # a token more costs nearly a step: drafting does not pay
    assert lookup_length(5, 0.9, 1, dear, always=False) == 0
    assert lookup_length(5, 0.9, 1, dear, always=True) == 5
    assert model_length(7, 0.9, 1, dear, draft_ms=1.0, steps=1, always=False) == 0
    assert model_length(7, 0.9, 1, dear, draft_ms=1.0, steps=1, always=True) == 7
    assert model_length(40, 0.9, 1, dear, draft_ms=1.0, steps=1, always=True) == DRAFT_MAX


def test_an_idle_draft_model_probes_a_little_every_so_often() -> None:
    dear = StepCosts()
    dear.record(1, 10.0)
    dear.record(2, 19.0)
    probes = [
        s
        for s in range(1, 3 * PROBE_EVERY + 1)
        if model_length(7, 0.9, 1, dear, draft_ms=1.0, steps=s, always=False)
    ]
    assert probes == [PROBE_EVERY, 2 * PROBE_EVERY, 3 * PROBE_EVERY]
    assert model_length(1, 0.9, 1, dear, draft_ms=1.0, steps=PROBE_EVERY, always=False) == 1
