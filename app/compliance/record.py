"""The signed record of a finished round, and the public formulas the verifier re-derives.

Pure (stdlib only).  A round's **record** is everything a signature vouches for: the table's
game, preset and options, and its money terms (currency, entry, fee snapshot: with them the
verifier derives every amount and account of the match's money, so the signatures bind the
money too); the round's id, number and start-state hash; the RNG round, its
version, commitment, revealed seed, client seeds and any test-only fixed streams; the length
and last hash of the round's log (the hash chain binds every entry, so this binds every
event); the final state hash, the summary and the end time.  Its hash,
``SHA-256(canonical JSON)``, is what gets signed and what becomes the round's Merkle leaf.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

from app.tables.roundlog import canonical_json

__all__ = (
    "ACCOUNT_NAMESPACE",
    "LEGACY_RECORD_FORMAT",
    "RECORD_FORMAT",
    "account_id",
    "record_hash",
    "round_record",
    "split_pool",
)

RECORD_FORMAT: Final = "raiz/round-record/2"
"""Rounds signed since 2026-11-30: the table part carries the money terms."""
LEGACY_RECORD_FORMAT: Final = "raiz/round-record/1"
"""Rounds signed before: the table part is game, preset and options only.  The verifier
rebuilds this form only for a round whose stored record names it; a round signed in the
current form cannot be passed off as a legacy one (its signature covers the other hash)."""
ACCOUNT_NAMESPACE: Final = uuid.UUID("6f1d3c52-8b0e-4c1a-9f7e-2d4b5a6c7e80")
"""The ledger's account-id namespace (docs/ledger.md): ids are derived, not looked up."""
FEE_BPS_DENOMINATOR: Final = 10_000


def round_record(
    *,
    table: Mapping[str, Any],
    round_id: str,
    number: int,
    start_state_hash: str,
    rng_round_id: str,
    rng_version: str,
    commitment: str,
    seed: str | None,
    client_seeds: Iterable[str],
    fixed_streams: Iterable[str],
    entries: int,
    last_hash: str,
    final_state_hash: str,
    summary: Mapping[str, Any],
    ended_at: str,
    record_format: str = RECORD_FORMAT,
) -> dict[str, Any]:
    """The record of one finished round (``table``: id, game, preset, options, and for the
    current format currency, entry_cents and fee_bps)."""
    table_part: dict[str, Any] = {
        "id": str(table["id"]),
        "game": table["game"],
        "preset": table["preset"],
        "options": dict(table["options"]),
    }
    if record_format != LEGACY_RECORD_FORMAT:
        table_part.update(
            currency=table["currency"],
            entry_cents=table["entry_cents"],
            fee_bps=table["fee_bps"],
        )
    return {
        "format": record_format,
        "table": table_part,
        "round": {"id": round_id, "number": number, "start_state_hash": start_state_hash},
        "rng": {
            "round_id": rng_round_id,
            "version": rng_version,
            "commitment": commitment,
            "seed": seed,
            "client_seeds": list(client_seeds),
            "fixed_streams": sorted(fixed_streams),
        },
        "log": {"entries": entries, "last_hash": last_hash},
        "final_state_hash": final_state_hash,
        "summary": dict(summary),
        "ended_at": ended_at,
    }


def record_hash(record: Mapping[str, Any]) -> bytes:
    """``SHA-256(canonical JSON of the record)``: signed, and the round's Merkle leaf."""
    return hashlib.sha256(canonical_json(dict(record))).digest()


def account_id(account_type: str, currency: str, owner: str | None) -> str:
    """The ledger account id of ``(type, currency, owner)``: UUIDv5, as ``ledger`` derives it."""
    return str(uuid.uuid5(ACCOUNT_NAMESPACE, f"{account_type}:{currency}:{owner or '-'}"))


def split_pool(pool_cents: int, fee_bps: int, winners: int) -> tuple[int, list[int]]:
    """``(fee, payouts)``: fee rounded down, the first winners get the remainder's centavos."""
    fee = pool_cents * fee_bps // FEE_BPS_DENOMINATOR
    share, remainder = divmod(pool_cents - fee, winners)
    return fee, [share + 1 if position < remainder else share for position in range(winners)]
