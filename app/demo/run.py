"""``raiz demo``: start the API, fund bots, let them play a whole match over HTTP and
WebSocket, then show where every centavo went and check every round's seed."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from app.clients.bot_player import ActionStats, RemoteBotPlayer
from app.demo.audit import check_seed, table_rounds
from app.demo.report import (
    balance_lines,
    brl,
    percent,
    round_line,
    seed_lines,
)
from app.demo.server import ServeProcess

if TYPE_CHECKING:
    from app.config import Settings
    from app.db import Database

__all__ = ("DEMO_TIMERS", "NAMES", "DemoOptions", "run_demo")

NAMES = ("ana", "bruno", "carla", "davi", "elisa", "fabio", "gabi", "heitor", "iara", "joao")
"""Bot names, one per seat (a random suffix makes the usernames unique per run)."""
DEMO_TIMERS = {"decision_timeout_ms": 5_000, "turn_timeout_ms": 5_000, "claim_window_ms": 100}
"""The demo's shortened timers (the preset's are 30 s, 25 s and 3 s)."""
MATCH_TIMEOUT_S = 600.0

Echo = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class DemoOptions:
    """What ``raiz demo`` was asked for."""

    players: int = 4
    entry_cents: int = 500
    lives: int = 3
    deposit_cents: int = 2_000
    seed: int = 0
    keep_server: bool = False


def run_demo(options: DemoOptions, echo: Echo) -> int:
    """Run the whole demo; the exit status (0 when every check passed)."""
    if os.environ.get("RAIZ_ENV", "").strip().lower() == "production":
        echo("error: raiz demo refuses to run with RAIZ_ENV=production (it shortens timers")
        echo("       with a test-only switch and creates throwaway accounts).")
        return 2
    from app.config import get_settings
    from app.db import resolve_database_url

    settings = get_settings()
    url = resolve_database_url(settings)
    suffix = secrets.token_hex(2)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    log_path = settings.data_dir / "demo-server.log"
    echo(
        f"Raiz demo: {options.players} bots play a whole match of Cacheta (cacheta-raiz) "
        "through the HTTP API and the table WebSocket."
    )
    echo(
        "Note: timers are shortened for this demo (turns and decisions 5 s, claim window "
        "0.1 s; real tables: 30 s, 25 s, 3 s) with the test-only timer-override switch."
    )
    echo("")
    server = ServeProcess(
        env={
            "DATABASE_URL": url,
            "RAIZ_ALLOW_TIMER_OVERRIDES": "true",
            "RAIZ_SCHEDULER_POLL_INTERVAL_S": "0.05",
            "RAIZ_DEAL_DELAY_S": "0.2",
        },
        log_path=log_path,
    )
    started = time.monotonic()
    try:
        server.start()
    except RuntimeError as error:
        lines = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        echo(f"error: the demo's server did not start: {error}")
        if lines:
            echo(f"       its last log line ({log_path}): {lines[-1]}")
        return 3  # could not run (as `raiz` commands whose database is unavailable)
    database = "embedded PostgreSQL in " + str(settings.embedded_pg_dir)
    if settings.database_url is not None:
        database = "DATABASE_URL (" + _hide_password(settings.database_url) + ")"
    echo(f"Server    {server.base_url}  (raiz serve, 1 worker; log: {log_path})")
    echo(f"Database  {database}")
    try:
        ok = asyncio.run(
            _demo(url, settings, server.base_url, options=options, suffix=suffix, echo=echo)
        )
        echo("")
        echo(f"Demo finished in {time.monotonic() - started:.1f} s.")
        echo("All checks passed." if ok else "SOME CHECKS FAILED (see above).")
        if options.keep_server:
            echo(f"The server keeps running at {server.base_url}; press Ctrl-C to stop it.")
            try:
                while server.process is not None and server.process.poll() is None:
                    time.sleep(0.5)
            except KeyboardInterrupt:
                pass
    finally:
        server.stop()
    return 0 if ok else 1


def _hide_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


async def _demo(
    url: str, settings: Settings, base: str, *, options: DemoOptions, suffix: str, echo: Echo
) -> bool:
    from app.db import Database

    database = Database.connect(url, settings)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            return await _play(
                database, settings, http, base, options=options, suffix=suffix, echo=echo
            )
    finally:
        await database.dispose()


async def _user(database: Database, settings: Settings, name: str, role: str) -> str:
    """Create a user (as ``raiz users create`` does); returns a random password."""
    from app.accounts.service import AccountService

    password = secrets.token_urlsafe(18)
    async with database.session() as session:
        await AccountService(session, settings).create_user(name, password, role)
    return password


async def _login(http: httpx.AsyncClient, name: str, password: str) -> tuple[str, str]:
    response = await http.post("/auth/login", json={"username": name, "password": password})
    _ok(response, 200)
    body = response.json()
    return str(body["token"]), str(body["user"]["id"])


def _ok(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url.path}: "
            f"{response.status_code} {response.text}"
        )


async def _balance(http: httpx.AsyncClient, token: str) -> int:
    response = await http.get("/wallet", headers={"Authorization": f"Bearer {token}"})
    _ok(response, 200)
    return int(response.json()["balance_cents"])


async def _play(
    database: Database,
    settings: Settings,
    http: httpx.AsyncClient,
    base: str,
    *,
    options: DemoOptions,
    suffix: str,
    echo: Echo,
) -> bool:
    names = list(NAMES[: options.players])
    operator_name = f"demo-operator-{suffix}"
    operator_token, _ = await _login(
        http, operator_name, await _user(database, settings, operator_name, "operator")
    )
    operator = {"Authorization": f"Bearer {operator_token}"}
    tokens, user_ids = [], []
    for name in names:
        username = f"{name}-{suffix}"
        token, user_id = await _login(
            http, username, await _user(database, settings, username, "player")
        )
        tokens.append(token)
        user_ids.append(user_id)
        response = await http.post(
            f"/admin/wallets/{user_id}/deposits",
            json={"amount_cents": options.deposit_cents},
            headers={**operator, "Idempotency-Key": f"demo-{suffix}-{name}"},
        )
        _ok(response, 201)
    before = [await _balance(http, token) for token in tokens]
    echo(
        f"Players   {', '.join(f'{name}-{suffix}' for name in names)} "
        f"(operator {operator_name} deposited {brl(options.deposit_cents)} to each)"
    )

    response = await http.post(
        "/tables",
        json={
            "seat_count": options.players,
            "entry_cents": options.entry_cents,
            "options": {"lives": options.lives, **DEMO_TIMERS},
        },
        headers=operator,
    )
    _ok(response, 201)
    table = response.json()
    table_id = table["id"]
    echo(
        f"Table     {table_id}: {options.players} seats, entry {brl(options.entry_cents)}, "
        f"{options.lives} lives, fee {percent(table['fee_bps'])} (rate snapshotted now)"
    )
    echo(
        f"          if full: prize pool {brl(options.entry_cents * options.players)}, "
        f"winner gets {brl(table['net_prize_if_full_cents'])}"
    )
    for token in tokens:
        response = await http.post(
            f"/tables/{table_id}/seat", headers={"Authorization": f"Bearer {token}"}
        )
        _ok(response, 201)
    echo(f"Seated    everyone paid the entry when sitting; the match started ({table_id[:8]}).")

    echo("")
    echo("Playing... (each bot reads its own view from the WebSocket and posts moves over HTTP)")
    stats = ActionStats()
    ticker = _Ticker(names, user_ids, echo)
    bots = [
        RemoteBotPlayer(
            http,
            base,
            token,
            table_id,
            tie_break=options.seed * 100 + index,
            stats=stats,
            on_view=ticker.on_view,
        )
        for index, token in enumerate(tokens)
    ]
    playing_since = time.monotonic()
    await asyncio.gather(*(bot.play(timeout_s=MATCH_TIMEOUT_S) for bot in bots))
    elapsed = time.monotonic() - playing_since
    response = await http.get(f"/tables/{table_id}", headers=operator)
    _ok(response, 200)
    final = response.json()
    seat_names = {
        seat["match_seat"]: names[user_ids.index(seat["user_id"])] for seat in final["seats"]
    }
    rounds = await table_rounds(database, uuid.UUID(table_id))
    moves = sum(stats.by_type.values())
    echo(
        f"Done in {elapsed:.1f} s: {len(rounds)} round{'s' if len(rounds) != 1 else ''}, "
        f"{moves} moves accepted, {stats.refused} refused (the table had moved on)."
    )

    ok = True
    echo("")
    echo("Rounds (from the hash-chained round log; played = mandar, ran = correr)")
    width = max(len(name) for name in names)
    for facts in rounds:
        for line in round_line(facts, seat_names, width):
            echo(line)

    result = final["result"]
    winner = seat_names[result["winner_seat"]]
    places = sorted(result["placements"], key=lambda item: (item["place"], item["seat"]))
    echo("")
    echo(
        f"Result    {winner} wins ({result['reason'].replace('_', ' ')}). Places: "
        + ", ".join(f"{item['place']}. {seat_names[item['seat']]}" for item in places)
    )
    pool, fee = int(result["pool_cents"]), int(result["fee_cents"])
    net = pool - pool * int(final["fee_bps"]) // 10_000
    ok &= (fee == pool - net) and (
        result["payouts"] == [{"user_id": result["winner_user_id"], "amount_cents": net}]
    )
    echo(
        f"Payout    prize pool {brl(pool)} ({options.players} x {brl(options.entry_cents)}); "
        f"fee {brl(fee)} = {percent(final['fee_bps'])} rounded down; "
        f"net prize {brl(net)} to {winner}"
    )

    after = [await _balance(http, token) for token in tokens]
    expected, notes = [], []
    for name, old in zip(names, before, strict=True):
        won = name == winner
        expected.append(old - options.entry_cents + (net if won else 0))
        notes.append("entry paid, net prize won" if won else "entry paid")
    echo("")
    echo("Balances")
    for line in balance_lines(names, before, after, expected, notes):
        echo(line)
    ok &= after == expected

    echo("")
    echo("Seeds (committed before each deal, revealed after the round; rng.verify_round)")
    checks = [
        await check_seed(
            http, operator, facts, int(final["game_view"]["decks"]) * 52, options.players
        )
        for facts in rounds
    ]
    for line in seed_lines(checks):
        echo(line)
    ok &= all(check.passed for check in checks)
    if checks and checks[0].seed:
        echo(
            "  (check one yourself: python -m rng.verify "
            f"--commitment {checks[0].commitment} --seed {checks[0].seed} "
            f"--deck-size {int(final['game_view']['decks']) * 52})"
        )

    from ledger.reconcile import reconcile

    report = await reconcile(database.engine)
    echo("")
    echo(report.summary().replace("ledger reconcile: ok", "Ledger    reconcile OK"))
    if options.keep_server:
        echo("")
        echo("Explore (the operator's token is valid for a few hours):")
        echo(f"  curl -s {base}/tables/{table_id} -H 'Authorization: Bearer {operator_token}'")
        echo(f"  curl -s {base}/schema/swagger  (the API's documentation, in a browser)")
    return bool(ok and report.ok)


class _Ticker:
    """Prints one line when a round is dealt, whichever bot sees it first."""

    def __init__(self, names: list[str], user_ids: list[str], echo: Echo) -> None:
        self._names = names
        self._user_ids = user_ids
        self._echo = echo
        self._round = 0

    def on_view(self, view: dict[str, Any]) -> None:
        game = view.get("game_view")
        if not game or not game.get("round") or game["round"]["number"] <= self._round:
            return
        self._round = game["round"]["number"]
        by_seat = {
            seat["match_seat"]: self._names[self._user_ids.index(seat["user_id"])]
            for seat in view["seats"]
        }
        lives = ", ".join(f"{by_seat[seat]} {count}" for seat, count in enumerate(game["lives"]))
        dealer = by_seat.get(game["round"]["dealer"], "?")
        self._echo(f"  round {self._round} dealt by {dealer} (lives: {lives})")
