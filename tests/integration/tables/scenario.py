"""Rule-path scenarios over HTTP: fixed decks written as hands, tables of funded players,
views, actions, and the engine's full view as the ground truth.

``deal_permutation`` turns hands written in card notation into the ``deal`` permutation of
the RNG's fixed streams (docs/rules-engine.md: index 0 is the first card dealt; cards go one
at a time to the seats in deal order, starting after the dealer; then the vira; then the
stock, top first).  ``Game`` is a started table with its players in match-seat order.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from litestar.testing.transport import TestClientTransport as PortalTransport
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings
from app.db import Database
from app.games import cacheta
from app.games.cards import CARDS_PER_DECK, parse_card
from app.games.views import CARD_FIELDS, full_view
from app.rng_api import RngServices
from app.tables.models import Table
from app.tables.runtime import TableRuntime
from app.tables.suspended import SuspendedSeats
from app.tables.timers import PresenceSweeper, table_deadline_handlers
from app.timers import DeadlineRunner
from tests.conftest import make_settings
from tests.helpers import auth
from tests.integration.tables.helpers import balance, create_table, operator, player, view

__all__ = (
    "Clock",
    "Game",
    "all_gone_quiet",
    "card_ids_in",
    "cards",
    "clock",
    "concurrently",
    "deal_permutation",
    "expire_timer",
    "fix_streams",
    "gone_quiet",
    "heartbeat",
    "make_due",
    "start_game",
    "until_handled",
)

POLL_S = 0.05
"""How often tests look at a table while waiting for the scheduler."""


def cards(*notations: str) -> list[int]:
    """Card ids of distinct cards (a repeated face takes the next deck's copy)."""
    seen: dict[int, int] = {}
    ids = []
    for notation in notations:
        face = parse_card(notation)
        copy = seen.get(face, 0)
        seen[face] = copy + 1
        ids.append(face + copy * CARDS_PER_DECK)
    return ids


def deal_permutation(
    *,
    seats: int,
    dealer: int,
    hands: Mapping[int, Sequence[str]],
    vira: str,
    stock: Sequence[str] = (),
    decks: int = 2,
    hand_size: int = 9,
) -> list[int]:
    """The ``deal`` permutation giving each match seat ``hands[seat]`` (in the order
    received), the ``vira``, and a stock starting with ``stock`` (top first); every other
    card follows in canonical order.  A face written twice is the second deck's copy."""
    order = [(dealer + 1 + step) % seats for step in range(seats)]
    if sorted(hands) != list(range(seats)):
        raise ValueError("give a hand for every seat")
    notations: list[str] = []
    for position in range(hand_size):
        for seat in order:
            if len(hands[seat]) != hand_size:
                raise ValueError(f"seat {seat} needs {hand_size} cards")
            notations.append(hands[seat][position])
    notations.append(vira)
    notations.extend(stock)
    chosen = cards(*notations)
    if max(chosen) >= CARDS_PER_DECK * decks:
        raise ValueError(f"a face appears more than {decks} times")
    used = set(chosen)
    return chosen + [card for card in range(CARDS_PER_DECK * decks) if card not in used]


def card_ids_in(value: Any) -> set[int]:
    """Every card id under a card-valued key (``CARD_FIELDS``) anywhere in ``value``."""
    found: set[int] = set()

    def collect(item: Any) -> None:
        if isinstance(item, bool):
            return
        if isinstance(item, int):
            found.add(item)
        elif isinstance(item, list | tuple):
            for element in item:
                collect(element)

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for key, element in item.items():
                if key in CARD_FIELDS:
                    collect(element)
                else:
                    walk(element)
        elif isinstance(item, list | tuple):
            for element in item:
                walk(element)

    walk(value)
    return found


class _Shared(httpx.BaseTransport):
    """The test client's transport, shared by threads (each request runs in its portal)."""

    def __init__(self, inner: PortalTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._inner.handle_request(request)


async def concurrently(client: Any, requests: Sequence[tuple[Any, ...]]) -> list:
    """POST every ``(path, body, token)`` (or ``(path, body, token, headers)``) at once, each
    from its own thread, all released together, so the app (in the test client's portal
    loop) serves them concurrently."""
    barrier = threading.Barrier(len(requests), timeout=30)
    transport = _Shared(PortalTransport(client=client, raise_server_exceptions=True))
    with (
        httpx.Client(transport=transport, base_url=str(client.base_url)) as sync,
        ThreadPoolExecutor(max_workers=len(requests)) as pool,
    ):

        def send(
            path: str, body: dict[str, Any], token: str, headers: dict[str, str] | None = None
        ) -> httpx.Response:
            barrier.wait()
            return sync.post(path, json=body, headers={**auth(token), **(headers or {})})

        loop = asyncio.get_running_loop()
        return list(
            await asyncio.gather(
                *(loop.run_in_executor(pool, send, *request) for request in requests)
            )
        )


@asynccontextmanager
async def suspended_seats_job(settings: Settings) -> AsyncIterator[SuspendedSeats]:
    """The job releasing suspended players' seats, on its own pool from this event loop."""
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    try:
        runtime = TableRuntime(settings, RngServices.from_settings(settings), lambda _: None)
        yield SuspendedSeats(database, runtime)
    finally:
        await database.dispose()


@asynccontextmanager
async def db_session(settings: Settings) -> AsyncIterator[AsyncSession]:
    """A session on the test's database from this event loop (the app under test runs its
    own pool in another loop)."""
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    try:
        async with database.session() as session:
            yield session
    finally:
        await database.dispose()


async def fix_streams(
    settings: Settings,
    table_id: str,
    round_number: int = 1,
    *,
    dealer: int | None = None,
    permutation: list[int] | None = None,
) -> None:
    """Script a round's ``first_dealer`` draw and/or ``deal`` permutation (test-only RNG)."""
    async with db_session(settings) as session:
        rng = RngServices.from_settings(settings).for_session(session)
        if dealer is not None:
            await rng.fix_stream(uuid.UUID(table_id), round_number, "first_dealer", draw=dealer)
        if permutation is not None:
            await rng.fix_stream(uuid.UUID(table_id), round_number, "deal", permutation=permutation)
        await session.commit()


async def sql(settings: Settings, statement: str, **params: Any) -> Any:
    """Run one SQL statement on the test's database (committed); returns the result rows."""
    async with db_session(settings) as session:
        result = await session.execute(text(statement), params)
        rows = result.all() if result.returns_rows else None
        await session.commit()
        return rows


@dataclass
class Game:
    """A table and its players (``players[s]`` sits at match seat ``s``)."""

    client: Any
    settings: Settings
    id: str
    players: list[tuple[str, str]]
    """(user id, token) by match seat."""
    operator: str
    spectator: str
    """A logged-in player who does not sit at the table."""
    counter: dict[str, int] = field(default_factory=dict)

    def token(self, seat: int) -> str:
        return self.players[seat][1]

    def user(self, seat: int) -> str:
        return self.players[seat][0]

    async def view(self, seat: int | None) -> dict[str, Any]:
        """The table as seen by ``seat`` (``None``: the spectator)."""
        token = self.spectator if seat is None else self.token(seat)
        return await view(self.client, token, self.id)

    async def game(self, seat: int | None) -> dict[str, Any]:
        """The engine view part of ``view`` (``game_view``)."""
        game = (await self.view(seat))["game_view"]
        assert game is not None
        return dict(game)

    async def post(self, seat: int, action: dict[str, Any], action_id: str | None = None) -> Any:
        """Send an action for ``seat`` (a fresh action id unless one is given)."""
        if action_id is None:
            key = str(seat)
            self.counter[key] = self.counter.get(key, 0) + 1
            action_id = f"s{seat}-{self.counter[key]}"
        return await self.client.post(
            f"/tables/{self.id}/actions",
            json={"action_id": action_id, "action": action},
            headers=auth(self.token(seat)),
        )

    async def act(self, seat: int, action_type: str, **fields: Any) -> dict[str, Any]:
        """An action that must be accepted; returns the caller's new view."""
        response = await self.post(seat, {"type": action_type, **fields})
        assert response.status_code == 200, response.text
        body = dict(response.json())
        assert body["replayed"] is False
        return body

    async def decide(self, seat: int, mandar: bool) -> dict[str, Any]:
        return await self.act(seat, "decide", mandar=mandar)

    async def wait(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        seat: int | None = 0,
        timeout_s: float = 10.0,
    ) -> dict[str, Any]:
        """Poll ``seat``'s view until ``predicate`` holds (the scheduler acts meanwhile)."""
        deadline = time.monotonic() + timeout_s
        while True:
            current = await self.view(seat)
            if predicate(current):
                return current
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not reached in {timeout_s} s: {current}")
            await asyncio.sleep(POLL_S)

    async def wait_phase(
        self, phase: str, turn: int | None = None, seat: int | None = 0, timeout_s: float = 10.0
    ) -> dict[str, Any]:
        """Wait until the round is in ``phase`` (with ``turn`` in turn, if given)."""

        def reached(current: dict[str, Any]) -> bool:
            round_ = (current["game_view"] or {}).get("round") or {}
            return round_.get("phase") == phase and (turn is None or round_.get("turn") == turn)

        return await self.wait(reached, seat, timeout_s)

    async def truth(self) -> dict[str, Any]:
        """The engine's full view of the match in the database (every hand, the stock)."""
        async with db_session(self.settings) as session:
            table = await session.get(Table, uuid.UUID(self.id))
            assert table is not None and table.match_state is not None
            return full_view(cacheta.restore(table.match_state))

    async def balances(self) -> list[int]:
        """Every player's wallet balance, by match seat."""
        return [await balance(self.client, token) for _, token in self.players]

    async def log(self, round_number: int = 1) -> list[dict[str, Any]]:
        """The round's log entries in order: each body with its entry kind as ``log``."""
        rows = await sql(
            self.settings,
            "SELECT l.kind, l.body FROM game.round_log l JOIN game.rounds r ON r.id = l.round_id"
            " WHERE r.table_id = :table AND r.number = :number ORDER BY l.seq",
            table=uuid.UUID(self.id),
            number=round_number,
        )
        return [{"log": kind, **body} for kind, body in rows]


@dataclass
class Clock:
    """A presence sweeper and a deadline runner: one worker's scheduler, run by the test (for
    an app started with ``run_scheduler=False``)."""

    sweeper: PresenceSweeper
    runner: DeadlineRunner


@asynccontextmanager
async def clock(settings: Settings) -> AsyncIterator[Clock]:
    """The test's own :class:`Clock` on the test's database."""
    assert settings.database_url is not None
    database = Database.connect(settings.database_url, settings)
    runtime = TableRuntime(settings, RngServices.from_settings(settings), lambda _: None)
    try:
        yield Clock(
            PresenceSweeper(database, runtime),
            DeadlineRunner(database, table_deadline_handlers(runtime)),
        )
    finally:
        await database.dispose()


SLOW_TIMERS = {"decision_timeout_ms": 60_000, "turn_timeout_ms": 60_000, "claim_window_ms": 60_000}
"""Player timers no test waits out (a minute each): the test's moves decide."""


def self_driven(database_url: str, grace_s: int) -> Settings:
    """Settings of an app without a scheduler: the test runs the deadlines and the presence
    sweeps itself (``clock``, ``PresenceSweeper``); players count present for ``grace_s``."""
    return make_settings(
        database_url, allow_timer_overrides=True, presence_grace_s=grace_s, run_scheduler=False
    )


async def three_players(client: Any, settings: Settings) -> Game:
    """A running three-player match of three lives, dealer seat 2, timers of a minute."""
    return await start_game(
        client, settings, players=3, dealer=2, options={"lives": 3, **SLOW_TIMERS}
    )


def deals_by_hand(database_url: str) -> Settings:
    """Settings in which each deal waits for the test: a minute's client-seed window and no
    scheduler in the app (the test fires the deals with :func:`clock` and :func:`make_due`)."""
    return make_settings(
        database_url,
        allow_timer_overrides=True,
        presence_grace_s=3600,
        run_scheduler=False,
        deal_delay_s=60,
    )


async def add_client_seed(game: Game, token: str, seed_hex: str) -> Any:
    """``POST /tables/{id}/client-seed`` as ``token``; the response."""
    return await game.client.post(
        f"/tables/{game.id}/client-seed",
        json={"client_seed_hex": seed_hex},
        headers=auth(token),
    )


async def all_gone_quiet(game: Game) -> None:
    """Every seated player was last seen two hours ago: past any presence grace, so that the
    next sweep finds away everybody who has not shown a sign of life since.  Exact, where
    sleeping past a short grace (0.5 s) left a slow machine too little time between the
    heartbeats that follow and the sweep (the heartbeats ran out too)."""
    await sql(
        game.settings,
        "UPDATE game.presence SET last_seen_at = now() - interval '2 hours'"
        " WHERE table_id = :table",
        table=uuid.UUID(game.id),
    )


async def gone_quiet(game: Game, *seats: int) -> None:
    """The players at ``seats`` were last seen two hours ago (the others keep their last
    sign of life): the next sweep finds them gone, where waiting out a short grace raced the
    table's timers on a slow machine."""
    for seat_ in seats:
        await sql(
            game.settings,
            "UPDATE game.presence SET last_seen_at = now() - interval '2 hours'"
            " WHERE table_id = :table AND user_id = :user",
            table=uuid.UUID(game.id),
            user=uuid.UUID(game.user(seat_)),
        )


async def heartbeat(game: Game, seat: int) -> None:
    """``seat``'s player says they are here."""
    beat = await game.client.post(f"/tables/{game.id}/heartbeat", headers=auth(game.token(seat)))
    assert beat.status_code == 204, beat.text


async def make_due(game: Game, kind: str) -> None:
    """The table's pending ``kind`` deadlines are due now."""
    await sql(
        game.settings,
        "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
        " WHERE table_id = :table AND kind = :kind AND status = 'pending'",
        table=uuid.UUID(game.id),
        kind=kind,
    )


async def until_handled(game: Game, kind: str, timeout_s: float = 10.0) -> None:
    """Until the scheduler has handled (fired, or dropped as stale) every due deadline of
    ``kind`` of the table."""
    deadline = time.monotonic() + timeout_s
    while (
        await sql(
            game.settings,
            "SELECT count(*) FROM game.deadlines WHERE table_id = :table AND kind = :kind"
            " AND status = 'pending' AND due_at <= now()",
            table=uuid.UUID(game.id),
            kind=kind,
        )
    )[0][0]:
        assert time.monotonic() < deadline, f"{kind} deadlines still pending after {timeout_s} s"
        await asyncio.sleep(POLL_S)


async def expire_timer(game: Game) -> None:
    """The table's running player timer runs out now: its deadline and the timer the views
    show are both due a second ago, so the scheduler fires it on its next sweep.  Tests that
    must act (or look) while a timer runs give it a minute and end it with this, instead of a
    short timer a slow machine can let run out first."""
    async with db_session(game.settings) as session:
        timer = (
            await session.execute(
                text(
                    "SELECT timer_kind, timer_due_at FROM game.tables WHERE id = :table FOR UPDATE"
                ),
                {"table": uuid.UUID(game.id)},
            )
        ).one()
        assert timer.timer_kind not in (None, "deal"), f"no player timer runs: {timer}"
        moved = await session.execute(
            text(
                "UPDATE game.deadlines SET due_at = now() - interval '1 second'"
                " WHERE table_id = :table AND kind = 'game' AND status = 'pending'"
                " AND due_at = :due"
            ),
            {"table": uuid.UUID(game.id), "due": timer.timer_due_at},
        )
        assert moved.rowcount == 1, "the running timer has no pending deadline"
        await session.execute(
            text(
                "UPDATE game.tables SET timer_due_at = now() - interval '1 second'"
                " WHERE id = :table"
            ),
            {"table": uuid.UUID(game.id)},
        )
        await session.commit()


async def seat(client: Any, token: str, table_id: str) -> dict[str, Any]:
    response = await client.post(f"/tables/{table_id}/seat", headers=auth(token))
    assert response.status_code == 201, response.text
    return dict(response.json())


async def start_game(
    client: Any,
    settings: Any,
    *,
    players: int = 4,
    deposit_cents: int = 1_000,
    entry_cents: int = 500,
    options: Mapping[str, int] | None = None,
    dealer: int | None = None,
    hands: Mapping[int, Sequence[str]] | None = None,
    vira: str = "KD",
    stock: Sequence[str] = (),
    names: Iterable[str] | None = None,
    tag: str = "",
) -> Game:
    """A full table whose first round is scripted: ``dealer`` deals and, with ``hands``,
    each seat receives its hand.  Seating the last player starts the match.  ``tag`` ends
    every username it makes (operator, players, spectator), for a second game in one test."""
    op = await operator(client, settings, f"operator{tag}")
    labels = list(names) if names is not None else [f"player{i}{tag}" for i in range(players)]
    seated = [await player(client, settings, name, deposit_cents, op) for name in labels]
    spectator = await player(client, settings, f"watcher{tag}", 0, op)
    table = await create_table(
        client,
        seated[0][1],
        seat_count=players,
        entry_cents=entry_cents,
        options=dict(options or {}),
    )
    for _, token in seated[:-1]:
        await seat(client, token, table["id"])
    permutation = None
    if hands is not None:
        assert dealer is not None, "hands are dealt from a known dealer"
        permutation = deal_permutation(
            seats=players,
            dealer=dealer,
            hands=hands,
            vira=vira,
            stock=stock,
            decks=2 if players <= 5 else 4,
        )
    await fix_streams(settings, table["id"], 1, dealer=dealer, permutation=permutation)
    await seat(client, seated[-1][1], table["id"])
    return Game(client, settings, table["id"], seated, op, spectator[1])
