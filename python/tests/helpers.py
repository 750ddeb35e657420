"""Test helpers: a TCP proxy that can cut connections, a recorder of a
client's states, JSON Web Tokens, and waiting for a condition with a
deadline."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from typing import Any, Callable

from switchboard import State


class Proxy:
    """Proxy forwards TCP connections on 127.0.0.1 to target; cut() drops
    every connection at once, as a network failure would."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._server: asyncio.base_events.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.addr = ""

    @property
    def ws(self) -> str:
        return f"ws://{self.addr}/rpc"

    async def start(self) -> Proxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.addr = f"{host}:{port}"
        return self

    async def _accept(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._tasks.add(me)
        me.add_done_callback(self._tasks.discard)
        host, port = self.target.rsplit(":", 1)
        try:
            ur, uw = await asyncio.open_connection(host, int(port))
        except OSError:
            w.close()
            await w.wait_closed()
            return
        pair = (w, uw)
        self._pairs.add(pair)
        try:
            await asyncio.gather(self._pipe(r, uw), self._pipe(ur, w))
        finally:
            self._pairs.discard(pair)
            for x in pair:
                x.close()
            for x in pair:
                try:
                    await x.wait_closed()
                except OSError:
                    pass

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            if w.can_write_eof():
                try:
                    w.write_eof()
                except OSError:
                    pass

    def cut(self) -> int:
        """cut aborts every connection, both ends; returns how many."""
        n = len(self._pairs)
        for a, b in list(self._pairs):
            a.transport.abort()
            b.transport.abort()
        return n

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        self.cut()
        await self._server.wait_closed()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


class States:
    """States is an on_state callback for switchboard.connect: it records
    each state in seen, sets connected when the client is connected and
    disconnected when it is not (clearing the other), so that a test can
    wait for the client to be back after it broke a connection."""

    def __init__(self) -> None:
        self.seen: list[State] = []
        self.connected = asyncio.Event()
        self.disconnected = asyncio.Event()

    def __call__(self, s: State, err: BaseException | None) -> None:
        self.seen.append(s)
        if s is State.CONNECTED:
            self.disconnected.clear()
            self.connected.set()
        elif s is State.DISCONNECTED:
            self.connected.clear()
            self.disconnected.set()


def jwt(key: bytes, claims: dict[str, Any]) -> str:
    """jwt signs claims with HS256."""
    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    sig = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


async def until(cond: Callable[[], bool], timeout: float = 20.0) -> None:
    """until waits for cond to hold, checking it at each turn of the event
    loop that lets anything else run; fails after timeout."""
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.005)


def now() -> int:
    return int(time.time())
