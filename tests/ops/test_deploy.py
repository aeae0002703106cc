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
