"""The examples run as a user runs them, against real hubs, and print
what docs/python.md shows."""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import sys

import switchboard
from conftest import run
from helpers import jwt, now
from hubproc import ROOT
from test_connect import KEY, jwt_hub  # noqa: F401 (a fixture)

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
ENV = {**os.environ, "PYTHONPATH": str(pathlib.Path(switchboard.__file__).parents[1])}


class Proc:
    """Proc is an example running as a process; lines are read with a
    deadline, and the process is always ended and waited for."""

    def __init__(self, p: asyncio.subprocess.Process) -> None:
        self.p = p

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None) -> Proc:
        p = await asyncio.create_subprocess_exec(sys.executable, *args, cwd=str(EXAMPLES), env={**ENV, **(env or {})},
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        return cls(p)

    async def line(self, starts: str, timeout: float = 30) -> str:
        assert self.p.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                s = (await self.p.stdout.readline()).decode()
                if not s:
                    raise AssertionError(f"exited before printing {starts!r}")
                if s.startswith(starts):
                    return s.rstrip("\n")

    async def output(self, timeout: float = 60) -> str:
        async with asyncio.timeout(timeout):
            out, _ = await self.p.communicate()
        return out.decode()

    async def stop(self) -> int:
        if self.p.returncode is None:
            self.p.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(20):
                await self.p.communicate()
        finally:
            if self.p.returncode is None:
                self.p.kill()
                await self.p.wait()
        return self.p.returncode


@run
async def test_spec_example(hub):
    out = await (await Proc.start("spec.py", hub.ws)).output()
    assert out == """by position: 19
by name: 19
notification: sent, nothing comes back
batch: 7
batch: None
batch: 19
batch: jsonrpc error -32601: Method not found
batch: ['hello', 5]
error: -32601 Method not found
"""


@run
async def test_typed_example(hub):
    gen = (ROOT / "cmd/rpc/testdata/demo_api.py").read_text()
    assert (EXAMPLES / "demo_api.py").read_text() == gen, "examples/demo_api.py is not what rpc gen-py writes"
    out = await (await Proc.start("typed.py", hub.ws)).output()
    assert out == "add: 3\nsubtract: 19\nsum: 7\nsleep: 120\n"


@run
async def test_script_example(hub):
    out = await (await Proc.start("script.py", hub.ws)).output()
    assert out == "add: 3\npublished to 1 peer(s)\nevent: news.script {'hello': 'world'}\nover POST: 19\n"


@run
async def test_billing_worker_example(hub):
    w = await Proc.start("billing_worker.py", hub.ws)
    try:
        await w.line("providing")
        async with switchboard.connect(hub.ws) as c:
            notes: list[object] = []
            r = await c.call("billing.charge", {"account": "acme", "cents": 1250}, on_progress=notes.append)
            assert r == {"account": "acme", "cents": 1250, "receipt": "r-acme-1250"}
            assert notes == [{"status": "authorizing"}]
            try:
                await c.call("billing.charge", ["acme", 0])
                raise AssertionError("no error")
            except switchboard.RPCError as e:
                assert (e.code, e.data) == (4001, {"cents": 0})
            doc = await c.call("rpc.discover")
            m = {x["name"]: x for x in doc["methods"]}
            assert m["billing.charge"]["summary"] == "Charges an account."
            assert m["billing.refund"]["params"][0]["name"] == "receipt"
    finally:
        assert await w.stop() == 0


@run
async def test_backend_calls_a_users_tab(jwt_hub):  # noqa: F811
    tab = await Proc.start("tab.py", jwt_hub.ws, env={"TOKEN": jwt(KEY, {"sub": "alice", "exp": now() + 600})})
    try:
        await tab.line("tab of alice ready")
        back = await Proc.start("backend.py", jwt_hub.ws, "alice",
                                env={"TOKEN": jwt(KEY, {"sub": "shop", "exp": now() + 600})})
        out = await back.output()
        assert out.startswith("{'order': 'o-42', 'tabs': 1, 'confirmed_by': ['"), out
        await tab.line("asked to confirm o-42")
    finally:
        assert await tab.stop() == 0


@run
async def test_subscriber_survives_a_hub_restart(hub):
    s = await Proc.start("subscriber.py", hub.ws, "news.>")
    try:
        await s.line("subscribed to news.>")
        async with switchboard.connect(hub.ws) as c:
            await c.publish("news.before", 1)
        assert (await s.line("event:")).startswith("event: news.before 1 ")
        await asyncio.to_thread(hub.restart)
        await s.line("state: connected")
        await s.line("missed:")
        async with switchboard.connect(hub.ws) as c:
            await c.publish("news.after", "back")
        assert (await s.line("event:")).startswith("event: news.after back ")
    finally:
        assert await s.stop() == 0
