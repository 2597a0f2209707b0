"""The sidebar's groups by date: Pinned, Today, Yesterday, Previous 7 days, Previous 30 days,
then one group per month of the current year ("October 2026") and one per earlier year.

Guarantees: `grouped` keeps every conversation exactly once; the pinned ones come first, in
the order given, under "Pinned"; the others go by their last activity (`updated`) in local
calendar days counted back from `now` (a time after `now`, a clock that moved back, counts as
today); groups come newest first and, inside a group, conversations newest first (ties in the
order given); no group is empty. Names are English whatever the locale, like the rest of the
window. Pure: no Qt, no clock of its own.
"""

from __future__ import annotations

from datetime import datetime

from app.domain.history import ChatDoc

PINNED = "Pinned"
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def group_of(updated: float, now: datetime) -> tuple[tuple[int, int], str]:
    """(order, name) of the group of a conversation last active at `updated` (seconds since
    the epoch); a lower order is a newer group."""
    when = datetime.fromtimestamp(updated, now.tzinfo)
    days = (now.date() - when.date()).days
    if days <= 0:
        return (0, 0), "Today"
    if days == 1:
        return (1, 0), "Yesterday"
    if days <= 7:
        return (2, 0), "Previous 7 days"
    if days <= 30:
        return (3, 0), "Previous 30 days"
    if when.year == now.year:
        return (4, -when.month), f"{MONTHS[when.month - 1]} {when.year}"
    return (5, -when.year), str(when.year)


def grouped(docs: list[ChatDoc], now: datetime) -> list[tuple[str, list[ChatDoc]]]:
    """The conversations under their groups' names (see the module guarantees)."""
    pinned = [d for d in docs if d.pinned]
    groups: dict[tuple[int, int], tuple[str, list[ChatDoc]]] = {}
    for doc in docs:
        if not doc.pinned:
            order, name = group_of(doc.updated, now)
            groups.setdefault(order, (name, []))[1].append(doc)
    out = [(PINNED, pinned)] if pinned else []
    for order in sorted(groups):
        name, members = groups[order]
        out.append((name, sorted(members, key=lambda d: -d.updated)))
    return out


__all__ = ["MONTHS", "PINNED", "group_of", "grouped"]
