"""Black-box helpers: players over real HTTP, whole matches played by ``RemoteBotPlayer``s,
and the ground truth read back from the database (test code may read any table)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx
import websockets

from app.clients.bot_player import ActionStats, RemoteBotPlayer, websocket_url
from rng.verification import verify_round
from tests.conftest import make_settings
from tests.helpers import DEFAULT_PASSWORD, create_user

LIVE_ENV = {
    "RAIZ_ALLOW_TIMER_OVERRIDES": "true",
    "RAIZ_SCHEDULER_POLL_INTERVAL_S": "0.05",
    # Bots stay connected, but a stopped bot must not freeze the table in these tests.
    "RAIZ_PRESENCE_GRACE_S": "3600",
    "RAIZ_LOG_LEVEL": "DEBUG",
}
"""Environment of every live server: test-only fast timers, fast deadline sweeps."""

FAST_TIMERS = {"decision_timeout_ms": 2_000, "turn_timeout_ms": 2_000, "claim_window_ms": 50}
"""Timers short enough for whole matches in seconds, long enough for bots to act first."""

DECK_SIZE_BY_SEATS = {seats: 104 if seats <= 5 else 208 for seats in range(2, 11)}


# --- recording ------------------------------------------------------------------------------
@dataclass(slots=True)
class Received:
    """One message a client received: an HTTP response body or a WebSocket frame."""

    channel: str
    """``http`` or ``ws``."""
    url: str
    text: str
    at: float
    """Wall-clock time (``time.time()``) when it arrived."""

    def json(self) -> Any:
        return json.loads(self.text) if self.text else None


@dataclass(slots=True)
class Recorder:
    """Everything one client received, in order."""

    messages: list[Received] = field(default_factory=list)

    async def on_response(self, response: httpx.Response) -> None:
        await response.aread()
        self.messages.append(Received("http", str(response.url), response.text, time.time()))

    def on_frame(self, url: str) -> Callable[[str], None]:
        def record(text: str) -> None:
            self.messages.append(Received("ws", url, text, time.time()))

        return record


def recording_client(recorder: Recorder | None = None, base_url: str = "") -> httpx.AsyncClient:
    """An HTTP client that hands every response body to ``recorder``."""
    hooks = {"response": [recorder.on_response]} if recorder is not None else {}
    return httpx.AsyncClient(base_url=base_url, timeout=30, event_hooks=hooks)


def table_view_of(message: Received, table_id: str) -> dict[str, Any] | None:
    """The table view a message carries (WebSocket push or HTTP answer), if any."""
    body = message.json()
    if isinstance(body, dict) and body.get("type") == "view":
        body = body["view"]
    if isinstance(body, dict) and body.get("id") == table_id and "step" in body:
        return body
    return None


# --- people -----------------------------------------------------------------------------------
@dataclass(slots=True)
class Person:
    """A user with a token and an HTTP client of their own."""

    name: str
    user_id: str
    token: str
    http: httpx.AsyncClient
    recorder: Recorder
    deposit_cents: int = 0

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def person(
    database_url: str, base: str, name: str, role: str = "player", *, record: bool = True
) -> Person:
    """Create a user directly in the database and log in over HTTP."""
    user_id = await create_user(make_settings(database_url), name, role)
    recorder = Recorder()
    http = recording_client(recorder if record else None)
    response = await http.post(
        f"{base}/auth/login", json={"username": name, "password": DEFAULT_PASSWORD}
    )
    assert response.status_code == 200, response.text
    return Person(name, user_id, response.json()["token"], http, recorder)


async def deposit(base: str, operator: Person, player: Person, amount_cents: int) -> None:
    response = await operator.http.post(
        f"{base}/admin/wallets/{player.user_id}/deposits",
        json={"amount_cents": amount_cents},
        headers={**operator.headers, "Idempotency-Key": f"dep-{uuid.uuid4()}"},
    )
    assert response.status_code == 201, response.text
    player.deposit_cents += amount_cents


async def balance(base: str, who: Person) -> int:
    response = await who.http.get(f"{base}/wallet", headers=who.headers)
    assert response.status_code == 200, response.text
    return int(response.json()["balance_cents"])


async def create_table(base: str, creator: Person, **body: Any) -> dict[str, Any]:
    payload = {"seat_count": 4, "entry_cents": 500, **body}
    response = await creator.http.post(f"{base}/tables", json=payload, headers=creator.headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def take_seat(base: str, table_id: str, player: Person) -> dict[str, Any]:
    response = await player.http.post(f"{base}/tables/{table_id}/seat", headers=player.headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def get_table(base: str, table_id: str, who: Person) -> dict[str, Any]:
    response = await who.http.get(f"{base}/tables/{table_id}", headers=who.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def close_all(people: Sequence[Person]) -> None:
    for who in people:
        await who.http.aclose()


# --- playing --------------------------------------------------------------------------------
async def play_match(
    bases: Sequence[str],
    table_id: str,
    players: Sequence[Person],
    *,
    timeout_s: float = 120.0,
    tie_break: int = 0,
    stats: ActionStats | None = None,
) -> list[dict[str, Any]]:
    """Four (or n) ``RemoteBotPlayer``s play the table to its end, concurrently.

    Player ``i`` talks to ``bases[i % len(bases)]`` (HTTP and WebSocket). Returns the
    final view of every player. ``stats`` (if given) adds up what every bot measured.
    """
    bots = [
        RemoteBotPlayer(
            player.http,
            bases[index % len(bases)],
            player.token,
            table_id,
            tie_break=tie_break + index,
            stats=stats,
            on_message=player.recorder.on_frame(
                websocket_url(bases[index % len(bases)], table_id, "<token>")
            ),
        )
        for index, player in enumerate(players)
    ]
    return list(await asyncio.gather(*(bot.play(timeout_s=timeout_s) for bot in bots)))


async def spectate(
    base: str, table_id: str, who: Person, *, timeout_s: float = 120.0, probe_rng: bool = True
) -> int:
    """Follow the table's WebSocket as a non-player until the match ends.

    With ``probe_rng``, fetch the current round's public RNG record after every view: the
    seed must stay hidden until the round is revealed. Returns how many probes were made.
    """
    record = who.recorder.on_frame(websocket_url(base, table_id, "<token>"))
    url = websocket_url(base, table_id, who.token)
    probes = 0
    async with asyncio.timeout(timeout_s), websockets.connect(url, max_size=None) as socket:
        async for frame in socket:
            text = frame if isinstance(frame, str) else frame.decode()
            record(text)
            message = json.loads(text)
            if message.get("type") != "view":
                continue
            view = message["view"]
            if view["status"] in ("finished", "cancelled"):
                return probes
            if probe_rng and view["round"] is not None:
                response = await who.http.get(
                    f"{base}/rng/rounds/{view['round']['rng_round_id']}", headers=who.headers
                )
                assert response.status_code == 200, response.text
                public = response.json()
                assert public["commitment"] == view["round"]["commitment"]
                assert (public["seed"] is None) == (not public["revealed"]), public
                probes += 1
    raise AssertionError("the table socket closed before the match ended")


async def until_watching(*watchers: Person, timeout_s: float = 30.0) -> None:
    """Until each watcher's table socket (:func:`spectate`) has delivered its first frame,
    the view sent on connect: it follows the table from there on.  Where a fixed 0.3 s
    left a slow machine's spectators still connecting when the seats were taken."""
    async with asyncio.timeout(timeout_s):
        while not all(
            any(message.channel == "ws" for message in who.recorder.messages) for who in watchers
        ):
            await asyncio.sleep(0.02)


# --- ground truth -----------------------------------------------------------------------------
async def connect(database_url: str) -> asyncpg.Connection:
    return await asyncpg.connect(database_url)


async def fetch_rounds(db: asyncpg.Connection, table_id: str) -> list[asyncpg.Record]:
    return list(
        await db.fetch(
            "SELECT id, number, rng_round_id, commitment, rng_version FROM game.rounds "
            "WHERE table_id = $1 ORDER BY number",
            uuid.UUID(table_id),
        )
    )


async def fetch_log(db: asyncpg.Connection, table_id: str) -> list[dict[str, Any]]:
    """Every round-log entry of the table, in order, as dicts with ``round`` added."""
    rows = await db.fetch(
        "SELECT r.number, l.seq, l.kind, l.body, l.created_at FROM game.round_log l "
        "JOIN game.rounds r ON r.id = l.round_id WHERE r.table_id = $1 "
        "ORDER BY r.number, l.seq",
        uuid.UUID(table_id),
    )
    return [
        {
            "round": row["number"],
            "seq": row["seq"],
            "kind": row["kind"],
            "body": json.loads(row["body"]),
            "created_at": row["created_at"],
        }
        for row in rows
    ]


async def check_seeds(
    base: str, who: Person, db: asyncpg.Connection, table_id: str, seats: int
) -> list[dict[str, Any]]:
    """Every round's revealed seed verifies against its commitment and reproduces the
    chance inputs the round log recorded; returns one line of facts per round."""
    log = await fetch_log(db, table_id)
    checked = []
    for round_ in await fetch_rounds(db, table_id):
        response = await who.http.get(
            f"{base}/rng/rounds/{round_['rng_round_id']}", headers=who.headers
        )
        assert response.status_code == 200, response.text
        public = response.json()
        assert public["commitment"] == round_["commitment"]
        assert public["revealed"] and public["seed"], public
        chances = [
            entry["body"]
            for entry in log
            if entry["round"] == round_["number"] and entry["kind"] == "chance"
        ]
        deal = [c["value"] for c in chances if c["kind"] == "deal"]
        reshuffles = [c["value"] for c in chances if c["kind"] == "reshuffle"]
        first = [c["value"] for c in chances if c["kind"] == "first_dealer"]
        result = verify_round(
            public["commitment"],
            public["seed"],
            public["client_seeds"],
            public["version"],
            DECK_SIZE_BY_SEATS[seats],
            reshuffle_sizes=[len(value) for value in reshuffles],
            player_count=seats if first else None,
        )
        assert len(deal) == 1
        assert list(result.deal) == deal[0]
        assert [list(item.permutation) for item in result.reshuffles] == reshuffles
        if first:
            assert result.first_dealer is not None and result.first_dealer.seat == first[0]
        checked.append({"number": round_["number"], "seed": public["seed"]})
    return checked


async def check_money(
    base: str, table: dict[str, Any], players: Sequence[Person]
) -> dict[str, int]:
    """Winner: deposit - entry + net prize; everyone else: deposit - entry (to the centavo)."""
    result = table["result"]
    entry = table["entry_cents"]
    pool = entry * len(players)
    net = pool - pool * table["fee_bps"] // 10_000
    assert result["pool_cents"] == pool
    assert result["fee_cents"] == pool - net
    assert result["payouts"] == [{"user_id": result["winner_user_id"], "amount_cents": net}]
    balances = {}
    for player in players:
        expected = player.deposit_cents - entry
        if player.user_id == result["winner_user_id"]:
            expected += net
        balances[player.user_id] = await balance(base, player)
        assert balances[player.user_id] == expected, (player.name, balances, expected)
    return balances


async def deadline_report(db: asyncpg.Connection, table_id: str) -> list[dict[str, Any]]:
    """Every deadline of the table with how many logged inputs it caused."""
    log = await fetch_log(db, table_id)
    caused: dict[int, int] = {}
    for entry in log:
        if entry["kind"] == "input":
            source = entry["body"].get("source", {})
            if "deadline" in source:
                caused[source["deadline"]] = caused.get(source["deadline"], 0) + 1
    rows = await db.fetch(
        "SELECT id, kind, token, due_at, status, attempts, handled_at FROM game.deadlines "
        "WHERE table_id = $1 ORDER BY id",
        uuid.UUID(table_id),
    )
    return [{**dict(row), "inputs": caused.get(row["id"], 0)} for row in rows]


def check_deadlines_once(report: Sequence[dict[str, Any]], now: Any) -> None:
    """No deadline fired twice, none failed, none due left pending; each ``fired`` game
    deadline caused exactly one logged input and each ``stale`` one none."""
    for row in report:
        assert row["status"] != "failed", row
        if row["status"] == "pending":
            assert row["due_at"] > now, row
            assert row["kind"] == "fill", row
        if row["kind"] == "game":
            # one deadline per engine timer: a timer going on keeps the one armed for it
            assert (
                sum(other["kind"] == "game" and other["token"] == row["token"] for other in report)
                == 1
            ), row
        if row["kind"] in ("game", "abandon"):
            assert row["inputs"] == (1 if row["status"] == "fired" else 0), row
        else:
            assert row["inputs"] == 0, row


async def settle_deadlines(
    db: asyncpg.Connection, table_ids: Sequence[str], timeout_s: float = 30.0
) -> None:
    """Wait until every deadline of the tables but the (future) fill deadlines is handled."""
    ids = [uuid.UUID(table_id) for table_id in table_ids]
    async with asyncio.timeout(timeout_s):
        while await db.fetchval(
            "SELECT count(*) FROM game.deadlines WHERE table_id = ANY($1::uuid[]) "
            "AND status = 'pending' AND (kind <> 'fill' OR due_at <= now())",
            ids,
        ):
            await asyncio.sleep(0.2)


async def wait_for_status(
    base: str, table_id: str, who: Person, status: str, timeout_s: float = 30.0
) -> dict[str, Any]:
    async with asyncio.timeout(timeout_s):
        while True:
            table = await get_table(base, table_id, who)
            if table["status"] == status:
                return table
            await asyncio.sleep(0.1)


def check_timers_shown(
    table_id: str, people: Sequence[Person], report: Sequence[dict[str, Any]]
) -> int:
    """Every view of one engine timer shows one due time: the due time of the deadline
    that fires it. Returns how many timers were seen."""
    due_by_token: dict[str, set[str]] = {}
    for who in people:
        for message in who.recorder.messages:
            view = table_view_of(message, table_id)
            if view is None or view["game_view"] is None or view["timer"] is None:
                continue
            deadline = view["game_view"]["deadline"]
            if deadline is None:
                continue
            assert view["timer"]["kind"] == deadline["kind"], view["timer"]
            due_by_token.setdefault(str(deadline["token"]), set()).add(view["timer"]["due_at"])
    armed = {row["token"]: row["due_at"] for row in report if row["kind"] == "game"}
    for token, shown in due_by_token.items():
        assert len(shown) == 1, (token, shown)
        assert dt.datetime.fromisoformat(shown.pop()) == armed[token], token
    return len(due_by_token)
