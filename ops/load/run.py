"""Load test: bots play many entry tables at once against a multi-worker ``raiz serve``,
then PostgreSQL's own TPC-B (pgbench) runs on the same server for comparison.

Run from the repository root::

    .venv/bin/python ops/load/run.py --tables 100 --duration 60 [--workers 2]
        [--max-actions N] [--lives 2] [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

Not a test: it prints figures.  It creates two scratch databases on the server named by
``--database-url`` (one for the service, one for pgbench) and drops them at the end
(``--keep-database`` keeps the service's).

1. ``raiz serve --workers N`` on a free loopback port against the fresh database (migrated
   by ``raiz serve`` itself), with the test-only timer overrides switched on so the claim
   window is short, and bots never counted absent (``RAIZ_PRESENCE_GRACE_S``).
2. An operator (created in the database, as ``raiz users create`` does) and ``4 x tables``
   players (``POST /auth/signup``, ``/auth/login``), each funded by an operator deposit.
3. The server's CPU while idle (``--idle-s``), then the table slots start, spread over
   ``--ramp-s`` (not measured).  Every slot loops until the run ends: a player creates a
   ``cacheta-raiz`` entry table with 4 seats, the four take their seats (paying the
   entry), and four ``RemoteBotPlayer`` play the match over HTTP (moves) and WebSocket
   (views); then the slot opens its next table.  The window ends after ``--duration``
   seconds or once ``--max-actions`` actions were accepted; matches still going are
   abandoned.
4. Figures: durable actions/s (player actions committed in the window, counted in
   ``game.table_actions``), client-measured action latency p50/p95/p99, the server's own
   histogram (``raiz_action_latency_seconds``), errors and refusals by code, and the CPU
   seconds the server, PostgreSQL, the load client and the whole machine spent (per
   committed action too).  PostgreSQL's is the whole server's (exact: a backend's CPU
   moves to the postmaster's children's account when it exits, so the pool's short-lived
   overflow connections count), so keep other databases quiet meanwhile; the service's
   backends alive at both ends are printed too.  ``--py-spy FILE`` profiles the server meanwhile.
5. The server stops; ``pgbench -i -s <scale>`` then ``pgbench -c -j -T`` (built-in TPC-B)
   on a scratch database of the same PostgreSQL; TPS and the ratio actions/s ÷ TPS.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import asyncpg
import httpx
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.clients.bot_player import ActionStats, RemoteBotPlayer
from app.demo.server import ServeProcess
from ops.pgbench import tpcb

ROOT = Path(__file__).resolve().parents[2]

PASSWORD = "load-test passphrase"  # a scratch database, dropped afterwards
ENTRY_CENTS = 500
DEPOSIT_CENTS = 10_000_000
"""Each player can pay far more entries than a run takes."""


# --- databases ------------------------------------------------------------------------------
def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` (plain ``postgresql://``)."""
    parsed = make_url(url).set(drivername="postgresql", database=name)
    return parsed.render_as_string(hide_password=False)


async def admin(url: str, statement: str) -> None:
    connection = await asyncpg.connect(with_database(url, "postgres"))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


async def create_operator(url: str) -> None:
    """The operator who funds the players, created in the database."""
    from app.accounts.service import AccountService
    from app.config import Settings
    from app.db import Database

    settings = Settings(env="test", database_url=url, password_cost_log2=10)
    database = Database.connect(url, settings)
    try:
        async with database.session() as session:
            await AccountService(session, settings).create_user("operator", PASSWORD, "operator")
    finally:
        await database.dispose()


# --- CPU accounting -------------------------------------------------------------------------
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Process(NamedTuple):
    """What the load test reads of a live process in ``/proc/<pid>/stat``."""

    group: int
    """Process group."""
    parent: int
    """Parent pid."""
    cpu_s: float
    """User + system CPU seconds it has spent."""
    reaped_cpu_s: float
    """User + system CPU seconds of its children that exited and were waited for."""


def process_cpu_s() -> dict[int, Process]:
    """Every live process, by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        # fields after the name: state, ppid, pgrp, ... utime (11), stime (12), cutime (13),
        # cstime (14)
        ticks = [int(value) for value in fields[11:15]]
        found[int(entry.name)] = Process(
            group=int(fields[2]),
            parent=int(fields[1]),
            cpu_s=(ticks[0] + ticks[1]) / CLOCK_TICKS,
            reaped_cpu_s=(ticks[2] + ticks[3]) / CLOCK_TICKS,
        )
    return found


def machine_cpu_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / CLOCK_TICKS, sum(values) / CLOCK_TICKS


@dataclass(frozen=True, slots=True)
class CpuSnapshot:
    """CPU seconds spent so far by the server, its PostgreSQL backends, PostgreSQL as a whole,
    this client, all."""

    server: float
    postgres: dict[int, float]
    """The service's backends live now (connected to its database), by pid."""
    postgres_all: float
    """The whole PostgreSQL server: the postmaster, its live children, and the children it
    has reaped (a backend's CPU moves into its parent's ``cutime``/``cstime`` when it exits,
    so the pool's short-lived overflow connections count too); every database's work."""
    client: float
    machine_busy: float
    machine_total: float

    @classmethod
    async def take(cls, server_group: int, db: asyncpg.Connection) -> CpuSnapshot:
        backends = {
            int(pid)
            for pid in await db.fetchval(
                "SELECT array_agg(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            or ()
        }
        own_backend = await db.fetchval("SELECT pg_backend_pid()")
        processes = process_cpu_s()
        postmaster = processes[own_backend].parent if own_backend in processes else None
        postgres_all = math.nan  # a PostgreSQL on another machine (or in a container)
        if postmaster in processes:
            postgres_all = processes[postmaster].cpu_s + processes[postmaster].reaped_cpu_s
            postgres_all += sum(p.cpu_s for p in processes.values() if p.parent == postmaster)
        return cls(
            server=sum(p.cpu_s for p in processes.values() if p.group == server_group),
            postgres={pid: processes[pid].cpu_s for pid in backends if pid in processes},
            postgres_all=postgres_all,
            client=time.process_time(),
            machine_busy=machine_cpu_s()[0],
            machine_total=machine_cpu_s()[1],
        )

    def postgres_since(self, before: CpuSnapshot) -> float:
        """CPU of the service's backends live now (one that connected meanwhile counts in full;
        one that exited meanwhile is missing: :attr:`postgres_all` has it)."""
        return sum(cpu - before.postgres.get(pid, 0.0) for pid, cpu in self.postgres.items())

    def backends_gone_since(self, before: CpuSnapshot) -> int:
        """The service's backends live at ``before`` that have exited since."""
        return len(set(before.postgres) - set(self.postgres))


# --- players --------------------------------------------------------------------------------
@dataclass(slots=True)
class Player:
    user_id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass(slots=True)
class Totals:
    """Everything the run counted besides the bots' own ``ActionStats``."""

    matches_finished: int = 0
    tables_created: int = 0
    setup_failures: dict[str, int] = field(default_factory=dict)


def count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def error_code(response: httpx.Response) -> str:
    try:
        return f"{response.status_code} {response.json().get('code')}"
    except ValueError:
        return str(response.status_code)


async def checked(response: Any, expected: int, totals: Totals) -> dict[str, Any] | None:
    """The body of ``response`` if it has the expected status; else counts the failure."""
    result = await response
    if result.status_code != expected:
        count(totals.setup_failures, error_code(result))
        return None
    return dict(result.json())


async def login(http: httpx.AsyncClient, base: str, username: str) -> dict[str, Any]:
    response = await http.post(
        f"{base}/auth/login", json={"username": username, "password": PASSWORD}
    )
    response.raise_for_status()
    return dict(response.json())


async def make_players(http: httpx.AsyncClient, base: str, total: int) -> list[Player]:
    """Sign up, log in and fund ``total`` players (a few requests at a time)."""
    operator = Player("", (await login(http, base, "operator"))["token"])
    limit = asyncio.Semaphore(8)

    async def one(number: int) -> Player:
        async with limit:
            username = f"load{number:05d}"
            response = await http.post(
                f"{base}/auth/signup", json={"username": username, "password": PASSWORD}
            )
            response.raise_for_status()
            token = await login(http, base, username)
            player = Player(str(token["user"]["id"]), str(token["token"]))
            response = await http.post(
                f"{base}/admin/wallets/{player.user_id}/deposits",
                json={"amount_cents": DEPOSIT_CENTS},
                headers={**operator.headers, "Idempotency-Key": f"load-{uuid.uuid4()}"},
            )
            response.raise_for_status()
            return player

    return list(await asyncio.gather(*(one(number) for number in range(total))))


# --- the tables -----------------------------------------------------------------------------
@dataclass(slots=True)
class Run:
    """What every table slot shares."""

    http: httpx.AsyncClient
    base: str
    options: dict[str, int]
    match_timeout_s: float
    stats: ActionStats = field(default_factory=ActionStats)
    totals: Totals = field(default_factory=Totals)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


async def run_slot(run: Run, players: list[Player], delay_s: float) -> None:
    """After ``delay_s``, open a table, seat the players, play the match; again until
    ``stop``."""
    http, base, stats, totals, stop = run.http, run.base, run.stats, run.totals, run.stop
    await asyncio.sleep(delay_s)
    creator = players[0]
    round_number = 0
    while not stop.is_set():
        table = await checked(
            http.post(
                f"{base}/tables",
                json={
                    "seat_count": len(players),
                    "entry_cents": ENTRY_CENTS,
                    "options": run.options,
                },
                headers=creator.headers,
            ),
            201,
            totals,
        )
        if table is None:
            await asyncio.sleep(0.5)
            continue
        totals.tables_created += 1
        for player in players:
            await checked(
                http.post(f"{base}/tables/{table['id']}/seat", headers=player.headers),
                201,
                totals,
            )
        bots = [
            RemoteBotPlayer(
                http, base, player.token, table["id"], tie_break=round_number + i, stats=stats
            )
            for i, player in enumerate(players)
        ]
        round_number += len(players)
        playing = asyncio.ensure_future(
            asyncio.gather(*(bot.play(timeout_s=run.match_timeout_s) for bot in bots))
        )
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({playing, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not playing.done():
            playing.cancel()
            await asyncio.gather(playing, return_exceptions=True)
            return
        try:
            finals = playing.result()
        except Exception as error:  # a bot gave up (timeout, refused socket)
            count(totals.setup_failures, f"match: {type(error).__name__}")
            continue
        if all(final["status"] == "finished" for final in finals):
            totals.matches_finished += 1


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def histogram_buckets(text: str, name: str) -> dict[float, float]:
    """Cumulative bucket counts of a Prometheus histogram, summed over its labels."""
    buckets: dict[float, float] = {}
    pattern = re.compile(rf'^{name}_bucket\{{.*le="([^"]+)".*\}} ([0-9.e+]+)$')
    for line in text.splitlines():
        match = pattern.match(line)
        if match:
            bound = math.inf if match.group(1) == "+Inf" else float(match.group(1))
            buckets[bound] = buckets.get(bound, 0.0) + float(match.group(2))
    return buckets


def histogram_quantile(
    before: dict[float, float], after: dict[float, float], fraction: float
) -> tuple[float, int]:
    """The ``fraction`` quantile (a bucket's upper bound) of what a histogram counted
    between two scrapes, and how many samples that was."""
    window = {bound: count - before.get(bound, 0.0) for bound, count in after.items()}
    total = window.get(math.inf, 0.0)
    if total <= 0:
        return math.nan, 0
    for bound in sorted(window):
        if window[bound] >= fraction * total:
            return bound, int(total)
    return math.inf, int(total)


async def metrics_text(http: httpx.AsyncClient, base: str) -> str:
    response = await http.get(f"{base}/metrics")
    return response.text if response.status_code == 200 else ""


def start_profiler(args: argparse.Namespace, server: int) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the server and its workers for the load window, if asked.

    Only samples holding the GIL count (``--gil``): on a saturated machine a thread that is
    runnable but waiting for a core would otherwise show up as busy in whatever it was
    doing last (mostly socket writes)."""
    if args.py_spy is None:
        return None
    binary = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    command = [
        binary, "record", "--pid", str(server), "--subprocesses", "--nonblocking", "--gil",
        "--rate", "100", "--duration", str(max(1, int(args.duration) - 1)),
        "--format", "raw", "--output", str(args.py_spy),
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@dataclass(slots=True)
class LoadResult:
    accepted_client: int
    committed: int
    window_s: float
    latencies_s: list[float]
    stats: ActionStats
    totals: Totals
    server_metrics_before: str
    server_metrics_after: str
    server_cpu_s: float
    postgres_cpu_s: float
    postgres_all_cpu_s: float
    backends_gone: int
    client_cpu_s: float
    machine_busy_s: float
    machine_total_s: float


async def load(args: argparse.Namespace, base: str, url: str, server_group: int) -> LoadResult:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        started = time.monotonic()
        players = await make_players(http, base, 4 * args.tables)
        print(
            f"  {len(players)} players signed up, logged in and funded in "
            f"{time.monotonic() - started:.1f} s"
        )
        run = Run(
            http,
            base,
            {
                "lives": args.lives,
                "decision_timeout_ms": args.turn_timeout_ms,
                "turn_timeout_ms": args.turn_timeout_ms,
                "claim_window_ms": args.claim_window_ms,
            },
            args.match_timeout_s,
        )
        stats = run.stats
        db = await asyncpg.connect(url)
        try:
            idle = await CpuSnapshot.take(server_group, db)
            await asyncio.sleep(args.idle_s)
            idle_cpu_s = (await CpuSnapshot.take(server_group, db)).server - idle.server
            print(
                f"  server idle (no table, no socket): {100 * idle_cpu_s / args.idle_s:.0f}% of "
                f"a core over {args.idle_s:g} s (deadline sweeps, gauges)"
            )
            slots = [
                asyncio.ensure_future(
                    run_slot(run, players[4 * i : 4 * i + 4], args.ramp_s * i / args.tables)
                )
                for i in range(args.tables)
            ]
            await asyncio.sleep(args.ramp_s)
            print(f"  {args.tables} table slots started over {args.ramp_s:g} s; measuring")
            before = await metrics_text(http, base)
            window_start = await db.fetchval("SELECT now()")
            cpu_before = await CpuSnapshot.take(server_group, db)
            first_latency = len(stats.latencies_s)
            accepted_at_start = sum(stats.by_type.values())
            clock = time.monotonic()
            profiler = start_profiler(args, server_group)
            while time.monotonic() - clock < args.duration:
                if args.max_actions and sum(stats.by_type.values()) >= args.max_actions:
                    break
                await asyncio.sleep(0.1)
            window_end = await db.fetchval("SELECT now()")
            cpu_after = await CpuSnapshot.take(server_group, db)
            window_s = time.monotonic() - clock
            accepted_client = sum(stats.by_type.values()) - accepted_at_start
            latencies = stats.latencies_s[first_latency:]
            after = await metrics_text(http, base)
            run.stop.set()
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)  # py-spy writes its output and exits
                await asyncio.to_thread(profiler.wait)
            await asyncio.gather(*slots, return_exceptions=True)
            committed = await db.fetchval(
                "SELECT count(*) FROM game.table_actions WHERE created_at >= $1 "
                "AND created_at <= $2",
                window_start,
                window_end,
            )
        finally:
            await db.close()
    totals = run.totals
    return LoadResult(
        accepted_client=accepted_client,
        committed=int(committed),
        window_s=window_s,
        latencies_s=latencies,
        stats=stats,
        totals=totals,
        server_metrics_before=before,
        server_metrics_after=after,
        server_cpu_s=cpu_after.server - cpu_before.server,
        postgres_cpu_s=cpu_after.postgres_since(cpu_before),
        postgres_all_cpu_s=cpu_after.postgres_all - cpu_before.postgres_all,
        backends_gone=cpu_after.backends_gone_since(cpu_before),
        client_cpu_s=cpu_after.client - cpu_before.client,
        machine_busy_s=cpu_after.machine_busy - cpu_before.machine_busy,
        machine_total_s=cpu_after.machine_total - cpu_before.machine_total,
    )


def report_load(args: argparse.Namespace, result: LoadResult) -> float:
    """Print the load figures; returns durable actions/s."""
    stats, totals = result.stats, result.totals
    rate = result.committed / result.window_s
    ms = [value * 1000 for value in result.latencies_s]
    print(
        f"load: {args.tables} tables x 4 bots, {args.workers} workers, "
        f"{result.window_s:.1f} s window"
    )
    print(
        f"  durable actions/s: {rate:,.1f} ({result.committed} player actions committed; "
        f"{result.accepted_client} accepted answers seen by the bots)"
    )
    print(
        f"  action latency (client, HTTP round trip): p50 {percentile(ms, 0.5):.1f} ms, "
        f"p95 {percentile(ms, 0.95):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms, "
        f"max {max(ms, default=math.nan):.1f} ms"
    )
    name = "raiz_action_latency_seconds"
    before = histogram_buckets(result.server_metrics_before, name)
    buckets = histogram_buckets(result.server_metrics_after, name)
    after = {q: histogram_quantile(before, buckets, q) for q in (0.5, 0.95, 0.99)}
    if after[0.5][1]:
        print(
            f"  action latency (server, request to commit, histogram bucket bounds): "
            f"p50 ≤ {after[0.5][0] * 1000:g} ms, p95 ≤ {after[0.95][0] * 1000:g} ms, "
            f"p99 ≤ {after[0.99][0] * 1000:g} ms "
            f"({after[0.5][1]} actions)"
        )
    print(f"  actions by type (whole run): {dict(sorted(stats.by_type.items()))}")
    print(f"  matches finished: {totals.matches_finished}, tables created: {totals.tables_created}")
    errors = {**stats.failures, **{f"setup {k}": v for k, v in totals.setup_failures.items()}}
    print(f"  errors (whole run): {sum(errors.values())} {dict(sorted(errors.items()))}")
    print(
        f"  refusals (409/422, the table moved on): {stats.refused} "
        f"{dict(sorted(stats.refusals.items()))}; reconnects {stats.reconnects}"
    )
    cores = os.cpu_count() or 1
    print(
        f"  CPU over the window ({cores} cores = {cores * result.window_s:.0f} CPU-s): "
        f"server {result.server_cpu_s:.1f} s, PostgreSQL {result.postgres_all_cpu_s:.1f} s "
        f"(the whole server: every backend, those that exited meanwhile included, and its "
        f"own processes; the service's backends live at the end alone "
        f"{result.postgres_cpu_s:.1f} s, {result.backends_gone} of those live at the start "
        f"exited), load client {result.client_cpu_s:.1f} s; whole machine busy "
        f"{result.machine_busy_s:.1f} of {result.machine_total_s:.1f} s (other users' "
        f"processes included)"
    )
    if result.committed:
        postgres = result.postgres_all_cpu_s
        if math.isnan(postgres):  # not on this machine: its live backends are what we see
            postgres = result.postgres_cpu_s
        per_action = {
            "server": result.server_cpu_s,
            "PostgreSQL": postgres,
            "client": result.client_cpu_s,
        }
        total_ms = 1000 * sum(per_action.values()) / result.committed
        print(
            "  CPU per committed action (all it causes: the action, the 4 views pushed, "
            "timers, presence): "
            + ", ".join(f"{k} {1000 * v / result.committed:.1f} ms" for k, v in per_action.items())
            + f"; total {total_ms:.1f} ms -> at most {1000 * cores / total_ms:,.0f} actions/s "
            f"on {cores} otherwise idle cores"
        )
    return rate


# --- pgbench --------------------------------------------------------------------------------
def pgbench(args: argparse.Namespace, url: str) -> float:
    binary = shutil.which("pgbench") or "/usr/bin/pgbench"
    subprocess.run(
        [binary, "-i", "-q", "-s", str(args.pgbench_scale), url], check=True, capture_output=True
    )
    tps, latency = tpcb(
        binary, url, args.pgbench_clients, args.pgbench_threads, args.pgbench_seconds
    )
    print(
        f"pgbench TPC-B: {tps:,.0f} tps (scale {args.pgbench_scale}, "
        f"-c {args.pgbench_clients} -j {args.pgbench_threads} -T {args.pgbench_seconds}"
        + (f", latency average {latency} ms)" if latency else ")")
    )
    return tps


# --- main -----------------------------------------------------------------------------------
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "LOAD_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        help="the PostgreSQL server to use (scratch databases are created on it)",
    )
    parser.add_argument("--tables", type=int, default=100, help="concurrent tables (4 bots each)")
    parser.add_argument("--workers", type=int, default=2, help="raiz serve worker processes")
    parser.add_argument(
        "--duration", type=float, default=60.0, help="seconds measured (after the ramp)"
    )
    parser.add_argument(
        "--ramp-s", type=float, default=10.0, help="the table slots start spread over this"
    )
    parser.add_argument(
        "--idle-s", type=float, default=3.0, help="server CPU measured idle first, this long"
    )
    parser.add_argument(
        "--max-actions", type=int, default=0, help="stop after N accepted (0: no limit)"
    )
    parser.add_argument("--lives", type=int, default=2, help="lives per player (match length)")
    parser.add_argument("--turn-timeout-ms", type=int, default=10_000)
    parser.add_argument("--claim-window-ms", type=int, default=50)
    parser.add_argument("--match-timeout-s", type=float, default=600.0)
    parser.add_argument("--pool-size", type=int, default=10, help="connections per worker")
    parser.add_argument("--log-level", default="INFO", help="the server's RAIZ_LOG_LEVEL")
    parser.add_argument("--pgbench-clients", type=int, default=8)
    parser.add_argument("--pgbench-threads", type=int, default=2)
    parser.add_argument("--pgbench-seconds", type=int, default=15)
    parser.add_argument("--pgbench-scale", type=int, default=10)
    parser.add_argument("--skip-pgbench", action="store_true")
    parser.add_argument("--keep-database", action="store_true", help="keep the service's data")
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        help="profile the server over the window with py-spy (collapsed stacks to this file)",
    )
    parser.add_argument(
        "--source",
        type=Path,
        default=ROOT,
        help="serve the app from this checkout (e.g. an older commit's `git archive`, for "
        "before/after figures; the bots always come from this one)",
    )
    parser.add_argument("--server-log", type=Path, default=None, help="append the server's log")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    suffix = f"{os.getpid()}_{uuid.uuid4().hex[:6]}"
    service_db, pgbench_db = f"raiz_load_{suffix}", f"raiz_load_pgbench_{suffix}"
    service_url = with_database(args.database_url, service_db)
    pgbench_url = with_database(args.database_url, pgbench_db)
    server = make_url(args.database_url)
    print(
        f"PostgreSQL {server.host}:{server.port or 5432}; this machine has "
        f"{os.cpu_count()} CPUs (server, bots and PostgreSQL share them)"
    )
    asyncio.run(admin(args.database_url, f'CREATE DATABASE "{service_db}"'))
    data_dir = Path(tempfile.mkdtemp(prefix="raiz-load-"))
    serve = ServeProcess(
        env={
            "DATABASE_URL": service_url,
            "RAIZ_ENV": "test",
            "RAIZ_DATA_DIR": str(data_dir),
            "RAIZ_PASSWORD_COST_LOG2": "10",
            "RAIZ_DEAL_DELAY_S": "0",
            "RAIZ_ALLOW_TIMER_OVERRIDES": "true",
            "RAIZ_PRESENCE_GRACE_S": "3600",
            # every load player signs up from this one address
            "RAIZ_SIGNUP_MAX_PER_ADDRESS": "1000000",
            "RAIZ_DB_POOL_SIZE": str(args.pool_size),
            "RAIZ_DB_MAX_OVERFLOW": "5",
            "RAIZ_LOG_LEVEL": args.log_level,
        },
        workers=args.workers,
        log_path=args.server_log,
        cwd=args.source,
    )
    rate = math.nan
    try:
        base = serve.start()
        assert serve.process is not None
        asyncio.run(create_operator(service_url))
        result = asyncio.run(load(args, base, service_url, serve.process.pid))
        rate = report_load(args, result)
    finally:
        serve.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        if args.keep_database:
            print(f"  kept the service's database: {service_url}")
        else:
            asyncio.run(
                admin(args.database_url, f'DROP DATABASE IF EXISTS "{service_db}" WITH (FORCE)')
            )
    if args.skip_pgbench:
        return
    try:
        asyncio.run(admin(args.database_url, f'CREATE DATABASE "{pgbench_db}"'))
        tps = pgbench(args, pgbench_url)
    finally:
        asyncio.run(
            admin(args.database_url, f'DROP DATABASE IF EXISTS "{pgbench_db}" WITH (FORCE)')
        )
    print(f"ratio durable actions/s ÷ pgbench TPS: {rate / tps:.2f} (goal ≥ 0.5)")


if __name__ == "__main__":
    main()
