"""A synchronous facade for scripts: the same client, its event loop on a
thread of its own.

    from switchboard import sync

    with sync.connect("ws://127.0.0.1:8080/rpc") as c:
        print(c.call("add", [1, 2]))
        for ev in c.subscribe("news.>"):
            print(ev.topic, ev.data)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine, Iterator, Sequence, TypeVar

from ._conn import BatchElem, BatchResult
from .client import Client, connect as _connect
from .streams import Event, PeerInfo, Position, Subscription

T = TypeVar("T")


class SyncClient:
    """SyncClient is a Client for code without asyncio. Its methods block
    and may be called from any thread; close() (or leaving the with block)
    must be called."""

    def __init__(self, url: str | Sequence[str], **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="switchboard", daemon=True)
        self._thread.start()
        try:
            self._c: Client = self._run(_connect(url, **options)._go())
        except BaseException:
            self._stop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        f = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return f.result(timeout)
        except concurrent.futures.TimeoutError:
            f.cancel()
            raise TimeoutError from None

    @property
    def client(self) -> Client:
        """client is the asyncio Client underneath, for its loop's tasks."""
        return self._c

    def call(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        return self._run(self._c.call(method, params, timeout=timeout))

    def notify(self, method: str, params: Any = None) -> None:
        self._run(self._c.notify(method, params))

    def batch(self, elems: Sequence[BatchElem]) -> list[BatchResult]:
        return self._run(self._c.batch(elems))

    def publish(self, topic: str, data: Any = None) -> int:
        return self._run(self._c.publish(topic, data))

    def whoami(self) -> PeerInfo:
        return self._run(self._c.whoami())

    def subscribe(self, pattern: str, *, since: Position | None = None) -> SyncSubscription:
        """subscribe returns an iterator of the pattern's events, blocking
        for each; it survives reconnections as the Client's does."""
        return SyncSubscription(self, self._run(self._c.subscribe(pattern, since=since)))

    def close(self) -> None:
        if self._thread.is_alive():
            try:
                self._run(self._c.close())
            finally:
                self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SyncSubscription:
    """SyncSubscription is an iterator of a subscription's events."""

    def __init__(self, sc: SyncClient, sub: Subscription) -> None:
        self._sc = sc
        self.sub = sub

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        try:
            return self._sc._run(self.sub.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def get(self, timeout: float | None = None) -> Event:
        """get returns the next event, waiting at most timeout seconds
        (TimeoutError)."""
        return self._sc._run(self.sub.get(timeout))

    @property
    def position(self) -> Position:
        return self.sub.position

    def unsubscribe(self) -> None:
        self._sc._run(self.sub.unsubscribe())


def connect(url: str | Sequence[str], **options: Any) -> SyncClient:
    """connect connects as switchboard.connect does, and returns a
    SyncClient."""
    return SyncClient(url, **options)
