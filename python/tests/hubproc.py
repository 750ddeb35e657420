"""Hub processes for the tests: the hub command built once, started on a
free port of 127.0.0.1, stopped (and waited for) when the test ends."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import tempfile
import threading
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
_built: dict[str, str] = {}
_lock = threading.Lock()


def binary(name: str = "hub") -> str:
    """binary returns the path of cmd/<name>, built once per test run
    (SWITCHBOARD_HUB / SWITCHBOARD_RPC name a binary built already)."""
    env = os.environ.get("SWITCHBOARD_" + name.upper())
    if env:
        return env
    with _lock:
        if name not in _built:
            d = tempfile.mkdtemp(prefix="switchboard-py-")
            out = os.path.join(d, name)
            subprocess.run(["go", "build", "-o", out, "./cmd/" + name], cwd=ROOT, check=True)
            _built[name] = out
        return _built[name]


class Hub:
    """Hub is a hub process. start() waits until it listens; its address is
    read from its "hub listening" log line, so the port is never guessed."""

    def __init__(self, *args: str) -> None:
        self.args = list(args)
        self.addr = "127.0.0.1:0"
        self.proc: subprocess.Popen[str] | None = None
        self.log: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def ws(self) -> str:
        return f"ws://{self.addr}/rpc"

    @property
    def http(self) -> str:
        return f"http://{self.addr}/rpc"

    def start(self, timeout: float = 30.0) -> Hub:
        proc = subprocess.Popen([binary(), "-addr", self.addr, "-log-format", "json", *self.args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.proc = proc
        ready = threading.Event()
        found: dict[str, Any] = {}

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                self.log.append(line)
                if not ready.is_set():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("msg") == "hub listening":
                        found["addr"] = rec["addr"]
                        ready.set()
            ready.set()  # exited

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not ready.wait(timeout) or "addr" not in found:
            self.stop()
            raise RuntimeError("hub did not start:\n" + "".join(self.log))
        self.addr = found["addr"]
        return self

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int | None:
        """stop signals the process (SIGTERM: a graceful shutdown) and
        waits for it to exit, killing it after timeout."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._reader is not None:
            self._reader.join()
        if proc.stderr is not None:
            proc.stderr.close()
        return proc.returncode

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self) -> None:
        """restart stops the hub and starts it again on the same address:
        a new process, with a new epoch and no history."""
        self.stop()
        self.start()
