"""Serving methods: the hub's calls back, methods provided to other peers,
params by position and by name, errors, progress and cancellation through
the hub, rpc.discover from signatures and docstrings."""

from __future__ import annotations

import asyncio
from typing import Any, Optional, TypedDict

import pytest

import switchboard
from switchboard import Request, RPCError, Router
from conftest import run


class Charge(TypedDict):
    id: str
    amount: int


def make_router() -> Router:
    r = Router()

    @r.method()
    async def greet(name: str, punct: str = "!") -> str:
        """Greets someone.

        Args:
            name: who to greet
            punct: what ends the greeting
        """
        return f"hello, {name}{punct}"

    @r.method("fail")
    def fail(code: int) -> None:
        raise RPCError(code, "refused", {"why": "testing"})

    @r.method()
    def boom() -> None:
        raise ValueError("kaput")

    return r


@run
async def test_hub_calls_back_by_name_and_position(hub):
    async with switchboard.connect(hub.ws, router=make_router()) as c:
        assert await c.call("callback", {"method": "greet", "params": {"name": "py"}}) == "hello, py!"
        assert await c.call("callback", {"method": "greet", "params": ["py", "?"]}) == "hello, py?"
        with pytest.raises(RPCError) as e:
            await c.call("callback", {"method": "greet", "params": {"name": 7}})
        assert e.value.code == switchboard.INVALID_PARAMS
        with pytest.raises(RPCError) as e:
            await c.call("callback", {"method": "greet", "params": {"nom": "x"}})
        assert e.value.code == switchboard.INVALID_PARAMS
        with pytest.raises(RPCError) as e:
            await c.call("callback", {"method": "fail", "params": [4242]})
        assert (e.value.code, e.value.message, e.value.data) == (4242, "refused", {"why": "testing"})
        with pytest.raises(RPCError) as e:
            await c.call("callback", {"method": "boom"})
        assert (e.value.code, e.value.message) == (switchboard.APPLICATION_ERROR, "kaput")
        with pytest.raises(RPCError) as e:
            await c.call("callback", {"method": "nope"})
        assert e.value.code == switchboard.METHOD_NOT_FOUND


def test_router_describes_from_signatures_and_docstrings():
    r = Router()

    @r.method("billing.charge")
    async def charge(account: str, amount: int, note: Optional[str] = None) -> Charge:
        """Charges an account.

        The amount is in cents.

        Args:
            account: whom to charge
            amount: how much
        """
        return {"id": "c1", "amount": amount}

    @r.method()
    def total(*params: float) -> float:
        """Adds them all."""
        return sum(params)

    class Local(TypedDict):  # not resolvable from the module: no checks, still served
        x: int

    def local(req: Request, v: Local) -> str:
        return req.method

    r.add("local", local, description="Described here.\n\nNot by a docstring.")

    doc = r.describe()
    assert doc["openrpc"].startswith("1.")
    m = {x["name"]: x for x in doc["methods"]}
    c = m["billing.charge"]
    assert c["summary"] == "Charges an account."
    assert c["description"] == "The amount is in cents."
    assert c["params"] == [
        {"name": "account", "description": "whom to charge", "required": True, "schema": {"type": "string"}},
        {"name": "amount", "description": "how much", "required": True, "schema": {"type": "integer"}},
        {"name": "note", "schema": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    ]
    assert c["result"]["schema"] == {
        "type": "object",
        "properties": {"id": {"type": "string"}, "amount": {"type": "integer"}},
        "required": ["amount", "id"],
    }
    assert (m["local"]["summary"], m["local"]["description"]) == ("Described here.", "Not by a docstring.")
    assert [p["name"] for p in m["local"]["params"]] == ["v"]
    assert asyncio.run(r.lookup("local").invoke(Request("local", [{"x": 1}]))) == "local"
    assert m["total"]["paramStructure"] == "by-position"
    assert m["total"]["params"] == [{"name": "params", "schema": {"type": "number"}}]
    with pytest.raises(ValueError):
        r.add("rpc.x", total)
    with pytest.raises(ValueError):
        r.add("total", total)


@run
async def test_provide_progress_and_cancel_through_the_hub(hub):
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(req: Request, steps: int) -> str:
        """Works slowly, telling how far it got."""
        for i in range(steps):
            await req.progress({"step": i})
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    async def charge(req: Request, amount: int) -> dict[str, Any]:
        """Charges."""
        await switchboard.progress("charging")
        return {"method": req.method, "amount": amount}

    async with switchboard.connect(hub.ws) as worker, switchboard.connect(hub.ws) as caller:
        p1 = await worker.provide("work.slow", slow)
        await worker.provide("billing.*", charge)
        notes: list[Any] = []
        assert await caller.call("billing.charge", {"amount": 5}, on_progress=notes.append) == {"method": "billing.charge", "amount": 5}
        assert notes == ["charging"]

        call = caller.start_call("work.slow", [2])
        seen = []
        async for n in call:
            seen.append(n)
            if len(seen) == 2:
                break
        assert seen == [{"step": 0}, {"step": 1}]
        await asyncio.wait_for(started.wait(), 20)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), 20)  # rpc.cancel went caller -> hub -> worker
        with pytest.raises(asyncio.CancelledError):
            await call

        doc = await caller.call("rpc.discover")
        names = {m["name"]: m for m in doc["methods"]}
        assert names["work.slow"]["summary"] == "Works slowly, telling how far it got."
        assert names["work.slow"]["params"] == [{"name": "steps", "required": True, "schema": {"type": "integer"}}]

        await p1.withdraw()
        with pytest.raises(RPCError) as e:
            await caller.call("work.slow", [0])
        assert e.value.code == switchboard.METHOD_NOT_FOUND
        with pytest.raises(ValueError):
            await worker.provide("rpc.x", charge)


@run
async def test_whoami_and_addressed_calls(hub):
    r = Router()

    @r.method()
    def confirm(amount: int) -> bool:
        return amount < 100

    async with switchboard.connect(hub.ws, router=r) as tab, switchboard.connect(hub.ws) as backend:
        me = await tab.whoami()
        assert len(me.id) == 36
        assert await backend.call_peer(me.id, "confirm", {"amount": 42}) is True
        with pytest.raises(RPCError) as e:
            await backend.call_peer("00000000-0000-0000-0000-000000000000", "confirm", [1])
        assert e.value.code == switchboard.NO_SUCH_PEER
        await tab.subscribe("room.7")
        rs = await backend.call_topic("room.7", "confirm", [500])
        assert [(x.peer.id, x.result) for x in rs] == [(me.id, False)]
        rs = await backend.call_topic("room.7", "nope")
        assert rs[0].error is not None and rs[0].error.code == switchboard.METHOD_NOT_FOUND
        assert await backend.call_user("nobody", "confirm", [1]) == []


@run
async def test_max_in_flight_bounds_the_calls_served(hub):
    running = 0
    most = 0
    two = asyncio.Event()
    release = asyncio.Event()

    async def hold(n: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        if running == 2:
            two.set()
        await release.wait()
        running -= 1
        return n

    async with switchboard.connect(hub.ws, max_in_flight=2) as worker, switchboard.connect(hub.ws) as caller:
        await worker.provide("hold", hold)
        calls = [asyncio.create_task(caller.call("hold", [i])) for i in range(5)]
        await asyncio.wait_for(two.wait(), 20)
        assert await caller.call("add", [1, 1]) == 2  # the hub still answers others meanwhile
        release.set()
        assert await asyncio.gather(*calls) == list(range(5))
        assert most == 2
