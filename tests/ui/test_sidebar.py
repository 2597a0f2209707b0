"""The sidebar: conversations grouped by date, titles cut with "…", titles from the user's
words, and the search's excerpts — from a real SQLite store and from the in-memory list."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

from app.domain.attachments import HEAD, compose
from app.domain.history import ChatDoc, ConversationList, Reply, Segment, Turn, Version
from app.domain.listing import excerpt, title_of
from app.store.history import HistoryStore
from app.ui.sidebar.delegate import FOUND_ROLE, HEADER_ROLE, TITLE_ROLE, cut, title_width
from app.ui.sidebar.groups import group_of, grouped
from tests.ui.test_window import make_window, send

NOW = datetime(2026, 10, 15, 12, 0)
AGES = {"today": 0, "yesterday": 1, "three days": 3, "twenty days": 20, "two months": 61, "two years": 731}
EXPECTED = [
    ("Pinned", ["pinned"]),
    ("Today", ["today"]),
    ("Yesterday", ["yesterday"]),
    ("Previous 7 days", ["three days"]),
    ("Previous 30 days", ["twenty days"]),
    ("August 2026", ["two months"]),
    ("2024", ["two years"]),
]
ATTACHED = f"{HEAD}\n\nDocument: report.md (whole file)\nQuarterly figures: zinc sales rose."


def dated() -> list[ChatDoc]:
    """One conversation per age (oldest given first), and a pinned one from long ago."""
    docs = [ChatDoc(title=name, updated=(NOW - timedelta(days=days)).timestamp()) for name, days in AGES.items()]
    pinned = ChatDoc(title="pinned", pinned=True, updated=(NOW - timedelta(days=400)).timestamp())
    return [*reversed(docs), pinned]


def answered(user: str, answer: str, analysis: str = "") -> Version:
    reply = Reply(segments=[Segment("answer", answer, complete=True)], state="done")
    reply.debug.analysis = analysis
    return Version(user, replies=[reply])


def searchable() -> list[ChatDoc]:
    """A chat whose analysis alone says 'walrus', one with the word in an answer, one with it in
    its title only, one with it in an attached document only."""
    hidden = ChatDoc(title="Hidden thoughts")
    hidden.turns.append(Turn([answered("Tell me a story", "Once upon a time.", analysis="a walrus thinks")]))
    answer = ChatDoc(title="Arctic animals")
    answer.turns.append(Turn([answered("Which animal has tusks?", "The Walrus has long tusks and whiskers.")]))
    titled = ChatDoc(title="Walrus facts")
    attached = ChatDoc(title="Report")
    context = f"{HEAD}\n\nDocument: zoo.md (whole file)\nThe zoo keeps a walrus named Wally."
    attached.turns.append(Turn([answered(compose(context, "Summarise this"), "A summary.")]))
    return [hidden, answer, titled, attached]


def texts(found: Any) -> tuple[str, list[str]]:
    """An excerpt as its whole text and its emphasised parts."""
    return "".join(t for t, _ in found), [t for t, bold in found if bold]


def test_conversations_are_grouped_by_their_last_activity() -> None:
    groups = grouped(dated(), NOW)
    assert [(name, [d.title for d in docs]) for name, docs in groups] == EXPECTED
    assert group_of((NOW + timedelta(hours=3)).timestamp(), NOW)[1] == "Today"  # a clock that moved back
    assert group_of(datetime(2026, 1, 2).timestamp(), NOW)[1] == "January 2026"
    assert group_of(datetime(2025, 12, 30).timestamp(), NOW)[1] == "2025"


def test_the_list_shows_headers_that_cannot_be_selected_and_the_arrows_skip(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    conversations = ConversationList()
    for doc in reversed(dated()):
        conversations.save(doc)
    window, _ = make_window(qtbot, tmp_path, [], store=conversations)
    sidebar, view = window.sidebar, window.sidebar.list
    sidebar.clock = lambda: NOW
    sidebar.refresh()
    rows = [(view.item(i).text(), view.item(i).data(Qt.ItemDataRole.UserRole)) for i in range(view.count())]
    shown: list[tuple[str, list[str]]] = []
    for text, doc_id in rows:
        if doc_id is None:
            shown.append((text, []))
        else:
            shown[-1][1].append(text.removeprefix("📌 "))
    assert shown == EXPECTED
    headers = [view.item(i) for i in range(view.count()) if view.item(i).data(HEADER_ROLE)]
    assert len(headers) == 7 and all(not h.flags() & Qt.ItemFlag.ItemIsSelectable for h in headers)
    assert all(view.item(i).data(Qt.ItemDataRole.UserRole) is None for i in range(view.count()) if view.item(i).data(HEADER_ROLE))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualItemRect(headers[1]).center())
    assert view.currentItem() is not headers[1] and not headers[1].isSelected()
    view.setCurrentRow(0)  # on the "Pinned" header: the pinned conversation below is chosen
    qtbot.waitUntil(lambda: window.controller.doc.title == "pinned")
    view.setFocus()
    visited = [view.currentItem().text()]
    for _ in range(len(AGES)):
        qtbot.keyClick(view, Qt.Key.Key_Down)
        visited.append(view.currentItem().text())
    assert visited == ["📌 pinned", *AGES]  # every header passed over
    qtbot.waitUntil(lambda: window.controller.doc.title == "two years")
    for _ in range(len(AGES) + 1):  # up past the first conversation: it stays there
        qtbot.keyClick(view, Qt.Key.Key_Up)
        assert view.currentItem().data(Qt.ItemDataRole.UserRole) is not None
    assert view.currentItem().text() == "📌 pinned"
    for key, landed in ((Qt.Key.Key_End, "two years"), (Qt.Key.Key_Home, "📌 pinned"),
                        (Qt.Key.Key_PageDown, "two years"), (Qt.Key.Key_PageUp, "📌 pinned")):
        qtbot.keyClick(view, key)
        assert view.currentItem().text() == landed, key  # never a header


def test_a_long_title_is_cut_with_an_ellipsis_and_said_whole(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    long = "A very long conversation title about the migration of arctic terns and their feeding grounds"
    conversations = ConversationList()
    conversations.save(ChatDoc(title=long))
    window, _ = make_window(qtbot, tmp_path, [], store=conversations)
    window.sidebar.resize(220, 400)
    view = window.sidebar.list
    row = next(view.item(i) for i in range(view.count()) if view.item(i).data(Qt.ItemDataRole.UserRole))
    assert row.text() == long and row.toolTip() == long
    assert row.data(Qt.ItemDataRole.AccessibleTextRole).startswith(long)
    assert view.horizontalScrollBar().maximum() == 0  # never a sideways scroll
    assert view.visualItemRect(row).width() <= view.viewport().width()
    room = title_width(view.visualItemRect(row))
    shown = cut(row.text(), view.font(), room)  # what the row draws
    assert shown.endswith("…") and long.startswith(shown[:-1]) and QFontMetrics(view.font()).horizontalAdvance(shown) <= room
    image = view.viewport().grab().toImage()  # nothing drawn over the row's right margin
    right = view.viewport().width() - 4
    top, bottom = view.visualItemRect(row).top(), view.visualItemRect(row).bottom()
    background = image.pixelColor(right, top + 7)  # below the row's rounded corner
    assert all(image.pixelColor(right, y) == background for y in range(top + 7, bottom - 6))


def test_the_title_comes_from_the_users_words_not_the_attachments(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    assert title_of(compose(ATTACHED, "\n  How did zinc do this quarter?\nDetails please")) == "How did zinc do this quarter?"
    assert title_of(compose(ATTACHED, "")) == "report.md"
    cut = title_of("Please explain the difference between oxidised and unoxidised teas in detail today")
    assert cut == "Please explain the difference between oxidised and…" and len(cut) <= 60
    window, _ = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>It rose.<|return|>"])
    window.controller.send(compose(ATTACHED, "How did zinc do this quarter?"))
    qtbot.waitUntil(lambda: not window.controller.busy)
    window.controller.settle()
    assert window.controller.doc.title == "How did zinc do this quarter?"
    rows = [window.sidebar.list.item(i).text() for i in range(window.sidebar.list.count())]
    assert "How did zinc do this quarter?" in rows and not any(HEAD in r for r in rows)


def check_found(listed: list[ChatDoc]) -> None:
    by_title = {d.title: d for d in listed}
    assert set(by_title) == {"Arctic animals", "Walrus facts", "Report"}  # never the analysis
    whole, bold = texts(by_title["Arctic animals"].found)
    assert "Walrus has long tusks" in whole and [b.lower() for b in bold] == ["walrus"]
    assert texts(by_title["Walrus facts"].found)[1] == ["Walrus"]
    whole, bold = texts(by_title["Report"].found)
    assert whole.startswith("📎 zoo.md: ") and "named Wally" in whole and bold == ["walrus"]


def test_the_search_gives_the_text_around_the_match_from_the_store(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    for doc in searchable():
        store.save(doc)
    check_found(store.listed("walrus"))
    assert all(d.found == () for d in store.listed())
    assert store.listed("a walrus thinks") == []  # analysis is not searched
    store.save(ChatDoc(title="Un café noir"))
    (coffee,) = store.listed("cafe")
    assert texts(coffee.found)[1] == ["café"]  # accents match as the full-text index does


def test_the_search_gives_the_text_around_the_match_in_memory() -> None:
    conversations = ConversationList()
    for doc in searchable():
        conversations.save(doc)
    check_found(conversations.listed("walrus"))
    assert all(d.found == () for d in conversations.listed())


def test_an_excerpt_is_one_line_starting_near_the_match() -> None:
    text = "First line.\n" + "filler " * 20 + "the unoxidised and oxidised leaves\nlast"
    found = excerpt(text, ["oxidised"])
    assert found is not None
    whole, bold = texts(found)
    assert "\n" not in whole and whole.startswith("…") and bold == ["oxidised", "oxidised"]
    assert whole.index("oxidised") < 40  # the start is kept short: the sidebar cuts the end
    assert excerpt("nothing here", ["walrus"]) is None


def test_the_sidebar_shows_each_found_chat_with_its_excerpt(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    for doc in searchable():
        store.save(doc)
    window, _ = make_window(qtbot, tmp_path, [], store=store)
    view = window.sidebar.list
    window.sidebar.search.setText("walrus")
    window.controller.settle()
    found = {view.item(i).text(): view.item(i).data(FOUND_ROLE) for i in range(view.count())
             if view.item(i).data(Qt.ItemDataRole.UserRole)}
    assert set(found) == {"Arctic animals", "Walrus facts", "Report"}
    whole, bold = texts(found["Arctic animals"])
    assert "long tusks" in whole and bold == ["Walrus"]
    titled = next(view.item(i) for i in range(view.count()) if view.item(i).text() == "Walrus facts")
    assert texts(titled.data(TITLE_ROLE))[1] == ["Walrus"] and not found["Walrus facts"]  # bold in the title, no 2nd line
    row = next(view.item(i) for i in range(view.count()) if view.item(i).text() == "Arctic animals")
    assert "long tusks" in row.data(Qt.ItemDataRole.AccessibleTextRole)
    window.sidebar.search.setText("no such word anywhere")
    window.controller.settle()
    assert [view.item(i).data(Qt.ItemDataRole.UserRole) for i in range(view.count())] == [None]
    assert view.item(0).text().startswith("No chats match")
    window.sidebar.search.setText("")
    window.controller.settle()
    assert all(not view.item(i).data(FOUND_ROLE) for i in range(view.count()))


def test_a_chat_just_sent_is_listed_under_today(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>Hi.<|return|>"])
    send(qtbot, window, "Hello there")
    window.controller.settle()
    view = window.sidebar.list
    assert [view.item(i).text() for i in range(view.count())] == ["Today", "Hello there"]
