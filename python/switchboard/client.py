"""Client: a WebSocket connection to a hub that stays up."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import random
import time
from typing import Any, Generator, Sequence

from . import _wire
from ._conn import BatchElem, BatchResult, Conn, ProgressFn, check_params, spawn_in
from .errors import ClientClosed, ConnectionLost, Disconnected, TokenRefused
from .options import MIN_REFRESH_RETRY, Options, State, refresh_in, token_expiry
from .peers import PeersMixin
from .provide import ProvideMixin
from .subscribe import SubscribeMixin
from .router import Method
from .streams import Subscription, _Waking


class Client(PeersMixin, ProvideMixin, SubscribeMixin):
    """Client is a connection to a hub that stays up: it calls the hub's
    methods, serves the methods the hub calls back (Options.router), and
    delivers the events of its subscriptions. When the connection drops it
    dials again with backoff, subscribes and provides again, and carries
    on. Make one with connect(); close() must be called (or use it as an
    async context manager). Its methods are for one event loop, the one
    it was made on."""

    def __init__(self, urls: Sequence[str], o: Options) -> None:
        seen: list[str] = []
        for u in list(urls) + list(o.urls):
            if u not in seen:
                seen.append(u)
        if not seen:
            raise ValueError("switchboard: no URL")
        self._urls = seen
        self._o = o
        self._log = o.logger
        self._conn: Conn | None = None
        self._cur = 0
        self._ready = asyncio.Event()
        self._state = State.CONNECTING
        self._closed = False
        self._err: BaseException | None = None
        self._exp: float | None = None
        self._tok: str | None = None
        self._subs: dict[Subscription, None] = {}  # in subscription order
        self._sub_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._readers: set[asyncio.Task[Any]] = set()
        self._run_task: asyncio.Task[None] | None = None
        self._done = asyncio.Event()
        ProvideMixin.__init__(self)

    # ---- state ----

    @property
    def url(self) -> str:
        """url is the hub URL the client is (or was last) connected to."""
        return self._urls[self._cur]

    @property
    def state(self) -> State:
        return self._state

    @property
    def error(self) -> BaseException | None:
        """error is None while the client is open, then why it closed."""
        return self._err

    async def wait_closed(self) -> None:
        """wait_closed returns once the client is closed, by close() or by
        itself after giving up reconnecting (error says why)."""
        await self._done.wait()

    def _set_state(self, s: State, cause: BaseException | None) -> None:
        if self._state is State.CLOSED:
            return
        self._state = s
        if self._o.on_state is not None:
            try:
                self._o.on_state(s, cause)
            except Exception:
                self._log.exception("switchboard: on_state failed")

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        return spawn_in(self._tasks, coro)

    # ---- connecting ----

    async def _start(self) -> None:
        """_start makes the first connection, trying each URL once."""
        self._set_state(State.CONNECTING, None)
        errs: list[BaseException] = []
        for i, u in enumerate(self._urls):
            try:
                conn = await self._open(u)
            except Exception as e:
                errs.append(e)
                continue
            self._conn, self._cur = conn, i
            self._ready.set()
            self._set_state(State.CONNECTED, None)
            self._run_task = asyncio.get_running_loop().create_task(self._run(conn))
            return
        self._closed = True
        err = errs[0] if len(errs) == 1 else ConnectionError("; ".join(f"{u}: {e}" for u, e in zip(self._urls, errs)))
        self._err = err
        self._set_state(State.CLOSED, err)
        self._done.set()
        raise err

    async def _token(self) -> str | None:
        t = self._o.token
        if t is None or isinstance(t, str):
            return t
        r = t()
        tok = await r if inspect.isawaitable(r) else r
        return str(tok) if tok is not None else None

    async def _open(self, url: str) -> Conn:
        headers = dict(self._o.headers)
        async with asyncio.timeout(self._o.dial_timeout):
            tok = await self._token()
            if tok:
                headers["Authorization"] = "Bearer " + tok
            ws = await _wire.open_socket(
                url, headers=headers, origin=self._o.origin, ssl_context=self._o.ssl,
                max_message=self._o.max_message, timeout=self._o.dial_timeout,
            )
            conn = Conn(ws, url, self._lookup, self._inline, self._describe, self._o.max_in_flight)
            reader = asyncio.get_running_loop().create_task(conn.run())
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
            try:
                await self._resubscribe(conn)
                await self._reprovide(conn)
            except BaseException:
                await conn.close()
                await asyncio.gather(reader, return_exceptions=True)
                raise
        self._tok = tok
        self._exp = token_expiry(tok) if tok and not isinstance(self._o.token, str) else None
        return conn

    async def _run(self, conn: Conn) -> None:
        """_run repairs the connection whenever it drops, until close."""
        while True:
            cause = await self._watch(conn)
            if self._closed:
                return
            self._conn = None
            self._ready.clear()
            self._log.info("switchboard: connection lost: %s", cause)
            self._set_state(State.DISCONNECTED, cause)
            try:
                conn = await self._reconnect(cause)
            except asyncio.CancelledError:
                return
            except BaseException as e:
                await self._shutdown(e)
                return
            self._conn = conn
            self._ready.set()
            self._set_state(State.CONNECTED, None)

    async def _watch(self, conn: Conn) -> BaseException:
        """_watch pings conn and refreshes its token until it ends."""
        helpers = []
        if self._o.ping_interval is not None and self._o.ping_interval > 0:
            helpers.append(asyncio.get_running_loop().create_task(self._ping(conn, self._o.ping_interval)))
        if self._exp is not None:
            helpers.append(asyncio.get_running_loop().create_task(self._refresh(conn, self._exp)))
        try:
            return await asyncio.shield(conn.done)
        finally:
            for h in helpers:
                h.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)

    async def _ping(self, conn: Conn, every: float) -> None:
        # rpc.ping rather than a WebSocket ping, which the hub's WebSocket
        # library would answer even if the hub served nothing.
        while True:
            await asyncio.sleep(every)
            try:
                async with asyncio.timeout(self._o.ping_timeout):
                    await conn.call("rpc.ping", None)
            except TimeoutError:
                conn._lost(ConnectionLost(f"no answer to rpc.ping within {self._o.ping_timeout}s"))
                await conn.close(1001, "ping timeout")
                return
            except ConnectionLost:
                return

    async def _refresh(self, conn: Conn, exp: float) -> None:
        delay = refresh_in(exp)
        while True:
            await asyncio.sleep(delay)
            try:
                async with asyncio.timeout(self._o.dial_timeout):
                    tok = await self._token()
                    if not tok:
                        raise ValueError("the token function returned no token")
                    await conn.call("rpc.auth", {"token": tok})
            except ConnectionLost:
                return
            except Exception as e:
                err = TokenRefused(f"token refresh failed: {e}")
                err.__cause__ = e
                self._log.warning("switchboard: %s", err)
                self._set_state(State.CONNECTED, err)
                delay = max((exp - time.time()) / 2, MIN_REFRESH_RETRY)
                continue
            self._tok = tok
            new = token_expiry(tok)
            if new is None:
                return
            exp = new
            delay = refresh_in(exp)

    async def _reconnect(self, cause: BaseException) -> Conn:
        """_reconnect dials until it succeeds or has tried max_attempts
        times; each attempt goes to the URL after the one before."""
        o = self._o
        if o.max_attempts < 0:
            raise cause
        delay, wait, attempt = o.min_backoff, 0.0, 0
        while True:
            attempt += 1
            if o.max_attempts > 0 and attempt > o.max_attempts:
                raise ClientClosed(f"gave up after {o.max_attempts} attempts: {cause}") from cause
            await asyncio.sleep(max(wait, delay / 2 + random.uniform(0, delay / 2)))
            self._set_state(State.CONNECTING, None)
            i = (self._cur + 1) % len(self._urls)
            try:
                conn = await self._open(self._urls[i])
            except Exception as e:
                self._cur = i
                cause = e
                self._set_state(State.DISCONNECTED, e)
                delay = min(2 * delay, o.max_backoff)
                # A hub that refused with a Retry-After (a full one says
                # 1 s) is not asked again sooner; the peers it turned away
                # come back spread over half as long again.
                ra = getattr(e, "retry_after", 0.0) or 0.0
                wait = ra + random.uniform(0, ra / 2) if ra > 0 else 0.0
                continue
            self._cur = i
            return conn

    # ---- closing ----

    async def close(self) -> None:
        """close closes the connection (code 1000), stops reconnecting,
        ends the subscriptions and waits for the client's tasks. Calls in
        flight fail with ClientClosed."""
        await self._shutdown(None)

    async def _shutdown(self, cause: BaseException | None) -> None:
        if self._closed:
            await self._done.wait()
            return
        self._closed = True
        self._err = ClientClosed("client closed") if cause is None else cause
        self._ready.set()
        me = asyncio.current_task()
        if self._run_task is not None and self._run_task is not me:
            self._run_task.cancel()
            await asyncio.gather(self._run_task, return_exceptions=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close(1000, "")
        if self._readers:
            await asyncio.gather(*list(self._readers), return_exceptions=True)
        for s in list(self._subs):
            s._end(self._err if isinstance(self._err, ClientClosed) else ClientClosed(f"client closed: {self._err}"))
        self._subs.clear()
        tasks = [t for t in self._tasks if t is not me]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if cause is not None:
            self._log.warning("switchboard: client closed: %s", cause)
        self._set_state(State.CLOSED, cause)
        self._state = State.CLOSED
        self._done.set()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ---- calls ----

    async def _ready_conn(self, fail_fast: bool | None) -> Conn:
        ff = self._o.fail_fast if fail_fast is None else fail_fast
        while True:
            if self._closed:
                if isinstance(self._err, ClientClosed):
                    raise ClientClosed(str(self._err)) from self._err.__cause__
                raise ClientClosed(f"client closed: {self._err}") from self._err
            c = self._conn
            if c is not None and not c.closed:
                return c
            if ff:
                raise Disconnected("not connected")
            await self._ready.wait()

    def _bounded(self, timeout: float | None) -> asyncio.Timeout:
        t = self._o.call_timeout if timeout is None else timeout
        return asyncio.timeout(t if t is not None and t > 0 else None)

    async def call(self, method: str, params: Any = None, *, timeout: float | None = None,
                   on_progress: ProgressFn | None = None, fail_fast: bool | None = None) -> Any:
        """call calls method with params (None, a list: by position, or a
        dict: by name) and returns its result. A JSON-RPC error is raised
        as RPCError. timeout (default call_timeout) covers waiting for a
        connection too; when it passes, or the calling task is cancelled,
        the hub is sent rpc.cancel. on_progress gets the data of each
        rpc.progress for the call (a coroutine function is run as a
        task)."""
        params = check_params(params)
        async with self._bounded(timeout):
            conn = await self._ready_conn(fail_fast)
            try:
                return await conn.call(method, params, on_progress)
            except ConnectionLost as e:
                if self._closed:
                    raise ClientClosed("client closed") from e
                raise

    def start_call(self, method: str, params: Any = None, *, timeout: float | None = None) -> Call:
        """start_call starts a call and returns it at once: iterate it for
        its progress, await it for its result, cancel() it to cancel."""
        return Call(self, method, params, timeout)

    async def notify(self, method: str, params: Any = None, *, fail_fast: bool | None = None) -> None:
        """notify sends a notification: nothing comes back."""
        params = check_params(params)
        async with self._bounded(None):
            conn = await self._ready_conn(fail_fast)
            await conn.notify(method, params)

    async def batch(self, elems: Sequence[BatchElem], *, timeout: float | None = None) -> list[BatchResult]:
        """batch sends elems as one batch and returns one BatchResult per
        element, in order (a notification's is empty)."""
        async with self._bounded(timeout):
            conn = await self._ready_conn(None)
            return await conn.batch(elems)

    async def publish(self, topic: str, data: Any = None) -> int:
        """publish publishes data on topic and returns how many peers the
        event reached (rpc.publish)."""
        r = await self.call("rpc.publish", {"topic": topic, "data": data})
        return int(r.get("delivered", 0)) if isinstance(r, dict) else 0

    # ---- what the hub calls ----

    def _describe(self) -> Any:
        from .router import Router

        r = self._o.router or Router()
        return r.describe(self._described())

    def _lookup(self, method: str) -> Method | None:
        if self._o.router is not None:
            m = self._o.router.lookup(method)
            if m is not None:
                return m
        return self._provided(method)

class Call(_Waking):
    """Call is a call started with Client.start_call: an async iterator of
    its progress notes, and awaitable for its result."""

    def __init__(self, c: Client, method: str, params: Any, timeout: float | None) -> None:
        self._notes: list[Any] = []
        self._task = c._spawn(c.call(method, params, timeout=timeout, on_progress=self._note))
        self._task.add_done_callback(lambda _: self._wake())

    def _note(self, data: Any) -> None:
        self._notes.append(data)
        self._wake()

    def __aiter__(self) -> Call:
        return self

    async def __anext__(self) -> Any:
        while not self._notes:
            if self._task.done():
                raise StopAsyncIteration
            await self._sleep()
        return self._notes.pop(0)

    def __await__(self) -> Generator[Any, None, Any]:
        return self._task.__await__()

    def cancel(self) -> None:
        """cancel cancels the call: the hub is sent rpc.cancel, and
        awaiting the call raises CancelledError."""
        self._task.cancel()


class _Connecting:
    """_Connecting is what connect() returns: await it for the Client, or
    use it as an async context manager that closes the client."""

    def __init__(self, urls: Sequence[str], o: Options) -> None:
        self._urls = urls
        self._o = o
        self._client: Client | None = None

    async def _go(self) -> Client:
        c = Client(self._urls, self._o)
        await c._start()
        self._client = c
        return c

    def __await__(self) -> Generator[Any, None, Client]:
        return self._go().__await__()

    async def __aenter__(self) -> Client:
        return await self._go()

    async def __aexit__(self, *exc: Any) -> None:
        if self._client is not None:
            await self._client.close()


def connect(url: str | Sequence[str], **options: Any) -> _Connecting:
    """connect connects to the hub at url (ws:// or wss://, usually ending
    in /rpc; or a list of URLs, the nodes of a cluster, tried in turn) and
    returns the connected Client:

        async with switchboard.connect("ws://127.0.0.1:8080/rpc") as c:
            print(await c.call("add", [1, 2]))

    The options are the fields of Options. The first connection is tried
    once per URL: if none answers, connect raises (a refused handshake is
    a StatusError). Later drops are repaired in the background."""
    o = Options(**options)
    if o.max_in_flight < 1 or o.event_buffer < 1:
        raise ValueError("switchboard: max_in_flight and event_buffer must be at least 1")
    urls = [url] if isinstance(url, str) else list(url)
    return _Connecting(urls, dataclasses.replace(o))


