"""Compliance reads over the database: rounds, replays, verification, bundles, money, hands.

Each method runs in the caller's session and writes nothing but what the caller asks
(``access.record_access``); the callers commit.  Verification and export go through the
same bundle structure as the offline verifier (:mod:`app.compliance.loader`).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from app.compliance.bundle import BundleReport, bundle_keys, verify_bundle
from app.compliance.checkpoints import inclusion_proofs
from app.compliance.loader import load_bundles
from app.db.paging import CreationOrder
from app.errors import ConflictError, NotFoundError
from app.games.errors import GameError
from app.tables.hosting import GAMES
from app.tables.models import Round, RoundResult, Seat, Table
from ledger.reads import LedgerReads

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Select
    from sqlalchemy.ext.asyncio import AsyncSession

    from app.config import Settings
    from rng.service import RngService

__all__ = ("NOT_DEALT", "ComplianceService", "allow_fixed_streams")

NEWEST_FIRST = CreationOrder(Round.created_at, Round.id, newest_first=True)
"""The order of round listings: latest start first, ties by id."""

NOT_DEALT = "not_dealt"
"""Why a hand has no ``verify_request``: the round ended before its deal (no card was drawn)."""


def allow_fixed_streams(settings: Settings) -> bool:
    """Test deployments may deal scripted decks; their rounds then verify (flagged)."""
    return settings.allow_fixed_decks and settings.env != "production"


class ComplianceService:
    """Compliance reads on one session."""

    def __init__(self, session: AsyncSession, settings: Settings, rng: RngService) -> None:
        self._session = session
        self._settings = settings
        self._rng = rng

    # --- rounds --------------------------------------------------------------------------
    async def round(self, round_id: uuid.UUID) -> Round:
        """A round by id (``round_not_found``)."""
        round_ = await self._session.get(Round, round_id)
        if round_ is None:
            raise NotFoundError("No such round.", code="round_not_found")
        return round_

    async def _after(
        self, round_id: uuid.UUID, anchor: Select[dt.datetime] | None = None
    ) -> ColumnElement[bool]:
        """The rounds after ``round_id`` in :data:`NEWEST_FIRST` order, ``anchor`` reading
        its start time (``round_not_found`` if it reads none).  A keyset: the page starts in
        the start-time index where an offset reads every row it skips, and it neither repeats
        nor skips a round when rounds start or finish between two pages."""
        missing = NotFoundError(
            "No round with this id to page from.",
            code="round_not_found",
            details={"before": str(round_id)},
        )
        return await NEWEST_FIRST.after_row(self._session, round_id, missing, anchor)

    async def bundle(self, round_id: uuid.UUID) -> dict[str, Any]:
        """The dispute bundle of a finished round's table, with inclusion proofs."""
        round_ = await self.round(round_id)
        if await self._session.get(RoundResult, round_id) is None:
            raise ConflictError(
                "The round is still in play; it can be verified once it has ended.",
                code="round_in_progress",
                details={"round_id": str(round_id)},
            )
        bundles = await load_bundles(
            self._session, self._rng, [round_.table_id], subject_round_id=round_id
        )
        bundle = bundles[round_.table_id]
        round_ids = [uuid.UUID(item["id"]) for item in bundle["rounds"]]
        checkpoint, proofs = await inclusion_proofs(self._session, round_ids)
        if checkpoint is not None:
            bundle["checkpoints"] = [checkpoint]
        for item in bundle["rounds"]:
            item["inclusion"] = proofs.get(uuid.UUID(item["id"]))
        return bundle

    async def verify(self, round_id: uuid.UUID) -> BundleReport:
        """Every check on one finished round (and the match's money if it ended the match)."""
        bundle = await self.bundle(round_id)
        return verify_bundle(
            bundle,
            round_ids={str(round_id)},
            public_keys=bundle_keys(bundle),
            allow_fixed_streams=allow_fixed_streams(self._settings),
        )

    async def replay(self, round_id: uuid.UUID) -> dict[str, Any]:
        """Every log entry in order; after each input or draw, the full state it led to."""
        bundle = await self.bundle(round_id)
        item = next(r for r in bundle["rounds"] if r["id"] == str(round_id))
        spec = GAMES[bundle["table"]["game"]]
        match = spec.restore(item["start_state"])
        entries: list[dict[str, Any]] = []
        problem = None
        for entry in item["log"]:
            line = dict(entry)
            entries.append(line)
            if entry["kind"] not in ("input", "chance") or problem is not None:
                continue
            body = entry["body"]
            try:
                if entry["kind"] == "chance":
                    match.apply_chance(body["value"])
                else:
                    match.apply({key: value for key, value in body.items() if key != "source"})
            except GameError as error:
                problem = f"entry {entry['seq']}: {error.code}: {error.message}"
                continue
            line["state"] = spec.full_view(match)
        number = item["number"]
        transfers = (bundle.get("money") or {}).get("transfers", [])
        return {
            "table": bundle["table"],
            "seats": bundle["seats"],
            "round": {key: value for key, value in item.items() if key != "log"},
            "entries": entries,
            "replay_error": problem,
            "money": {
                "round": [t for t in transfers if t["reference"].get("round") == number],
                "table": transfers,
            },
        }

    async def search_rounds(
        self,
        *,
        player: uuid.UUID | None,
        table: uuid.UUID | None,
        since: dt.datetime | None,
        until: dt.datetime | None,
        limit: int,
        offset: int = 0,
        before: uuid.UUID | None = None,
    ) -> list[dict[str, Any]]:
        """Rounds by player, table and start time, newest first; after the round ``before``
        in that order when given (``round_not_found`` if there is no such round)."""
        query = (
            select(Round, RoundResult, Table.preset)
            .join(Table, Table.id == Round.table_id)
            .outerjoin(RoundResult, RoundResult.round_id == Round.id)
            .order_by(*NEWEST_FIRST.order_by())
            .limit(limit)
            .offset(offset)
        )
        if before is not None:
            query = query.where(await self._after(before))
        if player is not None:
            query = query.where(
                Round.table_id.in_(
                    select(Seat.table_id).where(
                        Seat.user_id == player, Seat.engine_seat.is_not(None)
                    )
                )
            )
        if table is not None:
            query = query.where(Round.table_id == table)
        if since is not None:
            query = query.where(Round.created_at >= since)
        if until is not None:
            query = query.where(Round.created_at < until)
        rows = (await self._session.execute(query)).all()
        table_ids = {round_.table_id for round_, _, _ in rows}
        players: dict[uuid.UUID, list[dict[str, Any]]] = {table_id: [] for table_id in table_ids}
        for seat in await self._session.scalars(
            select(Seat)
            .where(Seat.table_id.in_(table_ids), Seat.engine_seat.is_not(None))
            .order_by(Seat.engine_seat)
        ):
            players[seat.table_id].append({"seat": seat.engine_seat, "user_id": str(seat.user_id)})
        return [
            {
                "round_id": str(round_.id),
                "table_id": str(round_.table_id),
                "preset": preset,
                "number": round_.number,
                "commitment": round_.commitment,
                "started_at": round_.created_at.isoformat(),
                "ended_at": None if result is None else result.ended_at.isoformat(),
                "summary": None if result is None else result.summary,
                "players": players[round_.table_id],
            }
            for round_, result, preset in rows
        ]

    # --- money ---------------------------------------------------------------------------
    async def money_history(
        self, user_id: uuid.UUID, *, limit: int, before_version: int | None
    ) -> dict[str, Any]:
        """A player's wallet entries, newest first, each linked to its table and round."""
        reads = LedgerReads(self._session)
        wallet = reads.wallet_id(user_id)
        account = await reads.find_account(wallet)
        if account is None:
            return {
                "user_id": str(user_id),
                "account_id": str(wallet),
                "balance_cents": 0,
                "lines": [],
                "next_before_version": None,
            }
        statement = await reads.statement(wallet, limit=limit, before_version=before_version)
        keys = {
            (uuid.UUID(str(line.reference["table"])), line.reference.get("round"))
            for line in statement.lines
            if "table" in line.reference
        }
        rounds: dict[tuple[uuid.UUID, int], uuid.UUID] = {}
        if keys:
            for found_id, found_table, found_number in await self._session.execute(
                select(Round.id, Round.table_id, Round.number).where(
                    Round.table_id.in_({table_id for table_id, _ in keys})
                )
            ):
                rounds[(found_table, found_number)] = found_id
        lines = []
        for line in statement.lines:
            table_ref = line.reference.get("table")
            number = line.reference.get("round")
            round_id = (
                rounds.get((uuid.UUID(str(table_ref)), number))
                if table_ref and isinstance(number, int)
                else None
            )
            lines.append(
                {
                    "transfer_id": line.transfer_id,
                    "kind": line.kind,
                    "amount_cents": line.amount_cents,
                    "balance_after_cents": line.balance_after_cents,
                    "account_version": line.account_version,
                    "created_at": line.created_at.isoformat(),
                    "reference": line.reference,
                    "table_id": table_ref,
                    "round_number": number if isinstance(number, int) else None,
                    "round_id": None if round_id is None else str(round_id),
                }
            )
        return {
            "user_id": str(user_id),
            "account_id": str(wallet),
            "balance_cents": account.balance_cents,
            "lines": lines,
            "next_before_version": statement.next_before_version,
        }

    # --- a player's own hands ------------------------------------------------------------
    async def hand_history(
        self,
        user_id: uuid.UUID,
        *,
        limit: int,
        offset: int = 0,
        before: uuid.UUID | None = None,
    ) -> list[dict[str, Any]]:
        """The player's finished rounds, newest first, as the player may see them; after the
        round ``before`` in that order when given, which must be one of them
        (``round_not_found`` otherwise: another player's round is not a place to page from)."""
        query = (
            select(Round, Seat.engine_seat)
            .join(Seat, Seat.table_id == Round.table_id)
            .join(RoundResult, RoundResult.round_id == Round.id)
            .where(Seat.user_id == user_id, Seat.engine_seat.is_not(None))
        )
        page = query.order_by(*NEWEST_FIRST.order_by()).limit(limit).offset(offset)
        if before is not None:
            anchor = query.where(Round.id == before).with_only_columns(Round.created_at)
            page = page.where(await self._after(before, anchor))
        rows = (await self._session.execute(page)).all()
        history = []
        table_ids = list({round_.table_id for round_, _ in rows})
        # only the page's rounds (a table's other rounds, their logs and its money are not
        # shown): a page's cost is its own rounds', however long the matches
        bundles = (
            await load_bundles(
                self._session,
                self._rng,
                table_ids,
                round_ids=[round_.id for round_, _ in rows],
                with_money=False,
            )
            if table_ids
            else {}
        )
        for round_, seat in rows:
            bundle = bundles[round_.table_id]
            item = next(r for r in bundle["rounds"] if r["id"] == str(round_.id))
            history.append(_hand(bundle, item, int(seat or 0)))
        return history


def _hand(bundle: dict[str, Any], item: dict[str, Any], seat: int) -> dict[str, Any]:
    spec = GAMES[bundle["table"]["game"]]
    events = [spec.event_from_dict(e["body"]) for e in item["log"] if e["kind"] == "event"]
    chances = [e["body"] for e in item["log"] if e["kind"] == "chance"]
    state = item["start_state"]
    deck_size = int(state["decks"]) * 52
    reshuffles = [len(body["value"]) for body in chances if body.get("kind") == "reshuffle"]
    first_dealer = any(body.get("kind") == "first_dealer" for body in chances)
    dealt = any(body.get("kind") == "deal" for body in chances)
    rng = item["rng"]
    verify_request: dict[str, Any] | None = None
    verify_unavailable: str | None = None
    if dealt:
        verify_request = {
            "commitment": item["commitment"],
            "seed": rng["seed"],
            "client_seeds": rng["client_seeds"],
            "version": item["rng_version"],
            "deck_size": deck_size,
            "reshuffle_sizes": reshuffles,
        }
        if first_dealer:
            verify_request["player_count"] = int(state["seats"])
    else:
        # The match ended before this round's deal (abandoned in the client-seed window):
        # nothing was drawn from the seed, so a request would "verify" a deck nobody was dealt.
        verify_unavailable = NOT_DEALT
    return {
        "table_id": bundle["table"]["id"],
        "round_id": item["id"],
        "number": item["number"],
        "seat": seat,
        "rng_round_id": item["rng_round_id"],
        "commitment": item["commitment"],
        "seed": rng["seed"],
        "client_seeds": rng["client_seeds"],
        "rng_version": item["rng_version"],
        "ended_at": item["result"]["ended_at"],
        "summary": item["result"]["summary"],
        "events": spec.visible_events(events, seat),
        "verify_request": verify_request,
        "verify_unavailable": verify_unavailable,
    }
