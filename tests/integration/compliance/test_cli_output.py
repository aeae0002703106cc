"""``raiz audit export-round`` to a place it cannot write: a usage error before the round
is read, nothing recorded in the access log, and no "database unavailable" for a file error."""

from __future__ import annotations

import pytest

from tests.helpers import auth
from tests.integration.compliance.helpers import play_match, staff
from tests.integration.compliance.test_audit_api import _raiz, _rounds

pytestmark = pytest.mark.asyncio


async def test_an_export_to_a_missing_directory_is_refused_before_it_is_recorded(
    client, settings, tmp_path
):
    match = await play_match(client, settings, players=2, lives=1)
    auditor = await staff(client, settings)
    round_id = (await _rounds(client, auditor, match["table_id"]))[0]["round_id"]
    log_before = (await client.get("/admin/access-log", headers=auth(match["operator"]))).json()
    for target in (tmp_path / "no-such-dir" / "dispute.json", tmp_path):
        exported = _raiz(settings.database_url, "export-round", round_id, "-o", str(target))
        assert exported.returncode == 2, exported.stderr
        assert "Traceback" not in exported.stderr
        assert "database unavailable" not in exported.stderr
        assert "--output" in exported.stderr or "-o" in exported.stderr
    log = (await client.get("/admin/access-log", headers=auth(match["operator"]))).json()
    assert [row for row in log if row["action"] == "export_round"] == []
    assert len(log) == len(log_before)
