"""``ops/deploy``: what the files in front of the service log."""

from __future__ import annotations

import re
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "ops" / "deploy"
QUERY_VARIABLES = re.compile(r"\$(?:request|request_uri|args|query_string|arg_\w+)\b")
"""nginx variables holding the query string ($request is the whole request line)."""


def test_nginx_logs_no_query_string_where_websocket_tokens_travel():
    # WebSocket clients authenticate with /tables/{id}/ws?token=...; nginx's default access
    # log format ("combined") logs $request, the request line with its query string.
    nginx = (DEPLOY / "nginx.conf").read_text()
    formats = dict(re.findall(r"log_format\s+(\w+)\s+((?:'[^']*'\s*)+);", nginx))
    servers = nginx.split("server {")[1:]
    assert servers
    for server in servers:
        logs = re.findall(r"^\s*access_log\s+(\S+)(?:\s+(\w+))?", server, re.M)
        assert logs, "a server without access_log logs in the default (combined) format"
        for path, name in logs:
            if path == "off":
                continue
            assert name in formats, f"access_log {path} uses the default format"
            assert not QUERY_VARIABLES.search(formats[name]), formats[name]


def test_the_instances_data_directory_is_created_and_writable():
    unit = (DEPLOY / "raiz@.service").read_text()
    data_dir = re.search(r"^Environment=RAIZ_DATA_DIR=(\S+)$", unit, re.M)
    assert data_dir is not None
    state = re.search(r"^StateDirectory=(\S+)$", unit, re.M)
    assert state is not None, "nothing creates /var/lib/raiz (ReadWritePaths= needs it)"
    root = f"/var/lib/{state.group(1)}"
    assert data_dir.group(1).startswith(root + "/")
    writable = re.findall(r"^ReadWritePaths=(\S+)$", unit, re.M)
    assert any(data_dir.group(1).startswith(path.lstrip("-")) for path in [root, *writable])


def _environment_files(unit: str) -> list[str]:
    text = (DEPLOY / unit).read_text()
    return re.findall(r"^EnvironmentFile=-?(\S+)$", text, re.M)


def test_only_the_migrations_get_the_owners_url():
    # The instances serve as a role that owns nothing (docs/operations.md, "Database roles");
    # the schemas' owner's URL is read by raiz-migrate.service alone.
    migrate_env = "/etc/raiz/raiz-migrate.env"
    assert migrate_env in _environment_files("raiz-migrate.service")
    assert migrate_env not in _environment_files("raiz@.service")
    assert "RAIZ_MIGRATION_DATABASE_URL" not in (DEPLOY / "raiz.env.example").read_text()
    migrate_example = (DEPLOY / "raiz-migrate.env.example").read_text()
    owner = re.search(r"^RAIZ_MIGRATION_DATABASE_URL=postgresql://(\w+)[:@]", migrate_example, re.M)
    service = re.search(
        r"^DATABASE_URL=postgresql://(\w+)[:@]", (DEPLOY / "raiz.env.example").read_text(), re.M
    )
    assert owner is not None and service is not None
    assert owner.group(1) != service.group(1)
    roles = (DEPLOY / "roles.sql").read_text()
    assert f"CREATE DATABASE raiz OWNER {owner.group(1)};" in roles
    assert re.search(rf"CREATE ROLE {service.group(1)} LOGIN .* IN ROLE raiz_service;", roles)
