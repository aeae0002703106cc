"""``raiz serve`` in a child process: started, awaited until ready, stopped or killed."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx

__all__ = ("ServeProcess", "free_port")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ServeProcess:
    """One ``raiz serve`` in its own process group (so its workers die with it)."""

    def __init__(
        self,
        *,
        env: dict[str, str] | None = None,
        port: int | None = None,
        workers: int = 1,
        log_path: Path | None = None,
        host: str = "127.0.0.1",
        cwd: Path | None = None,
    ) -> None:
        self.port = port or free_port(host)
        self.base_url = f"http://{host}:{self.port}"
        self._command = [
            sys.executable,
            "-m",
            "app.cli",
            "serve",
            "--host",
            host,
            "--port",
            str(self.port),
            "--workers",
            str(workers),
        ]
        self._env = {**os.environ, **(env or {})}
        self._log_path = log_path
        self._cwd = cwd
        self._log: IO[bytes] | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout_s: float = 60.0) -> str:
        """Start the server and wait until ``/health/ready`` answers; the base URL."""
        if self._log_path is not None:
            self._log = open(self._log_path, "ab")  # noqa: SIM115 (closed in stop/kill)
        output = self._log if self._log is not None else subprocess.DEVNULL
        self.process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            self._command,
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            start_new_session=True,
        )
        try:
            self.wait_ready(ready_timeout_s)
        except BaseException:
            self.kill()
            raise
        return self.base_url

    def wait_ready(self, timeout_s: float) -> None:
        """Poll ``/health/ready`` until it answers 200 (raise if the process exits)."""
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"raiz serve exited with status {self.process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/health/ready", timeout=1).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"raiz serve was not ready within {timeout_s:.0f} s")
            time.sleep(0.1)

    def stop(self, timeout_s: float = 15.0) -> None:
        """Graceful stop (SIGTERM to the group), then SIGKILL if it takes too long."""
        self._signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()
        self._close_log()

    def kill(self) -> None:
        """Crash: SIGKILL the whole process group at once, no shutdown of any kind."""
        self._signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait()
        self._close_log()

    def _signal(self, number: signal.Signals) -> None:
        # the whole group, even if the leader is gone: its workers may not be
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, number)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ServeProcess:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
