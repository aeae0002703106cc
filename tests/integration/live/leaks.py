"""What each viewer may know at each step of a table, rebuilt from the database, and the
check that every message a viewer received stays within it.

Ground truth comes from the round log (every committed transaction of a running table
writes its entries with one ``created_at``, and bumps ``tables.step`` by one unless its only
events are private ones), the ``dealt`` events (hands and stock), and ``rng.reveals``
(seeds).

A card id in a message is attributed to a round (``game_view.round.number``, the ``round``
field of events and of ``last_result``) and must be, at the message's step, either one the
viewer held in that round (dealt to it or drawn by it from the stock) or one made public in
that round by then: the vira, every discard (which covers the claim window's card and a
card taken from the pile), and at a close the closer's melds, discard and claimed card;
after a reshuffle the card left on the pile (the reshuffled cards are hidden again
until drawn or discarded anew).  Anything else (another hand, the stock, a
card before it was shown) is a leak.  Seeds (hex and base64) may not appear before the
step (or, for messages without a step, the moment) of their reveal.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from app.games.views import CARD_FIELDS
from tests.integration.live.support import Received, fetch_log, table_view_of

CARD_FREE_EVENTS = frozenset(
    {
        "match_started",
        "first_dealer_drawn",
        "round_started",
        "decision_made",
        "dealer_decision_started",
        "decisions_revealed",
        "turn_started",
        "claimed",
        "round_ended",
        "eliminated",
        "match_ended",
    }
)
"""Events that carry no card (an unknown event with cards fails the rebuild)."""
PUBLIC_CARD_EVENTS = frozenset(
    {"drew_discard", "discarded", "claim_window_opened", "claim_window_ended", "claim_resolved"}
)
"""Events whose ``card`` is on the discard pile, for everyone to see."""
PRIVATE_EVENTS = frozenset({"decision_made", "claimed"})
"""Events only their own ``seat`` may receive."""


@dataclass
class Knowledge:
    """Cards each viewer may know, per round, after each step."""

    pre_start_steps: int
    final_step: int
    seats: list[int]
    # step -> round -> viewer (seat or None for spectators) -> cards
    public: dict[int, dict[int, frozenset[int]]] = field(default_factory=dict)
    own: dict[int, dict[int, dict[int, frozenset[int]]]] = field(default_factory=dict)
    reveal_step: dict[int, int] = field(default_factory=dict)
    """Round number -> step whose transaction revealed its seed."""
    event_seqs: dict[int, frozenset[int]] = field(default_factory=dict)
    """Step -> the engine event seqs its transaction emitted."""
    hands: dict[int, dict[int, list[int]]] = field(default_factory=dict)
    stock: dict[int, list[int]] = field(default_factory=dict)

    def allowed(self, step: int, round_number: int, viewer: int | None) -> frozenset[int]:
        if step <= self.pre_start_steps:
            return frozenset()
        public = self.public[step].get(round_number, frozenset())
        if viewer is None:
            return public
        return public | self.own[step].get(round_number, {}).get(viewer, frozenset())


def _only_private(group: Sequence[dict[str, Any]]) -> bool:
    events = [entry["body"]["type"] for entry in group if entry["kind"] == "event"]
    return bool(events) and PRIVATE_EVENTS.issuperset(events)


async def rebuild(db: asyncpg.Connection, table_id: str) -> Knowledge:
    """Replay the table's log into per-step knowledge (checking the step numbering)."""
    log = await fetch_log(db, table_id)
    final_step = int(
        await db.fetchval("SELECT step FROM game.tables WHERE id = $1::uuid", table_id)
    )
    seat_count = int(
        await db.fetchval(
            "SELECT count(*) FROM game.seats WHERE table_id = $1::uuid AND left_at IS NULL",
            table_id,
        )
    )
    groups: list[list[dict[str, Any]]] = []
    for entry in sorted(log, key=lambda e: (e["created_at"], e["round"], e["seq"])):
        if groups and groups[-1][0]["created_at"] == entry["created_at"]:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    # A transaction whose only events are private (a secret decision, a claim) keeps the
    # step: its author's view gains them, nobody else's changes (``TableDriver.save``).
    private = [_only_private(group) for group in groups]
    pre = final_step - private.count(False)
    # Seats before the last one are saved without a round (nothing logged yet).
    assert pre == seat_count - 1, (pre, seat_count, final_step, len(groups))
    knowledge = Knowledge(pre, final_step, list(range(seat_count)))
    public: dict[int, set[int]] = defaultdict(set)
    own: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    step = pre
    for group, quiet in zip(groups, private, strict=True):
        seqs: set[int] = set()
        if quiet:
            seqs.update(knowledge.event_seqs.get(step, ()))
        else:
            step += 1
        for entry in group:
            if entry["kind"] != "event":
                continue
            event = entry["body"]
            seqs.add(event["seq"])
            kind, number = event["type"], event.get("round")
            if kind == "dealt":
                knowledge.hands[number] = dict(zip(event["seats"], event["hands"], strict=True))
                knowledge.stock[number] = list(event["stock"])
                for seat, hand in zip(event["seats"], event["hands"], strict=True):
                    own[number][seat].update(hand)
                public[number].add(event["vira"])
            elif kind == "drew_stock":
                own[number][event["seat"]].add(event["card"])
            elif kind in PUBLIC_CARD_EVENTS:
                public[number].add(event["card"])
            elif kind == "closed":
                public[number].update(card for meld in event["melds"] for card in meld)
                public[number].update(
                    card for card in (event["discard"], event["claimed_card"]) if card is not None
                )
            elif kind == "reshuffled":
                # the pile went back into the stock: its cards are hidden again (their new
                # order is secret) until someone draws or discards them anew
                hidden = set(event["stock"])
                public[number] -= hidden
                for cards in own[number].values():
                    cards.difference_update(hidden)
                public[number].add(event["kept"])
            elif kind == "round_ended":
                knowledge.reveal_step[number] = step
            else:
                assert kind in CARD_FREE_EVENTS, f"unknown event {kind}: update the leak test"
                assert not CARD_FIELDS & set(event), event
        knowledge.event_seqs[step] = frozenset(seqs)
        knowledge.public[step] = {number: frozenset(cards) for number, cards in public.items()}
        knowledge.own[step] = {
            number: {seat: frozenset(cards) for seat, cards in by_seat.items()}
            for number, by_seat in own.items()
        }
    return knowledge


def card_mentions(
    value: Any, context: int | None = None, path: tuple[str, ...] = ()
) -> Iterator[tuple[int | None, tuple[str, ...], int]]:
    """Every card id under a card-bearing key: (round it belongs to, path, card)."""
    if isinstance(value, dict):
        if isinstance(value.get("round"), int) and not isinstance(value.get("round"), bool):
            context = value["round"]
        if path[-2:] == ("game_view", "round") and isinstance(value.get("number"), int):
            context = value["number"]
        for key, item in value.items():
            if key in CARD_FIELDS:
                for card in _ints(item):
                    yield context, (*path, key), card
            else:
                yield from card_mentions(item, context, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from card_mentions(item, context, (*path, str(index)))


def _ints(value: Any) -> Iterator[int]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _ints(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _ints(item)
    else:
        raise AssertionError(f"unexpected card value {value!r}")


@dataclass(frozen=True)
class Secret:
    """One round's seed in every spelling a log line or message might use."""

    round_number: int
    spellings: tuple[str, ...]
    revealed_at: dt.datetime

    @classmethod
    def of(cls, round_number: int, seed: bytes, revealed_at: dt.datetime) -> Secret:
        std = base64.b64encode(seed).decode()
        url = base64.urlsafe_b64encode(seed).decode()
        spellings = {seed.hex(), seed.hex().upper(), std, std.rstrip("="), url, url.rstrip("=")}
        return cls(round_number, tuple(sorted(spellings)), revealed_at)

    def found_in(self, text: str) -> bool:
        return any(spelling in text for spelling in self.spellings)


async def secrets_of(db: asyncpg.Connection, table_id: str) -> list[Secret]:
    rows = await db.fetch(
        "SELECT r.number, v.seed, v.revealed_at FROM rng.reveals v "
        "JOIN game.rounds r ON r.rng_round_id = v.round_id WHERE r.table_id = $1::uuid",
        table_id,
    )
    return [Secret.of(row["number"], bytes(row["seed"]), row["revealed_at"]) for row in rows]


def check_messages(
    messages: Sequence[Received],
    table_id: str,
    viewer: int | None,
    knowledge: Knowledge,
    secrets: Sequence[Secret],
) -> int:
    """Assert that nothing in ``messages`` exceeds what ``viewer`` may know; returns how
    many card mentions were checked."""
    checked = 0
    for message in messages:
        body = message.json()
        view = table_view_of(message, table_id)
        step = int(view["step"]) if view is not None else None
        for secret in secrets:
            if not secret.found_in(message.text):
                continue
            if step is not None:
                assert step >= knowledge.reveal_step[secret.round_number], (
                    f"seed of round {secret.round_number} sent at step {step} before its "
                    f"reveal: {message.url}"
                )
            else:
                assert message.at >= secret.revealed_at.timestamp(), (
                    f"seed of round {secret.round_number} received before its reveal: {message.url}"
                )
        if view is None:
            stray = list(card_mentions(body))
            assert not stray, (message.url, stray[:5])
            continue
        assert step is not None
        assert step <= knowledge.final_step
        if step in knowledge.event_seqs:
            seqs = {event["seq"] for event in view["events"]}
            assert seqs <= knowledge.event_seqs[step], (step, seqs)
        for event in view["events"]:
            if event["type"] in PRIVATE_EVENTS:
                assert event["seat"] == viewer, (viewer, event)
            if event["type"] == "dealer_decision_started" and viewer != event["dealer"]:
                assert "mandar_count" not in event, (viewer, event)
        for context, path, card in card_mentions(view):
            assert "stock" not in path and "hands" not in path, (viewer, path)
            assert context is not None, (message.url, path, card)
            allowed = knowledge.allowed(step, context, viewer)
            assert card in allowed, (
                f"viewer {viewer} received card {card} at {'/'.join(path)} (round {context}, "
                f"step {step}) that it may not know: {message.channel} {message.url}"
            )
            checked += 1
    return checked


TIMESTAMP = re.compile(r'"timestamp": "([^"]+)"')


def check_log(path: Path, secrets: Sequence[Secret], tokens: Iterable[str]) -> int:
    """No seed in the server log before its reveal, and no bearer token at all; returns
    the number of lines read."""
    tokens = list(tokens)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for line in lines:
        for token in tokens:
            assert token not in line, f"a bearer token is in the server log: {line[:200]}"
        for secret in secrets:
            if not secret.found_in(line):
                continue
            match = TIMESTAMP.search(line)
            assert match is not None, f"seed in an untimed log line: {line[:200]}"
            logged_at = dt.datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
            assert logged_at >= secret.revealed_at, f"seed logged before its reveal: {line[:200]}"
    return len(lines)


def summary(messages: Sequence[Received]) -> str:
    by_channel: dict[str, int] = defaultdict(int)
    for message in messages:
        by_channel[message.channel] += 1
    return json.dumps(by_channel, sort_keys=True)
