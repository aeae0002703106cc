"""A real match over HTTP, then everything compliance staff, players and third parties do
with it: search, replay, verify, checkpoints, bundles verified offline, access audit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from app.compliance.audit import verify_all
from app.db import Database
from tests.helpers import assert_error, auth
from tests.integration.compliance.helpers import play_match, staff

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[3]


async def _rounds(client, token, table_id):
    response = await client.get(f"/compliance/rounds?table={table_id}", headers=auth(token))
    assert response.status_code == 200, response.text
    return sorted(response.json(), key=lambda item: item["number"])


async def test_a_finished_match_verifies_and_its_bundle_verifies_offline(
    client, settings, tmp_path
):
    match = await play_match(client, settings)
    auditor = await staff(client, settings)
    rounds = await _rounds(client, auditor, match["table_id"])
    assert rounds and all(item["ended_at"] for item in rounds)
    assert {p["user_id"] for p in rounds[0]["players"]} == {u for u, _ in match["players"]}

    for item in rounds:
        response = await client.get(
            f"/compliance/rounds/{item['round_id']}/verification", headers=auth(auditor)
        )
        assert response.status_code == 200, response.text
        report = response.json()
        assert report["ok"], report
        assert report["rounds"][0]["notes"] == ["no checkpoint covers this round yet"]

    response = await client.post("/compliance/checkpoints", headers=auth(match["operator"]))
    assert response.status_code == 200, response.text
    checkpoint = response.json()
    assert checkpoint["tree_size"] == len(rounds)
    public = await client.get("/audit/checkpoints")
    assert public.status_code == 200 and public.json()[0] == checkpoint
    keys = (await client.get("/audit/public-keys")).json()
    assert [(key["key_id"], key["active"]) for key in keys] == [("dev1", True)]

    last = rounds[-1]["round_id"]
    response = await client.get(f"/compliance/rounds/{last}/bundle", headers=auth(auditor))
    assert response.status_code == 200, response.text
    bundle = response.json()
    assert bundle["subject"]["round_id"] == last
    assert all(item["inclusion"] for item in bundle["rounds"])
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    # A third party: no database, no service, no Raiz settings in the environment.
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RAIZ_", "DATABASE_URL", "TEST_DATABASE_URL", "PG"))
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.compliance.verify_bundle",
            str(path),
            "--public-key",
            f"dev1:{keys[0]['public_key']}",
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"PASS table {match['table_id']}: {len(rounds)} rounds")

    database = Database.connect(settings.database_url, settings)
    try:
        audit = await verify_all(database, settings)
    finally:
        await database.dispose()
    assert audit.ok, audit.failures
    assert (audit.rounds, audit.tables, audit.checkpoints) == (len(rounds), 1, 1)


async def test_replay_shows_every_event_with_the_full_state_and_the_money(client, settings):
    match = await play_match(client, settings)
    auditor = await staff(client, settings)
    rounds = await _rounds(client, auditor, match["table_id"])
    last = rounds[-1]
    response = await client.get(f"/compliance/rounds/{last['round_id']}", headers=auth(auditor))
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["replay_error"] is None
    entries = replay["entries"]
    assert [entry["seq"] for entry in entries] == list(range(1, len(entries) + 1))
    stepped = [entry for entry in entries if entry["kind"] in ("input", "chance")]
    assert stepped and all("state" in entry for entry in stepped)
    dealt = next(entry for entry in entries if entry["body"].get("type") == "dealt")
    state = next(entry["state"] for entry in entries if entry["seq"] == dealt["seq"] - 1)
    assert {"hands", "stock", "vira", "wilds", "pile", "decisions"} <= set(state["round"])
    assert sum(len(cards) for _, cards in state["round"]["hands"]) == 9 * len(
        state["round"]["seats"]
    )
    kinds = {transfer["kind"] for transfer in replay["money"]["round"]}
    assert kinds == {"house_fee", "payout"}
    assert {t["kind"] for t in replay["money"]["table"]} == {"entry_fee", "house_fee", "payout"}


async def test_money_history_links_each_movement_to_its_table_and_round(client, settings):
    match = await play_match(client, settings)
    auditor = await staff(client, settings)
    rounds = await _rounds(client, auditor, match["table_id"])
    user_id = match["players"][0][0]
    response = await client.get(f"/compliance/players/{user_id}/money", headers=auth(auditor))
    assert response.status_code == 200, response.text
    history = response.json()
    kinds = [line["kind"] for line in history["lines"]]
    assert kinds[-1] == "deposit"
    entry = next(line for line in history["lines"] if line["kind"] == "entry_fee")
    assert entry["table_id"] == match["table_id"] and entry["amount_cents"] == -500
    payouts = [line for line in history["lines"] if line["kind"] == "payout"]
    for line in payouts:
        assert line["round_id"] == rounds[-1]["round_id"]
    nobody = await client.get(f"/compliance/players/{uuid.uuid4()}/money", headers=auth(auditor))
    assert nobody.status_code == 200 and nobody.json()["lines"] == []


async def test_only_compliance_reads_and_every_read_is_in_the_access_log(client, settings):
    match = await play_match(client, settings, players=2, lives=1)
    auditor = await staff(client, settings)
    rounds = await _rounds(client, auditor, match["table_id"])
    round_id = rounds[0]["round_id"]
    player_token = match["players"][0][1]
    answers = []
    for path in (
        "/compliance/rounds",
        f"/compliance/rounds/{round_id}",
        f"/compliance/rounds/{round_id}/verification",
        f"/compliance/rounds/{round_id}/bundle",
        f"/compliance/players/{match['players'][0][0]}/money",
    ):
        for token in (player_token, match["operator"]):
            assert_error(await client.get(path, headers=auth(token)), 403, "forbidden")
        response = await client.get(path, headers=auth(auditor))
        assert response.status_code == 200, response.text
        answers.append(response.json())
    assert_error(
        await client.get(f"/compliance/rounds/{uuid.uuid4()}", headers=auth(auditor)),
        404,
        "round_not_found",
    )
    assert_error(await client.get("/admin/access-log", headers=auth(auditor)), 403, "forbidden")
    response = await client.get("/admin/access-log", headers=auth(match["operator"]))
    assert response.status_code == 200, response.text
    log = response.json()
    actions = [row["action"] for row in reversed(log)]
    assert actions == [
        "search_rounds",
        "search_rounds",
        "replay_round",
        "verify_round",
        "export_round",
        "player_money",
    ]
    assert {row["role"] for row in log} == {"compliance"}
    assert all(row["target"] == round_id for row in log[1:4])
    # what each read found, as its answer showed it
    searched, _, verified, _, money = answers
    details = [row["details"] for row in reversed(log)]
    assert details[1]["found"] == len(searched) and details[1]["table"] is None
    assert details[3] == {"ok": verified["ok"]} and verified["ok"] is True
    assert details[5] == {"lines": len(money["lines"])} and money["lines"]
    me = (await client.get("/auth/me", headers=auth(auditor))).json()
    assert {row["actor"] for row in log} == {me.get("id", me.get("user_id"))}


async def test_a_player_sees_own_hands_and_verifies_the_shuffle(client, settings):
    match = await play_match(client, settings)
    _, token = match["players"][1]
    response = await client.get("/players/me/hands?limit=50", headers=auth(token))
    assert response.status_code == 200, response.text
    hands = response.json()
    assert hands and all(hand["seed"] for hand in hands)
    for hand in hands:
        seat = hand["seat"]
        # every round of this match was dealt: each offers its verification request
        assert hand["verify_request"] is not None and hand["verify_unavailable"] is None
        dealt = next((e for e in hand["events"] if e["type"] == "dealt"), None)
        assert all("stock" not in event or event["type"] != "dealt" for event in hand["events"])
        if dealt is None:
            continue  # eliminated before this round: not dealt in
        assert "hands" not in dealt and "stock" not in dealt
        response = await client.post("/rng/verify", json=hand["verify_request"])
        assert response.status_code == 200, response.text
        deal = response.json()["deal"]
        seats = dealt["seats"]
        if seat in seats:
            position = seats.index(seat)
            mine = [deal[i] for i in range(position, 9 * len(seats), len(seats))]
            assert dealt["hand"] == mine
        for event in hand["events"]:
            assert event["type"] not in ("decision_made", "claimed") or event["seat"] == seat
    assert_error(
        await client.get("/players/me/hands", headers=auth(match["operator"])), 403, "forbidden"
    )


def _raiz(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DATABASE_URL": database_url, "RAIZ_ENV": "test"}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "audit", *arguments],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def test_the_audit_commands(client, settings, tmp_path):
    match = await play_match(client, settings, players=2, lives=2)
    auditor = await staff(client, settings)
    rounds = await _rounds(client, auditor, match["table_id"])
    url = settings.database_url
    checkpoint = _raiz(url, "checkpoint")
    assert checkpoint.returncode == 0, checkpoint.stderr
    assert json.loads(checkpoint.stdout.splitlines()[-1])["tree_size"] == len(rounds)
    verified = _raiz(url, "verify-round", rounds[-1]["round_id"])
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith(f"PASS round {rounds[-1]['round_id']}")
    everything = _raiz(url, "verify-all")
    assert everything.returncode == 0, everything.stdout + everything.stderr
    assert f"verify-all ok: {len(rounds)} rounds of 1 tables, 1 checkpoints" in everything.stdout
    assert "rounds/s" in everything.stdout
    parallel = _raiz(url, "verify-all", "--jobs", "2")
    assert parallel.returncode == 0, parallel.stdout + parallel.stderr
    assert f"verify-all ok: {len(rounds)} rounds of 1 tables" in parallel.stdout
    assert "rounds/s in 2 processes" in parallel.stdout
    refused = _raiz(url, "verify-all", "--jobs", "0")
    assert refused.returncode == 2 and "--jobs" in refused.stderr
    path = tmp_path / "dispute.json"
    exported = _raiz(url, "export-round", rounds[0]["round_id"], "-o", str(path))
    assert exported.returncode == 0, exported.stderr
    offline = subprocess.run(
        [sys.executable, "-m", "app.compliance.verify_bundle", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert offline.returncode == 0 and offline.stdout.startswith("PASS"), offline.stdout
    missing = _raiz(url, "verify-round", str(uuid.uuid4()))
    assert missing.returncode == 2 and "round_not_found" in missing.stderr
    log = (await client.get("/admin/access-log", headers=auth(match["operator"]))).json()
    assert [row["action"] for row in log[:2]] == ["export_round", "verify_round"]
    assert all(row["actor"].startswith("cli:") and row["role"] == "cli" for row in log[:2])
