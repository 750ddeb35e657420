"""Calls, notifications, batches, errors, progress and cancellation,
against a real demo hub."""

from __future__ import annotations

import asyncio
import time

import pytest

import switchboard
from switchboard import BatchElem, RPCError
from conftest import run, run_fast
from helpers import Proxy, States


@run
async def test_spec_examples(hub):
    async with switchboard.connect(hub.ws) as c:
        assert await c.call("subtract", [42, 23]) == 19
        assert await c.call("subtract", [23, 42]) == -19
        assert await c.call("subtract", {"subtrahend": 23, "minuend": 42}) == 19
        assert await c.call("subtract", {"minuend": 42, "subtrahend": 23}) == 19
        await c.notify("update", [1, 2, 3, 4, 5])
        await c.notify("foobar")
        with pytest.raises(RPCError) as e:
            await c.call("foobar")
        assert e.value.code == switchboard.METHOD_NOT_FOUND
        with pytest.raises(RPCError) as e:
            await c.call("subtract", ["x"])
        assert e.value.code == switchboard.INVALID_PARAMS


@run
async def test_batch(hub):
    async with switchboard.connect(hub.ws) as c:
        rs = await c.batch([
            BatchElem("sum", [1, 2, 4]),
            BatchElem("notify_hello", [7], notify=True),
            BatchElem("subtract", [42, 23]),
            BatchElem("foo.get", {"name": "myself"}),
            BatchElem("get_data"),
        ])
        assert [r.result for r in rs] == [7, None, 19, None, ["hello", 5]]
        assert rs[3].error is not None and rs[3].error.code == -32601
        with pytest.raises(RPCError):
            rs[3].value()
        # Over the hub's batch limit: one error for the whole batch.
        rs = await c.batch([BatchElem("add", [1, 1])] * 1001)
        assert all(r.error is not None and r.error.code == -32600 for r in rs)


@run
async def test_big_numbers_exact(hub):
    async with switchboard.connect(hub.ws) as c:
        big = [2**70, -(2**80) + 1, 123456789012345678901234567890]
        assert await c.call("echo", big) == big
        # ids beyond 64 bits are matched exactly too
        c._conn._next_id = 2**65 + 1  # type: ignore[union-attr]
        assert await c.call("add", [1, 2]) == 3
        assert await asyncio.gather(*(c.call("add", [i, 1]) for i in range(10))) == list(range(1, 11))


@run
async def test_progress_callback_and_iterator(hub):
    async with switchboard.connect(hub.ws) as c:
        notes = []
        assert await c.call("sleep", {"ms": 350}, on_progress=notes.append) == {"slept": 350}
        assert len(notes) >= 2, notes
        call = c.start_call("sleep", {"ms": 350})
        seen = [n async for n in call]
        assert len(seen) >= 2
        assert await call == {"slept": 350}


@run
async def test_cancel_and_timeout_send_rpc_cancel(hub):
    async with switchboard.connect(hub.ws) as c:
        t0 = time.monotonic()
        task = asyncio.create_task(c.call("sleep", {"ms": 60000}))
        call = c.start_call("sleep", {"ms": 60000})
        async for _ in call:  # the hub is running it: cancel it now
            call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(TimeoutError):
            await c.call("sleep", {"ms": 60000}, timeout=0.2)
        # The hub cancelled them: a call that takes a slot per call still
        # answers at once, and the connection is up.
        assert await c.call("add", [1, 2]) == 3
        assert time.monotonic() - t0 < 30


@run_fast
async def test_pipelined_burst(hub):
    async with switchboard.connect(hub.ws) as c:
        n = 10_000
        t0 = time.perf_counter()
        got = await asyncio.gather(*(c.call("add", [i, 1]) for i in range(n)))
        dt = time.perf_counter() - t0
        assert got == [i + 1 for i in range(n)]
        print(f"\n{n} pipelined calls in {dt:.2f}s: {n / dt:.0f} calls/s")


@run_fast
async def test_sequential_rate(hub):
    async with switchboard.connect(hub.ws) as c:
        lat = []
        for i in range(2000):
            t0 = time.perf_counter()
            await c.call("add", [i, 1])
            lat.append(time.perf_counter() - t0)
        lat.sort()
        print(f"\nsequential: {len(lat) / sum(lat):.0f} calls/s, p50 {lat[len(lat) // 2] * 1e6:.0f} us")


@run
async def test_fail_fast_and_closed(hub):
    c = await switchboard.connect(hub.ws)
    await c.close()
    with pytest.raises(switchboard.ClientClosed):
        await c.call("add", [1, 2])
    assert c.state is switchboard.State.CLOSED
    await c.close()  # twice is fine


@run
async def test_close_leaves_no_task_or_socket(hub):
    import gc
    import os


    def fds() -> list[str]:
        out = []
        for f in os.listdir("/proc/self/fd"):
            try:
                out.append(os.readlink(f"/proc/self/fd/{f}"))
            except OSError:
                pass
        return sorted(out)

    before = fds()
    proxy = await Proxy(hub.addr).start()
    r = switchboard.Router()
    r.add("ok", lambda: True)
    states = States()
    c = await switchboard.connect(proxy.ws, router=r, ping_interval=0.05, min_backoff=0.01, on_state=states)
    await c.subscribe("x.>", handler=lambda ev: None)
    await c.provide("py.ok", lambda: True)
    call = c.start_call("sleep", {"ms": 60000})
    states.connected.clear()
    proxy.cut()  # close must end the reconnected client's tasks too
    await asyncio.wait_for(states.connected.wait(), 20)
    assert await c.call("add", [1, 2]) == 3
    with pytest.raises(switchboard.ConnectionLost):
        await call  # in flight when the connection dropped
    call2 = c.start_call("sleep", {"ms": 60000})
    await c.close()
    with pytest.raises(switchboard.ClientClosed):
        await call2
    await proxy.close()
    gc.collect()
    assert fds() == before
    # run() checks that no task is left, and turns ResourceWarnings into errors


@run
async def test_calls_while_disconnected(make_hub):
    h = make_hub("-demo")
    states = States()
    async with switchboard.connect(h.ws, on_state=states, min_backoff=60, max_backoff=60) as c:
        await asyncio.to_thread(h.kill)
        await asyncio.wait_for(states.disconnected.wait(), 20)
        with pytest.raises(switchboard.Disconnected):
            await c.call("add", [1, 2], fail_fast=True)
        with pytest.raises(TimeoutError):  # waits for a connection, within its timeout
            await c.call("add", [1, 2], timeout=0.1)
        assert c.state is switchboard.State.DISCONNECTED
