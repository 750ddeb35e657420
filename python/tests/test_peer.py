"""The client's serving side, driven by a stand-in hub written here: calls
in a batch answered with a batch, ids echoed exactly, rpc.cancel, rpc.ping
and rpc.discover from the other side."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets

import switchboard
from conftest import run


@run
async def test_served_batch_ids_cancel_ping_discover():
    router = switchboard.Router()
    started = asyncio.Event()

    @router.method()
    def greet(name: str) -> str:
        """Greets."""
        return "hi " + name

    @router.method()
    async def slow() -> None:
        started.set()
        await asyncio.Event().wait()

    replies: asyncio.Queue[Any] = asyncio.Queue()
    done = asyncio.Event()

    async def hub(ws: Any, *_: Any) -> None:
        async def ask(msg: str) -> Any:
            await ws.send(msg)
            return json.loads(await ws.recv())

        await replies.put(await ask(json.dumps([
            {"jsonrpc": "2.0", "method": "greet", "params": ["a"], "id": 1},
            {"jsonrpc": "2.0", "method": "greet", "params": {"name": "b"}, "id": "x"},
            {"jsonrpc": "2.0", "method": "greet", "params": ["c"]},
            {"jsonrpc": "2.0", "method": "nope", "id": None},
        ])))
        await replies.put(await ask('{"jsonrpc":"2.0","method":"greet","params":["d"],"id":123456789012345678901234567890}'))
        await replies.put(await ask('{"jsonrpc":"2.0","method":"rpc.ping","id":7}'))
        await replies.put(await ask('{"jsonrpc":"2.0","method":"rpc.discover","id":8}'))
        await ws.send('{"jsonrpc":"2.0","method":"slow","id":9}')
        await started.wait()
        await replies.put(await ask('{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":9}}'))
        await done.wait()

    async with websockets.serve(hub, "127.0.0.1", 0) as server:
        port = list(server.sockets)[0].getsockname()[1]
        async with switchboard.connect(f"ws://127.0.0.1:{port}/rpc", router=router):
            batch = await asyncio.wait_for(replies.get(), 20)
            assert sorted(batch, key=lambda r: str(r["id"])) == [
                {"jsonrpc": "2.0", "id": 1, "result": "hi a"},
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "Method not found"}},
                {"jsonrpc": "2.0", "id": "x", "result": "hi b"},
            ]
            big = await asyncio.wait_for(replies.get(), 20)
            assert big == {"jsonrpc": "2.0", "id": 123456789012345678901234567890, "result": "hi d"}
            assert (await asyncio.wait_for(replies.get(), 20))["result"] == {}
            doc = (await asyncio.wait_for(replies.get(), 20))["result"]
            assert [m["name"] for m in doc["methods"]] == ["greet", "slow"]
            cancelled = await asyncio.wait_for(replies.get(), 20)
            assert cancelled == {"jsonrpc": "2.0", "id": 9, "error": {"code": -32002, "message": "Request cancelled"}}
            done.set()
