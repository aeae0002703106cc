"""docs/ledger.md states what the code does: examples, codes, kinds and routes."""

from __future__ import annotations

from pathlib import Path

from ledger import ErrorCode, TransferKind, split_settlement
from ledger.constants import KIND_ROUTES, MAY_GO_NEGATIVE

TIMES, MINUS = "\u00d7", "\u2212"  # the document's typography
DOC = (Path(__file__).resolve().parents[3] / "docs" / "ledger.md").read_text()


def test_the_readme_example_and_the_co_winner_example_are_what_the_code_computes():
    assert split_settlement(4 * 500, 1_000, 1) == (200, [1_800])
    assert f"| fee | floor(2,000 {TIMES} 1,000 / 10,000) = 200 | 2.00 |" in DOC
    assert f"| net prize | 2,000 {MINUS} 200 = 1,800 | 18.00 |" in DOC
    assert split_settlement(1_004, 1_000, 3) == (100, [302, 301, 301])
    assert f"904 = 3 {TIMES} 301 + 1, so the payouts are 302, 301, 301" in DOC


def test_every_error_code_and_kind_is_documented():
    for code in ErrorCode:
        assert f"`{code.value}`" in DOC, code
    for kind in TransferKind:
        assert f"| `{kind.value}` |" in DOC, kind
    assert set(KIND_ROUTES) == set(TransferKind)


def test_the_negative_policy_table_matches_the_code():
    for account_type, may_go_negative in MAY_GO_NEGATIVE.items():
        row = next(line for line in DOC.splitlines() if line.startswith(f"| `{account_type}` |"))
        assert row.split("|")[3].strip() == ("yes" if may_go_negative else "no"), row


def test_every_wallet_route_is_documented():
    from app.main import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings("postgresql://nobody@127.0.0.1:1/never_connected"))
    routes = [
        f"{method.upper()} {path}".replace("{account_id}", "{id}")
        for path, item in app.openapi_schema.paths.items()
        if path.startswith(("/wallet", "/admin/wallets", "/admin/accounts", "/payments"))
        for method in ("get", "post")
        if getattr(item, method) is not None
    ]
    assert len(routes) == 8
    for route in routes:
        assert f"`{route}" in DOC, route
