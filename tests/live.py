"""Run the real service (``raiz serve``) in a subprocess, for black-box tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

__all__ = ("free_port", "live_server")

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port that is free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def live_server(
    database_url: str,
    *,
    workers: int = 1,
    port: int | None = None,
    env: dict[str, str] | None = None,
    log_path: Path | None = None,
    startup_timeout_s: float = 60.0,
) -> Iterator[str]:
    """Serve the API on loopback until the block exits; yields the base URL."""
    port = port or free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RAIZ_ENV": "test",
        "RAIZ_PASSWORD_COST_LOG2": "10",
        "RAIZ_DEAL_DELAY_S": "0",
        **(env or {}),
    }
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), "--workers", str(workers)],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health/ready", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("server did not become ready")
            time.sleep(0.1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if log_path:
            log.close()  # type: ignore[union-attr]
