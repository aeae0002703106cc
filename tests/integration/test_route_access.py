"""Who may call what: the access policy of every route, in one table, checked over HTTP.

``ACCESS`` lists every route the application serves and the callers its guard admits.  The
test fails when a route is added without a decision here, when a guard is removed or widened,
and when one is narrowed by mistake: each route is called by an anonymous caller and by a
player, a compliance officer and an operator, and a caller the table refuses must get 401
(no token) or 403 (wrong role) before anything else is looked at, while an admitted caller must
get past the guard (any answer but 401/403: a 404 for the made-up ids, a 400 for the empty
body, the webhook's own 401 invalid_signature...).  Rules a guard cannot express (only the
creator or an operator cancels a table, a player sees only their own hand) have their own tests
beside the features.
"""

from __future__ import annotations

import uuid

import pytest

from tests.helpers import auth, create_user, login

pytestmark = pytest.mark.asyncio

PUBLIC = "public"
"""No token needed."""
SIGNED_IN = frozenset({"player", "compliance", "operator"})
PLAYER = frozenset({"player"})
COMPLIANCE = frozenset({"compliance"})
OPERATOR = frozenset({"operator"})
STAFF = frozenset({"compliance", "operator"})

ACCESS: dict[tuple[str, str], str | frozenset[str]] = {
    ("GET", "/health/live"): PUBLIC,
    ("GET", "/health/ready"): PUBLIC,
    ("GET", "/metrics"): PUBLIC,  # loopback only, by the reverse proxy (README)
    ("POST", "/auth/signup"): PUBLIC,
    ("POST", "/auth/login"): PUBLIC,
    ("POST", "/auth/logout"): SIGNED_IN,
    ("POST", "/auth/password"): SIGNED_IN,
    ("GET", "/auth/me"): SIGNED_IN,
    ("GET", "/admin/users"): OPERATOR,
    ("POST", "/admin/users"): OPERATOR,
    ("POST", "/admin/users/{user_id:uuid}/revoke-tokens"): OPERATOR,
    ("POST", "/admin/users/{user_id:uuid}/suspend"): OPERATOR,
    ("POST", "/admin/users/{user_id:uuid}/reinstate"): OPERATOR,
    ("GET", "/admin/users/{user_id:uuid}/suspensions"): STAFF,
    ("GET", "/admin/users/{user_id:uuid}/limits"): STAFF,
    ("GET", "/rng/algorithms"): PUBLIC,
    ("POST", "/rng/verify"): PUBLIC,
    ("GET", "/rng/rounds/{round_id:uuid}"): SIGNED_IN,
    ("GET", "/wallet"): SIGNED_IN,
    ("GET", "/wallet/statement"): SIGNED_IN,
    ("POST", "/admin/wallets/{user_id:uuid}/deposits"): OPERATOR,
    ("POST", "/admin/wallets/{user_id:uuid}/withdrawals"): OPERATOR,
    ("GET", "/admin/accounts"): STAFF,
    ("GET", "/admin/accounts/{account_id:uuid}"): STAFF,
    ("GET", "/admin/accounts/{account_id:uuid}/statement"): STAFF,
    ("POST", "/payments/webhook"): PUBLIC,  # authenticated by its HMAC signature
    ("GET", "/fee-rate"): SIGNED_IN,
    ("GET", "/admin/fee-rates"): OPERATOR,
    ("POST", "/admin/fee-rates"): OPERATOR,
    ("GET", "/tables"): SIGNED_IN,
    ("POST", "/tables"): frozenset({"player", "operator"}),
    ("GET", "/tables/{table_id:uuid}"): SIGNED_IN,
    ("POST", "/tables/{table_id:uuid}/seat"): PLAYER,
    ("POST", "/players/me/self-exclusion"): PLAYER,
    ("GET", "/players/me/limits"): PLAYER,
    ("PUT", "/players/me/limits/{period:str}"): PLAYER,
    ("POST", "/tables/{table_id:uuid}/leave"): PLAYER,
    ("POST", "/tables/{table_id:uuid}/start"): SIGNED_IN,  # the service admits the creator only
    ("POST", "/tables/{table_id:uuid}/cancel"): SIGNED_IN,  # the creator or an operator
    ("POST", "/tables/{table_id:uuid}/actions"): PLAYER,
    ("POST", "/tables/{table_id:uuid}/client-seed"): PLAYER,
    ("POST", "/tables/{table_id:uuid}/heartbeat"): PLAYER,
    ("WS", "/tables/{table_id:uuid}/ws"): SIGNED_IN,  # tests/integration/tables: the token
    ("GET", "/players/me/hands"): PLAYER,
    ("GET", "/compliance/rounds"): COMPLIANCE,
    ("GET", "/compliance/rounds/{round_id:uuid}"): COMPLIANCE,
    ("GET", "/compliance/rounds/{round_id:uuid}/verification"): COMPLIANCE,
    ("GET", "/compliance/rounds/{round_id:uuid}/bundle"): COMPLIANCE,
    ("GET", "/compliance/players/{user_id:uuid}/money"): COMPLIANCE,
    ("POST", "/compliance/checkpoints"): STAFF,
    ("GET", "/admin/access-log"): OPERATOR,
    ("GET", "/audit/public-keys"): PUBLIC,
    ("GET", "/audit/checkpoints"): PUBLIC,
}
"""Every route (method, path) and who its guard admits."""

DOCUMENTATION = "/schema"
"""The OpenAPI routes (public), left out of ``ACCESS``."""
ROLES = ("player", "compliance", "operator")
LAST = {("POST", "/auth/logout")}
OWN_AUTHENTICATION = {("POST", "/payments/webhook"): "invalid_signature"}
"""Public routes that authenticate by other means: their own 401 (with this code, for the
unsigned empty body) comes after the guard has let the caller through."""
"""Routes that end the caller's session: called after the others."""


def served_routes(app: object) -> set[tuple[str, str]]:
    """(method, path) of every handler the app serves, OPTIONS and the OpenAPI routes aside."""
    served: set[tuple[str, str]] = set()
    for route in app.routes:  # type: ignore[attr-defined]
        if route.path.startswith(DOCUMENTATION):
            continue
        handlers = getattr(route, "route_handlers", None) or [route.route_handler]
        for handler in handlers:
            methods = getattr(handler, "http_methods", None) or {"WS"}
            served.update((method, route.path) for method in methods if method != "OPTIONS")
    return served


def concrete(path: str) -> str:
    """The path with made-up ids in its parameters."""
    parts = []
    for part in path.split("/"):
        parts.append(str(uuid.uuid4()) if part.startswith("{") else part)
    return "/".join(parts)


async def test_every_route_has_an_access_decision(client):
    assert served_routes(client.app) == set(ACCESS)


async def test_each_guard_admits_exactly_the_callers_of_the_access_table(client, settings):
    tokens: dict[str | None, str | None] = {None: None}
    for name in ROLES:
        await create_user(settings, f"access_{name}", role=name)
        tokens[name] = await login(client, f"access_{name}")
    wrong: list[str] = []
    calls = sorted((key for key in ACCESS if key[0] != "WS"), key=lambda key: key in LAST)
    for method, path in calls:
        admitted = ACCESS[(method, path)]
        for role, token in tokens.items():
            response = await client.request(
                method, concrete(path), headers=auth(token) if token else {}
            )
            allowed = admitted == PUBLIC or (role is not None and role in admitted)
            if allowed:
                own = OWN_AUTHENTICATION.get((method, path))
                refused = response.status_code in (401, 403) and response.json()["code"] != own
            else:
                refused = response.status_code == (401 if role is None else 403)
            if refused == allowed:
                wrong.append(f"{method} {path} as {role or 'anonymous'}: {response.status_code}")
    assert not wrong, "\n".join(wrong)
