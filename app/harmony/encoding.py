"""The o200k_harmony encoding, built offline from the vocabulary bundled in `resources/`.

Guarantees: the vocabulary file's sha256 is checked before use (a missing or altered file
is a `VocabularyError` naming the file and the expected hash); the special-token ids are
those of the Harmony guide; ordinary text is always encoded without special-token parsing,
so text that spells `<|start|>` stays text. Loaded once per process, at first use: importing
this module loads neither tiktoken nor the vocabulary.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from app.errors import ResourceError, VocabularyError
from app.resources import resource_path

VOCAB_FILE: Final = "o200k_base.tiktoken"
VOCAB_SHA256: Final = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
N_VOCAB: Final = 201088

START_OF_TEXT: Final = 199998
END_OF_TEXT: Final = 199999
RETURN: Final = 200002
CONSTRAIN: Final = 200003
CHANNEL: Final = 200005
START: Final = 200006
END: Final = 200007
MESSAGE: Final = 200008
CALL: Final = 200012
END_OF_PROMPT: Final = 200018

_NAMED_SPECIALS: Final = {
    "<|startoftext|>": START_OF_TEXT,
    "<|endoftext|>": END_OF_TEXT,
    "<|return|>": RETURN,
    "<|constrain|>": CONSTRAIN,
    "<|channel|>": CHANNEL,
    "<|start|>": START,
    "<|end|>": END,
    "<|message|>": MESSAGE,
    "<|call|>": CALL,
    "<|endofprompt|>": END_OF_PROMPT,
}

# o200k_base's pre-tokenizer pattern, which o200k_harmony shares.
_PATTERN: Final = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def special_tokens() -> dict[str, int]:
    """Every special token of o200k_harmony by its text (ids 199998..201087).

    Id 200018 is named `<|endofprompt|>` as in o200k_base; it has no second
    `<|reserved_200018|>` name, so that decoding is deterministic.
    """
    tokens = dict(_NAMED_SPECIALS)
    taken = set(tokens.values())
    for rank in range(200000, N_VOCAB):
        if rank not in taken:
            tokens[f"<|reserved_{rank}|>"] = rank
    return tokens


def read_ranks(path: Path, expected_sha256: str = VOCAB_SHA256) -> dict[bytes, int]:
    """Parse a `.tiktoken` vocabulary after checking its sha256."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise VocabularyError(path, expected_sha256, f"cannot be read ({exc.strerror})") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise VocabularyError(path, expected_sha256, f"has sha256 {actual}")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


class HarmonyEncoding:
    """o200k_harmony: ordinary-text encoding plus the Harmony special tokens by id."""

    def __init__(self, ranks: dict[bytes, int]) -> None:
        import tiktoken  # loads with the vocabulary, not with the window

        self.specials = special_tokens()
        self.special_text = {rank: text for text, rank in self.specials.items()}
        self._tik = tiktoken.Encoding(
            name="o200k_harmony",
            pat_str=_PATTERN,
            mergeable_ranks=ranks,
            special_tokens=self.specials,
        )
        # The bytes of every id (special ids as their text), indexed by id.
        self.token_table: list[bytes] = [b""] * N_VOCAB
        for token, rank in ranks.items():
            self.token_table[rank] = token
        for rank, text in self.special_text.items():
            self.token_table[rank] = text.encode()
        self.n_vocab = N_VOCAB

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of `text`, never producing a special token."""
        return self._tik.encode_ordinary(text)

    def encode_with_specials(self, text: str) -> list[int]:
        """Token ids of `text` where special-token spellings become special tokens.

        Only for text that is the model's own output passed through by a server
        (`text_stream.HarmonyText`), and for tests: never on user or tool text.
        """
        return self._tik.encode(text, allowed_special="all")

    def is_special(self, token: int) -> bool:
        """True for the control and reserved ids (199998 and up)."""
        return token >= START_OF_TEXT

    def token_bytes(self, token: int) -> bytes:
        """The bytes of one token; a special token gives its text; an unknown id gives b""."""
        if 0 <= token < N_VOCAB:
            return self.token_table[token]
        return b""

    def decode_bytes(self, tokens: Iterable[int]) -> bytes:
        """Concatenated bytes of `tokens` (special tokens as their text; an id outside the
        vocabulary as U+FFFD, as the parser reads it)."""
        table = self.token_table
        return b"".join(table[t] if 0 <= t < N_VOCAB else _REPLACEMENT for t in tokens)

    def decode(self, tokens: Sequence[int]) -> str:
        """Text of `tokens`, invalid UTF-8 and unknown ids replaced by U+FFFD."""
        return self.decode_bytes(tokens).decode("utf-8", errors="replace")


_REPLACEMENT = "\ufffd".encode()


def default_vocab_path() -> Path:
    """Path of the bundled vocabulary file (a `VocabularyError` if it is missing)."""
    try:
        return resource_path(VOCAB_FILE)
    except ResourceError as exc:
        from app.resources import resources_dir

        missing = resources_dir() / VOCAB_FILE
        raise VocabularyError(missing, VOCAB_SHA256, "is missing") from exc


@functools.cache
def load_encoding() -> HarmonyEncoding:
    """The process-wide o200k_harmony encoding from the bundled, hash-checked vocabulary."""
    return HarmonyEncoding(read_ranks(default_vocab_path()))
