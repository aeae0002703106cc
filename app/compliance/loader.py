"""Reads a table's rounds, logs, signatures, RNG reveals and ledger records into bundles.

Everything goes into the ``raiz/dispute-bundle/1`` structure the pure verifier reads, so the
service, the command line and the offline verifier check exactly the same data.  The RNG
records come through the RNG service (``RngService.public_rounds``), the money through the
ledger's read API; a handful of queries serve a whole batch of tables.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, func, select
from sqlalchemy.dialects.postgresql import aggregate_order_by

from app.compliance.bundle import BUNDLE_FORMAT
from app.compliance.models import Checkpoint, RoundSignature, SigningKey
from app.db.base import utcnow
from app.tables.models import Round, RoundLogEntry, RoundResult, Seat, Table
from ledger.reads import LedgerReads

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from ledger.records import TransferResult
    from rng.service import RngService

__all__ = (
    "checkpoint_dict",
    "load_bundles",
    "public_key_dicts",
    "table_dict",
)


_LOGS = select(
    RoundLogEntry.round_id,
    func.json_agg(
        aggregate_order_by(
            func.json_build_object(
                "seq",
                RoundLogEntry.seq,
                "kind",
                RoundLogEntry.kind,
                "body",
                RoundLogEntry.body,
                "hash",
                func.encode(RoundLogEntry.hash, "hex"),
            ),
            RoundLogEntry.seq,
        ),
        type_=JSON,
    ),
).group_by(RoundLogEntry.round_id)
"""Each round's log as one JSON array built by PostgreSQL (in ``seq`` order, hashes in hex):
one document decoded per round instead of one row and one JSONB body per entry."""


def table_dict(table: Table) -> dict[str, Any]:
    """The bundle's ``table`` section."""
    return {
        "id": str(table.id),
        "game": table.game,
        "preset": table.preset,
        "options": table.options,
        "seat_count": table.seat_count,
        "entry_cents": table.entry_cents,
        "currency": table.currency,
        "fee_bps": table.fee_bps,
        "status": table.status,
        "result": table.result,
    }


def _transfer_dict(transfer: TransferResult) -> dict[str, Any]:
    return {
        "id": transfer.id,
        "kind": str(transfer.kind),
        "amount_cents": transfer.amount_cents,
        "debit_account_id": str(transfer.debit_account_id),
        "credit_account_id": str(transfer.credit_account_id),
        "reverses_id": transfer.reverses_id,
        "reference": transfer.reference,
        "created_at": transfer.created_at.isoformat(),
    }


def checkpoint_dict(checkpoint: Checkpoint) -> dict[str, Any]:
    """The bundle (and API) form of a checkpoint."""
    return {
        "id": checkpoint.id,
        "tree_size": checkpoint.tree_size,
        "root": bytes(checkpoint.root).hex(),
        "key_id": checkpoint.key_id,
        "signature": bytes(checkpoint.signature).hex(),
        "created_at": checkpoint.created_at.isoformat(),
    }


async def public_key_dicts(session: AsyncSession) -> list[dict[str, Any]]:
    """Every registered signing key (oldest first)."""
    keys = await session.scalars(select(SigningKey).order_by(SigningKey.created_at))
    return [
        {
            "key_id": key.key_id,
            "algorithm": key.algorithm,
            "public_key": bytes(key.public_key).hex(),
            "created_at": key.created_at.isoformat(),
        }
        for key in keys
    ]


async def _money(session: AsyncSession, tables: Sequence[Table]) -> dict[uuid.UUID, Any]:
    """The ``money`` section of each of ``tables`` (a few queries per currency, whatever the
    number of tables)."""
    money: dict[uuid.UUID, Any] = {}
    for currency in sorted({table.currency for table in tables}):
        reads = LedgerReads(session, currency=currency)
        escrows = {
            table.id: reads.escrow_id(table.id) for table in tables if table.currency == currency
        }
        escrow_ids = list(escrows.values())
        accounts = await reads.find_accounts(escrow_ids)
        histories = await reads.account_transfers(escrow_ids)
        settlements = await reads.find_settlements([f"settle:{table_id}" for table_id in escrows])
        for table_id, escrow_id in escrows.items():
            account = accounts.get(escrow_id)
            settlement = settlements.get(f"settle:{table_id}")
            money[table_id] = {
                "currency": currency,
                "escrow": {
                    "account_id": str(escrow_id),
                    "balance_cents": 0 if account is None else account.balance_cents,
                    "closed": account is not None and account.closed,
                },
                "transfers": [_transfer_dict(transfer) for transfer in histories[escrow_id]],
                "settlement": None
                if settlement is None
                else {
                    "id": settlement.id,
                    "fee_bps": settlement.fee_bps,
                    "pool_cents": settlement.pool_cents,
                    "fee_cents": settlement.fee_cents,
                    "winners": [str(winner) for winner in settlement.winners],
                    "payouts_cents": list(settlement.payouts_cents),
                },
            }
    return money


async def load_bundles(
    session: AsyncSession,
    rng: RngService,
    table_ids: Sequence[uuid.UUID],
    *,
    subject_round_id: uuid.UUID | None = None,
    round_ids: Sequence[uuid.UUID] | None = None,
    with_money: bool = True,
) -> dict[uuid.UUID, dict[str, Any]]:
    """The dispute bundle of each table (finished rounds only), without inclusion proofs.

    ``round_ids`` keeps only those rounds (and reads only their logs and RNG records), and
    ``with_money=False`` leaves the money out (``None``): the partial bundles a player's hand
    history reads, a page of rounds of long matches, not a verifiable bundle.
    """
    tables = {
        table.id: table
        for table in await session.scalars(select(Table).where(Table.id.in_(table_ids)))
    }
    seats: dict[uuid.UUID, list[dict[str, Any]]] = {table_id: [] for table_id in tables}
    for seat in await session.scalars(
        select(Seat)
        .where(Seat.table_id.in_(table_ids), Seat.engine_seat.is_not(None))
        .order_by(Seat.table_id, Seat.engine_seat)
    ):
        seats[seat.table_id].append(
            {
                "engine_seat": seat.engine_seat,
                "user_id": str(seat.user_id),
                "entry_transfer_id": seat.entry_transfer_id,
            }
        )
    rows = (
        await session.execute(
            select(Round, RoundResult)
            .join(RoundResult, RoundResult.round_id == Round.id)
            .where(
                Round.table_id.in_(table_ids),
                *(() if round_ids is None else (Round.id.in_(round_ids),)),
            )
            .order_by(Round.table_id, Round.number)
        )
    ).all()
    round_ids = [round_.id for round_, _ in rows]
    logs: dict[uuid.UUID, list[dict[str, Any]]] = {round_id: [] for round_id in round_ids}
    for round_id, log in await session.execute(_LOGS.where(RoundLogEntry.round_id.in_(round_ids))):
        logs[round_id] = log
    signatures = {
        row.round_id: row
        for row in await session.scalars(
            select(RoundSignature).where(RoundSignature.round_id.in_(round_ids))
        )
    }
    public = await rng.public_rounds([round_.rng_round_id for round_, _ in rows])
    bundles: dict[uuid.UUID, dict[str, Any]] = {}
    keys = await public_key_dicts(session)
    finished = [table for table in tables.values() if table.status == "finished"]
    money = await _money(session, finished) if with_money else {}
    exported_at = utcnow().isoformat()
    for table_id, table in tables.items():
        bundles[table_id] = {
            "format": BUNDLE_FORMAT,
            "exported_at": exported_at,
            "subject": {
                "table_id": str(table_id),
                "round_id": None if subject_round_id is None else str(subject_round_id),
            },
            "table": table_dict(table),
            "seats": seats[table_id],
            "rounds": [],
            "money": money.get(table_id),
            "checkpoints": [],
            "public_keys": keys,
        }
    for round_, result in rows:
        rng_round = public.get(round_.rng_round_id)
        signature = signatures.get(round_.id)
        bundles[round_.table_id]["rounds"].append(
            {
                "id": str(round_.id),
                "number": round_.number,
                "rng_round_id": str(round_.rng_round_id),
                "commitment": round_.commitment,
                "rng_version": round_.rng_version,
                "start_state": round_.start_state,
                "start_state_hash": round_.start_state_hash,
                "created_at": round_.created_at.isoformat(),
                "log": logs[round_.id],
                "result": {
                    "final_state_hash": result.final_state_hash,
                    "last_hash": bytes(result.last_hash).hex(),
                    "entries": result.entries,
                    "summary": result.summary,
                    "ended_at": result.ended_at.isoformat(),
                },
                "rng": {
                    "version": rng_round.version if rng_round else None,
                    "commitment": rng_round.commitment if rng_round else None,
                    "seed": rng_round.seed if rng_round else None,
                    "client_seeds": list(rng_round.client_seeds) if rng_round else [],
                    "contributors": list(rng_round.contributors) if rng_round else [],
                    "streams": [
                        {"label": stream.label, "fixed": stream.fixed}
                        for stream in (rng_round.streams if rng_round else ())
                    ],
                },
                "signature": None
                if signature is None
                else {
                    "key_id": signature.key_id,
                    "signature": bytes(signature.signature).hex(),
                    "record_hash": bytes(signature.record_hash).hex(),
                    "record": signature.record,
                },
                "inclusion": None,
            }
        )
    return bundles
