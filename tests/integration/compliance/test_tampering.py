"""Tampering with stored data, past the append-only triggers, is caught with the right reason
by ``verify-round`` (the API and the command's service), by ``verify-all``, and by the
offline verifier on a bundle exported after the tampering."""

from __future__ import annotations

import io
import json

import pytest

from app.compliance.audit import verify_all
from app.compliance.verify_bundle import main as offline_main
from app.db import Database
from tests.helpers import auth
from tests.integration.compliance.helpers import play_match, raw, staff

pytestmark = [pytest.mark.asyncio, pytest.mark.round_tampering]


async def _pick_event(connection, round_id: str, event_type: str) -> tuple[int, str]:
    row = await connection.fetchrow(
        "SELECT seq, body::text AS body FROM game.round_log "
        "WHERE round_id = $1 AND kind = 'event' AND body->>'type' = $2 ORDER BY seq LIMIT 1",
        round_id,
        event_type,
    )
    assert row is not None, event_type
    return row["seq"], row["body"]


async def test_every_tampering_is_caught_with_its_reason(client, settings, tmp_path):
    match = await play_match(client, settings)
    auditor = await staff(client, settings)
    response = await client.get(
        f"/compliance/rounds?table={match['table_id']}", headers=auth(auditor)
    )
    rounds = sorted(response.json(), key=lambda item: item["number"])
    assert len(rounds) >= 2, "the match needs two rounds to swap their signatures"
    first, last = rounds[0]["round_id"], rounds[-1]["round_id"]
    table_id = match["table_id"]
    await client.post("/compliance/checkpoints", headers=auth(auditor))
    url = settings.database_url

    async def flip_event_byte(connection):
        seq, body = await _pick_event(connection, first, "dealt")
        changed = body.replace('"vira": ', '"vira": 1', 1)  # one more digit in the vira's card
        assert changed != body
        await connection.execute(
            "UPDATE game.round_log SET body = $3::jsonb WHERE round_id = $1 AND seq = $2",
            first,
            seq,
            changed,
        )

        async def restore(c):
            await c.execute(
                "UPDATE game.round_log SET body = $3::jsonb WHERE round_id = $1 AND seq = $2",
                first,
                seq,
                body,
            )

        return restore, ("chain", f"entry {seq}")

    async def delete_event(connection):
        seq, _ = await _pick_event(connection, first, "decision_made")
        row = await connection.fetchrow(
            "DELETE FROM game.round_log WHERE round_id = $1 AND seq = $2 RETURNING *", first, seq
        )

        async def restore(c):
            await c.execute(
                "INSERT INTO game.round_log VALUES ($1, $2, $3, $4, $5, $6)", *row.values()
            )

        return restore, ("chain", f"entry {seq}")

    async def reorder_events(connection):
        seq, _ = await _pick_event(connection, first, "decision_made")

        async def swap(c):
            move = "UPDATE game.round_log SET seq = $3 WHERE round_id = $1 AND seq = $2"
            async with c.transaction():
                await c.execute(move, first, seq, -1)
                await c.execute(move, first, seq + 1, seq)
                await c.execute(move, first, -1, seq + 1)

        await swap(connection)
        return swap, ("chain", f"entry {seq}")

    async def change_seed(connection):
        rng_round = await connection.fetchval(
            "SELECT rng_round_id FROM game.rounds WHERE id = $1", first
        )
        seed = await connection.fetchval(
            "SELECT seed FROM rng.reveals WHERE round_id = $1", rng_round
        )
        await connection.execute(
            "UPDATE rng.reveals SET seed = $2 WHERE round_id = $1",
            rng_round,
            bytes([seed[0] ^ 1]) + seed[1:],
        )

        async def restore(c):
            await c.execute("UPDATE rng.reveals SET seed = $2 WHERE round_id = $1", rng_round, seed)

        return restore, ("commitment", "seed")

    async def change_payout(connection):
        transfer = f"settle:{table_id}/payout/0"
        await connection.execute(
            "UPDATE ledger.transfers SET amount_cents = amount_cents - 100 WHERE id = $1", transfer
        )

        async def restore(c):
            await c.execute(
                "UPDATE ledger.transfers SET amount_cents = amount_cents + 100 WHERE id = $1",
                transfer,
            )

        return restore, ("money", f"transfer {transfer}")

    async def swap_signatures(connection):
        signatures = {
            row["round_id"]: row["signature"]
            for row in await connection.fetch(
                "SELECT round_id, signature FROM game.round_signatures WHERE round_id = ANY($1)",
                [first, last],
            )
        }
        update = "UPDATE game.round_signatures SET signature = $2 WHERE round_id = $1"
        a, b = signatures
        await connection.execute(update, a, signatures[b])
        await connection.execute(update, b, signatures[a])

        async def restore(c):
            for round_id, signature in signatures.items():
                await c.execute(update, round_id, signature)

        return restore, ("signature", "signature")

    async def change_start_state(connection):
        second = rounds[1]["round_id"]
        original = await connection.fetchval(
            "SELECT start_state::text FROM game.rounds WHERE id = $1", second
        )
        await connection.execute(
            "UPDATE game.rounds SET start_state = jsonb_set(start_state, '{lives,0}', '9') "
            "WHERE id = $1",
            second,
        )

        async def restore(c):
            await c.execute(
                "UPDATE game.rounds SET start_state = $2::jsonb WHERE id = $1", second, original
            )

        return restore, ("continuity", "start state")

    cases = {
        "flip a byte of an event": (flip_event_byte, first),
        "delete an event": (delete_event, first),
        "reorder two events": (reorder_events, first),
        "change a seed": (change_seed, first),
        "change a payout": (change_payout, last),
        "swap two signatures": (swap_signatures, first),
        "change a round's start state": (change_start_state, rounds[1]["round_id"]),
    }
    database = Database.connect(url, settings)
    try:
        for name, (tamper, subject) in cases.items():
            async with raw(url) as connection:
                restore, (check, item) = await tamper(connection)
            try:
                # verify-round (the API runs the service the command runs)
                response = await client.get(
                    f"/compliance/rounds/{subject}/verification", headers=auth(auditor)
                )
                report = response.json()
                assert not report["ok"], name
                assert (report["failure"]["check"], report["failure"]["item"]) == (check, item), (
                    name,
                    report["failure"],
                )
                # verify-all
                audit = await verify_all(database, settings)
                assert [(f.check, f.item) for _, f in audit.failures] == [(check, item)], (
                    name,
                    audit.failures,
                )
                # the offline verifier, on a bundle exported after the tampering
                bundle = (
                    await client.get(f"/compliance/rounds/{subject}/bundle", headers=auth(auditor))
                ).json()
                path = tmp_path / "bundle.json"
                path.write_text(json.dumps(bundle))
                output = io.StringIO()
                assert offline_main([str(path)], output) == 1, name
                printed = output.getvalue()
                assert printed.startswith("FAIL round "), printed
                assert f": {check}: {item}: " in printed, (name, printed)
            finally:
                async with raw(url) as connection:
                    await restore(connection)
            assert (await verify_all(database, settings)).ok, f"not restored after {name}"
    finally:
        await database.dispose()
