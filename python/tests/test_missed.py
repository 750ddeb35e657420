"""rpc.missed, driven by a stand-in hub written here: in a cluster of hubs,
a hub that lost events from another node names the patterns of the
subscriptions that may have missed some; the client resumes them on the
same connection, and their readers get a Missed event, then every later
event once and in order. The other subscriptions see nothing of it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets

import switchboard
from conftest import run

E = "e1"


def event(topic: str, data: Any, seq: int, **extra: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": "rpc.event",
                       "params": {"topic": topic, "data": data, "seq": seq, "epoch": E, **extra}})


@run
async def test_missed_resumes_on_the_same_connection():
    resumed: asyncio.Queue[Any] = asyncio.Queue()
    connections = 0
    done = asyncio.Event()

    async def hub(ws: Any, *_: Any) -> None:
        nonlocal connections
        connections += 1

        async def subscribe_request() -> dict[str, Any]:
            while True:
                m = json.loads(await ws.recv())
                if m.get("method") == "rpc.subscribe":
                    return m

        for _ in range(2):
            m = await subscribe_request()
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                                      "result": {"topics": [m["params"]["topic"]], "epoch": E, "seq": 0}}))
        await ws.send(event("chat.a", "x", 1))
        await ws.send(event("chat.b", "y", 2))
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "rpc.missed",
                                  "params": {"topics": ["chat.a"], "epoch": E, "seq": 2}}))
        m = await subscribe_request()
        await resumed.put(m["params"])
        await ws.send(event("chat.a", "live-early", 3))  # at or before the answer's position: replayed instead
        await ws.send(event("chat.b", "z", 4))
        await ws.send(event("chat.a", "r3", 3, replay="chat.a"))
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                                  "result": {"topics": ["chat.a"], "epoch": E, "seq": 4, "recovered": False}}))
        await ws.send(event("chat.a", "live", 5))
        await done.wait()

    async with websockets.serve(hub, "127.0.0.1", 0) as server:
        port = list(server.sockets)[0].getsockname()[1]
        async with switchboard.connect(f"ws://127.0.0.1:{port}/rpc") as c:
            a = await c.subscribe("chat.a")
            b = await c.subscribe("chat.b")
            got_a = [await a.get(20) for _ in range(4)]
            got_b = [await b.get(20) for _ in range(2)]
            assert await asyncio.wait_for(resumed.get(), 20) == {"topic": "chat.a", "since": {"epoch": E, "seq": 1}}
            assert [("missed" if e.missed else e.data) for e in got_a] == ["x", "missed", "r3", "live"]
            assert [(e.missed, e.data) for e in got_b] == [(False, "y"), (False, "z")]
            assert a.position == switchboard.Position(E, 5)
            assert connections == 1
            done.set()


@run
async def test_call_user_names_unanswered_nodes():
    async def hub(ws: Any, *_: Any) -> None:
        async for msg in ws:
            m = json.loads(msg)
            if m.get("method") == "rpc.call":
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
                    "results": [{"peer": {"id": "a", "user": "alice", "node": "n1"}, "result": "x"}],
                    "incomplete": True, "unanswered": ["n3"]}}))

    async with websockets.serve(hub, "127.0.0.1", 0) as server:
        port = list(server.sockets)[0].getsockname()[1]
        async with switchboard.connect(f"ws://127.0.0.1:{port}/rpc") as c:
            got = await c.call_user("alice", "draft")
            assert [r.value() for r in got] == ["x"]
            assert got.unanswered == ["n3"] and not got.truncated and got.asked == 1
