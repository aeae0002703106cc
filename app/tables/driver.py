"""Drives a table's live match: inputs in, chance from the RNG service, the round log,
round and match transitions, settlement through the ledger, the next deadline.

Every method runs inside the caller's transaction, with the table row locked
(``SELECT ... FOR UPDATE``) so the actions of one table are serialized; nothing commits
here.  A refused input raises before anything is written, so the caller's rollback leaves
the database as it was.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, text, true
from sqlalchemy.orm import defer

from app.compliance.signatures import sign_round
from app.db.base import transaction_clock
from app.games.events import ClaimResolved, Event
from app.metrics import count_on_commit
from app.tables import metrics
from app.tables.hosting import GameSpec, HostedMatch, match_ended, round_ended
from app.tables.models import Round, RoundLogEntry, RoundResult, Seat, Table
from app.tables.roundlog import entry_hash, genesis_hash
from app.timers import schedule_deadline

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.tables.context import TableContext

__all__ = ("TableDriver", "notify_channel")

_PERMUTATION_KINDS = frozenset({"deal", "reshuffle"})

# Built once (every action reads it): the round in play and its last log entry, in one
# statement; the round's start state (a whole match snapshot) is not loaded, nor needed.
_LAST_ENTRY = (
    select(RoundLogEntry.seq, RoundLogEntry.hash)
    .where(RoundLogEntry.round_id == Round.id)
    .order_by(RoundLogEntry.seq.desc())
    .limit(1)
    .lateral()
)
_CURRENT_ROUND = (
    select(Round, _LAST_ENTRY.c.seq, _LAST_ENTRY.c.hash)
    .outerjoin(_LAST_ENTRY, true())
    .where(Round.table_id == bindparam("table_id"), Round.number == bindparam("number"))
    .options(defer(Round.start_state, raiseload=True))
)


def notify_channel(table_id: uuid.UUID) -> str:
    """The PostgreSQL NOTIFY channel of a table (one per table, shared by all workers)."""
    return f"raiz_table_{table_id.hex}"


class TableDriver:
    """The match of one locked table, for the duration of one transaction."""

    def __init__(self, context: TableContext, table: Table, spec: GameSpec) -> None:
        self._context = context
        self._session: AsyncSession = context.session
        self.table = table
        self.spec = spec
        self._match: HostedMatch | None = None
        self._loaded_token: int | None = None
        """The engine's timer token when the match was loaded (its timer is already armed)."""
        self._round: Round | None = None
        self._seq = 0
        self._last_hash = b""
        self._batch: list[dict[str, Any]] = []
        self._deal_due_at: dt.datetime | None = None

    async def _now(self) -> dt.datetime:
        """The transaction's moment on the database's clock (``transaction_clock``: read with
        the table's lock, no extra round trip): every time this change records and every
        deadline it arms, the same for whichever worker arms or fires it."""
        return await transaction_clock(self._session)

    # --- loading -----------------------------------------------------------------------------
    @property
    def match(self) -> HostedMatch:
        """The live match, restored from the table's snapshot on first use."""
        if self._match is None:
            if self.table.match_state is None:
                raise RuntimeError("table has no match")
            self._match = self.spec.restore(self.table.match_state)
            deadline = self._match.current_deadline()
            self._loaded_token = deadline.token if deadline is not None else None
        return self._match

    async def current_round(self) -> Round:
        """The round in play (loaded with its chain position on first use)."""
        if self._round is None:
            row = (
                await self._session.execute(
                    _CURRENT_ROUND, {"table_id": self.table.id, "number": self.table.round_number}
                )
            ).first()
            if row is None:
                raise RuntimeError("table has no current round")
            self._round, last_seq, last_hash = row
            if last_seq is None:
                self._seq, self._last_hash = 0, genesis_hash(self._round.id, self._round.commitment)
            else:
                self._seq, self._last_hash = last_seq, last_hash
        return self._round

    async def seats_by_engine_seat(self) -> dict[int, Seat]:
        """The seated players keyed by their index in the match."""
        rows = await self._session.scalars(
            select(Seat).where(
                Seat.table_id == self.table.id,
                Seat.left_at.is_(None),
                Seat.engine_seat.is_not(None),
            )
        )
        return {seat.engine_seat: seat for seat in rows if seat.engine_seat is not None}

    # --- the log -----------------------------------------------------------------------------
    async def _log(self, kind: str, body: dict[str, Any]) -> None:
        round_ = await self.current_round()
        self._seq += 1
        self._last_hash = entry_hash(self._last_hash, self._seq, kind, body)
        self._session.add(
            RoundLogEntry(
                round_id=round_.id,
                seq=self._seq,
                kind=kind,
                body=body,
                hash=self._last_hash,
                created_at=await self._now(),
            )
        )

    async def _log_events(self, events: Sequence[Event]) -> None:
        for event in events:
            body = event.to_dict()
            self._batch.append(body)
            await self._log("event", body)

    async def note(self, body: dict[str, Any]) -> None:
        """A service-level fact of the round (freeze, client seed...): chained, not replayed."""
        await self._log("note", body)

    # --- starting ----------------------------------------------------------------------------
    async def start(self, seats: Sequence[Seat]) -> None:
        """Start the match with ``seats`` (in chair order) and begin round 1."""
        table = self.table
        for index, seat in enumerate(seats):
            seat.engine_seat = index
        options = self.spec.options_from_dict(table.options)
        self._match = self.spec.new_match(options, len(seats))
        table.status = "running"
        table.started_at = await self._now()
        count_on_commit(self._session, metrics.TABLES_STARTED)
        # The match's own opening events (e.g. ``match_started``) open round 1's log.
        await self._begin_round(1, initial_events=tuple(self._match.events))

    async def _begin_round(self, number: int, initial_events: Sequence[Event] = ()) -> None:
        """Commit the round's seed, record its start state, and arm (or run) the deal."""
        table = self.table
        commitment = await self._context.rng.commit_round(table.id, number)
        round_ = Round(
            id=uuid.uuid4(),
            table_id=table.id,
            number=number,
            rng_round_id=commitment.id,
            commitment=commitment.commitment,
            rng_version=commitment.version,
            start_state=self.match.snapshot(),
            start_state_hash=self.match.state_hash(),
            created_at=await self._now(),
        )
        self._session.add(round_)
        table.round_number = number
        self._round = round_
        self._seq, self._last_hash = 0, genesis_hash(round_.id, round_.commitment)
        await self._log_events(initial_events)
        delay_s = self._context.settings.deal_delay_s
        if delay_s > 0:
            due_at = await self._now() + dt.timedelta(seconds=delay_s)
            schedule_deadline(self._session, table.id, "deal", f"deal:{number}", due_at)
            self._deal_due_at = due_at
            self._context.wake_at(due_at)
        else:
            await self.resolve_chance()

    async def resolve_chance(self) -> None:
        """Feed every pending chance input of the current round from its seed's streams."""
        while (request := self.match.pending_chance()) is not None:
            if request.round_number != self.table.round_number:
                await self._begin_round(request.round_number)
                return
            round_ = await self.current_round()
            stream = await self._context.rng.stream(round_.rng_round_id, request.label)
            value: int | list[int] = (
                stream.permutation(request.size)
                if request.kind in _PERMUTATION_KINDS
                else stream.randbelow(request.size)
            )
            events = self.match.apply_chance(value)
            await self._log(
                "chance",
                {
                    "type": "chance",
                    "kind": request.kind,
                    "round": request.round_number,
                    "label": request.label,
                    "value": value,
                },
            )
            await self._log_events(events)
            await self._after(events)

    # --- inputs ------------------------------------------------------------------------------
    async def apply_input(self, record: dict[str, Any], source: dict[str, Any]) -> None:
        """Apply a player's or a timer's input (raises ``GameError`` before writing)."""
        events = self.match.apply(record)
        await self._log("input", {**record, "source": source})
        await self._log_events(events)
        await self._after(events)
        await self.resolve_chance()

    async def _after(self, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, ClaimResolved) and event.outcome in ("closed", "burned"):
                count_on_commit(self._session, metrics.CLAIMS.labels(event.outcome))
        ended = round_ended(events)
        if ended is not None:
            await self._finish_round(ended.to_dict())
        finished = match_ended(events)
        if finished is not None:
            await self._finish_match(finished.winner, finished.to_dict())

    async def _finish_round(self, summary: dict[str, Any]) -> None:
        round_ = await self.current_round()
        result = RoundResult(
            round_id=round_.id,
            final_state_hash=self.match.state_hash(),
            last_hash=self._last_hash,
            entries=self._seq,
            summary=summary,
            ended_at=await self._now(),
        )
        self._session.add(result)
        await self._context.rng.reveal(round_.rng_round_id)
        # Signed in the round's last transaction: a committed round is a signed round.
        await sign_round(
            self._session, self._context.settings, self._context.rng, self.table, round_, result
        )
        result_label = str(summary.get("result", "unknown"))
        count_on_commit(self._session, metrics.ROUNDS_FINISHED.labels(result_label))

    async def _finish_match(self, winner_seat: int, summary: dict[str, Any]) -> None:
        """Pay the winner at the table's fee snapshot and close the escrow."""
        table = self.table
        if self._round is not None and not await self._round_has_result(self._round.id):
            await self._finish_round({"result": "match_ended", **summary})
        seats = await self.seats_by_engine_seat()
        winner = seats[winner_seat]
        settlement = await self._context.ledger.settle_table(
            f"settle:{table.id}",
            table.id,
            table.fee_bps,
            [winner.user_id],
            {"table": str(table.id), "round": table.round_number},
        )
        await self._context.ledger.close_escrow(table.id)
        table.status = "finished"
        table.ended_at = await self._now()
        table.frozen_at = None
        table.result = {
            "reason": summary.get("reason"),
            "winner_user_id": str(winner.user_id),
            "winner_seat": winner_seat,
            "placements": [
                {"seat": seat, "place": place, "user_id": str(seats[seat].user_id)}
                for seat, place in summary.get("placements", [])
            ],
            "pool_cents": settlement.pool_cents,
            "fee_cents": settlement.fee_cents,
            "payouts": [
                {"user_id": str(user_id), "amount_cents": amount}
                for user_id, amount in zip(
                    settlement.winners, settlement.payouts_cents, strict=True
                )
            ],
        }
        count_on_commit(self._session, metrics.TABLES_FINISHED)
        count_on_commit(self._session, metrics.PAYOUT_CENTS, sum(settlement.payouts_cents))
        count_on_commit(self._session, metrics.FEE_CENTS, settlement.fee_cents)

    async def _round_has_result(self, round_id: uuid.UUID) -> bool:
        return (await self._session.get(RoundResult, round_id)) is not None

    # --- saving ------------------------------------------------------------------------------
    async def save(self) -> None:
        """Persist the live state, arm the next timer, and wake every watcher on commit.

        A change only its author may see (a secret decision, a claim in the claim window:
        see :meth:`_is_private`) changes nobody else's view: the step stays, its events are
        appended to the table's last events (the author's own view shows them; everyone
        else's shows the same events as before) and nobody is woken.  Otherwise the others
        would learn *that* somebody decided or claimed -- and a claim means two melds in hand,
        which the claim window exists to hide (RULES.md §3).
        """
        table = self.table
        if self._match is not None:
            table.match_state = self._match.snapshot()
        if self._is_private():
            table.last_events = [*(table.last_events or []), *self._batch]
            self._batch = []
            return
        table.step += 1
        table.last_events = self._batch
        self._batch = []
        waiting_for_deal = table.status == "running" and self.match.pending_chance() is not None
        if self._deal_due_at is not None and waiting_for_deal:
            table.timer_kind, table.timer_due_at = "deal", self._deal_due_at
        elif not (waiting_for_deal and table.timer_kind == "deal") and not self._timer_unchanged():
            table.timer_kind, table.timer_due_at = None, None
            if table.status == "running" and table.frozen_at is None:
                await self.arm_deadline()
        await self._session.execute(
            text("SELECT pg_notify(:channel, :payload)"),
            {"channel": notify_channel(table.id), "payload": str(table.step)},
        )

    def _is_private(self) -> bool:
        """Whether this change is seen by its author alone: every event it emitted is hidden
        from spectators and the engine's timer is still the one it had before (also while
        the table is frozen and no timer runs: spectators, and players who poll without a
        heartbeat, still watch a frozen table)."""
        if not self._batch or not self._same_engine_timer():
            return False
        events = [self.spec.event_from_dict(event) for event in self._batch]
        return not self.spec.visible_events(events, None)

    def _same_engine_timer(self) -> bool:
        """Whether the engine's timer is still the one it had when the match was loaded (a
        draw inside a turn, one player's decision, a claim)."""
        if self.table.status != "running" or self._match is None:
            return False
        deadline = self._match.current_deadline()
        return deadline is not None and deadline.token == self._loaded_token

    def _timer_unchanged(self) -> bool:
        """Whether the engine's timer is still the one armed before this change: it keeps
        its due time."""
        table = self.table
        if table.frozen_at is not None or table.timer_due_at is None or table.timer_kind == "deal":
            return False
        return self._same_engine_timer()

    async def arm_deadline(self) -> None:
        """Schedule the engine's current timer (if any) as a durable deadline."""
        deadline = self.match.current_deadline()
        if deadline is None:
            return
        due_at = await self._now() + dt.timedelta(milliseconds=deadline.duration_ms)
        schedule_deadline(self._session, self.table.id, "game", str(deadline.token), due_at)
        self.table.timer_kind, self.table.timer_due_at = deadline.kind, due_at
        self._context.wake_at(due_at)
