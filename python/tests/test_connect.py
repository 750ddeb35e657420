"""Connecting: tokens and their refresh, a full hub's Retry-After, the
Origin header, and the HTTP and synchronous clients."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading

import pytest

import switchboard
from switchboard import State, StatusError, sync
from switchboard.http import HTTPClient
from conftest import run
from helpers import jwt, now

KEY = b"0123456789abcdef0123456789abcdef"


@pytest.fixture
def jwt_hub(make_hub):
    fd, path = tempfile.mkstemp()
    os.write(fd, KEY)
    os.close(fd)
    try:
        yield make_hub("-demo", "-jwt-key", path)
    finally:
        os.unlink(path)


@run
async def test_token_refreshed_before_exp(jwt_hub):
    issued: list[str] = []
    three = asyncio.Event()
    states: list[tuple[State, BaseException | None]] = []

    async def token() -> str:
        issued.append(jwt(KEY, {"sub": "alice", "exp": now() + 3}))
        if len(issued) == 3:
            three.set()
        return issued[-1]

    async with switchboard.connect(jwt_hub.ws, token=token, on_state=lambda s, e: states.append((s, e))) as c:
        assert (await c.whoami()).user == "alice"
        # The first token expires while we wait: refreshed twice by then.
        await asyncio.wait_for(three.wait(), 20)
        assert await c.call("add", [1, 2]) == 3
        assert states == [(State.CONNECTING, None), (State.CONNECTED, None)]


@run
async def test_static_token_expires_with_4001(jwt_hub):
    lost: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    def on_state(s: State, err: BaseException | None) -> None:
        if s is State.DISCONNECTED and not lost.done():
            lost.set_result(err)

    tok = jwt(KEY, {"sub": "bob", "exp": now() + 2})
    async with switchboard.connect(jwt_hub.ws, token=tok, on_state=on_state, max_attempts=1) as c:
        err = await asyncio.wait_for(lost, 20)
        assert isinstance(err, switchboard.ConnectionLost) and err.close_code == 4001
        await c.wait_closed()  # the expired token is refused (401): it gives up
        assert isinstance(c.error, switchboard.ClientClosed)
    with pytest.raises(StatusError) as e:
        await switchboard.connect(jwt_hub.ws)
    assert e.value.status == 401 and e.value.code == switchboard.UNAUTHORIZED


@run
async def test_full_hub_says_retry_after(make_hub):
    h = make_hub("-demo", "-max-conns", "1")
    async with switchboard.connect(h.ws):
        with pytest.raises(StatusError) as e:
            await switchboard.connect(h.ws)
        assert e.value.status == 503 and e.value.retry_after == 1.0


@run
async def test_reconnection_waits_retry_after(monkeypatch):
    """A refusal with Retry-After holds the next attempt back at least that
    long, however short the backoff; the pauses are recorded, not slept."""
    import switchboard.client as sc
    from switchboard.options import Options

    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(d: float) -> None:
        waits.append(d)
        await real_sleep(0)

    monkeypatch.setattr(sc.asyncio, "sleep", sleep)
    c = sc.Client(["ws://a.invalid/rpc", "ws://b.invalid/rpc"], Options(min_backoff=0.01, max_backoff=0.02))
    tried: list[str] = []

    async def open_(url: str) -> object:
        tried.append(url)
        if len(tried) < 3:
            raise StatusError(503, "", 1.0)
        return "conn"

    monkeypatch.setattr(c, "_open", open_)
    assert await c._reconnect(ConnectionError("cut")) == "conn"
    assert tried == ["ws://b.invalid/rpc", "ws://a.invalid/rpc", "ws://b.invalid/rpc"]
    assert waits[0] < 0.02 and 1.0 <= waits[1] <= 1.5 and 1.0 <= waits[2] <= 1.5, waits


@run
async def test_origin(hub):
    with pytest.raises(StatusError) as e:
        await switchboard.connect(hub.ws, origin="https://evil.example")
    assert e.value.status == 403
    async with switchboard.connect(hub.ws, origin=f"http://{hub.addr}") as c:
        assert await c.call("add", [1, 2]) == 3


def test_http_client(hub):
    hc = HTTPClient(hub.http)
    assert hc.call("subtract", {"minuend": 42, "subtrahend": 23}) == 19
    assert hc.call("echo", [2**70, 1]) == [2**70, 1]
    hc.notify("notify_hello", [7])
    rs = hc.batch([switchboard.BatchElem("sum", [1, 2, 4]), switchboard.BatchElem("update", [1], notify=True),
                   switchboard.BatchElem("nope")])
    assert rs[0].result == 7 and rs[1].result is None and rs[2].error.code == -32601
    with pytest.raises(switchboard.RPCError) as e:
        hc.call("subtract", ["x"])
    assert e.value.code == -32602
    assert len(hc.whoami().id) == 36
    assert hc.publish("news.http", 1) == 0
    with pytest.raises(StatusError) as se:
        HTTPClient(hub.http.replace("/rpc", "/nowhere")).call("add", [1, 2])
    assert se.value.status == 404


def test_sync_facade(hub):
    with sync.connect(hub.ws) as c, sync.connect(hub.ws) as d:
        assert c.call("add", [1, 2]) == 3
        sub = c.subscribe("news.>")
        assert d.publish("news.sync", {"n": 1}) == 1
        ev = next(iter(sub))
        assert (ev.topic, ev.data) == ("news.sync", {"n": 1})
        with pytest.raises(TimeoutError):
            sub.get(timeout=0.05)
        rs = c.batch([switchboard.BatchElem("add", [1, 1])])
        assert rs[0].result == 2
    assert not [t for t in threading.enumerate() if t.name == "switchboard"]


def test_http_client_unauthorized(jwt_hub):
    with pytest.raises(StatusError) as e:
        HTTPClient(jwt_hub.http).call("add", [1, 2])
    assert e.value.status == 401 and e.value.code == switchboard.UNAUTHORIZED
    hc = HTTPClient(jwt_hub.http, token=jwt(KEY, {"sub": "carol", "exp": now() + 60}))
    assert hc.whoami().user == "carol"


@run
async def test_refused_refresh_is_reported_then_reconnects(jwt_hub):
    calls = 0
    refused = asyncio.Event()
    back = asyncio.Event()
    seen: list[tuple[State, str]] = []

    lost = False

    def token() -> str:  # a plain function will do too
        nonlocal calls
        calls += 1
        if calls > 1 and not lost:  # down until the hub has closed at exp
            raise RuntimeError("the identity provider is down")
        return jwt(KEY, {"sub": "dave", "exp": now() + 2})

    def on_state(s: State, err: BaseException | None) -> None:
        nonlocal lost
        seen.append((s, type(err).__name__))
        if s is State.DISCONNECTED:
            lost = True
        if isinstance(err, switchboard.TokenRefused):
            refused.set()
        if s is State.CONNECTED and refused.is_set() and err is None:
            back.set()

    async with switchboard.connect(jwt_hub.ws, token=token, on_state=on_state, min_backoff=0.05) as c:
        await asyncio.wait_for(refused.wait(), 20)
        # The old token expired (4001); the next connection got a new one.
        await asyncio.wait_for(back.wait(), 20)
        assert (await c.whoami()).user == "dave"
    assert (State.CONNECTED, "TokenRefused") in seen
    assert any(s is State.DISCONNECTED and e == "ConnectionLost" for s, e in seen)


@run
async def test_narrowed_token_revokes_subscriptions_and_provisions(jwt_hub):
    calls = 0
    noted: asyncio.Future[switchboard.RevokedNote] = asyncio.get_running_loop().create_future()

    def token() -> str:
        nonlocal calls
        calls += 1
        grants = {"subscribe": ["news.>", "chat.>"], "provide": ["billing.*"], "call": [">"]}
        if calls > 1:  # the refreshed token grants less
            grants = {"subscribe": ["news.>"], "call": [">"]}
        return jwt(KEY, {"sub": "erin", "exp": now() + 3, "switchboard": grants})

    def on_revoked(note: switchboard.RevokedNote) -> None:
        if not noted.done():
            noted.set_result(note)

    async with switchboard.connect(jwt_hub.ws, token=token, on_revoked=on_revoked) as c:
        news = await c.subscribe("news.>")
        chat = await c.subscribe("chat.>")
        await c.provide("billing.charge", lambda: 1)
        note = await asyncio.wait_for(noted, 20)
        assert (note.topics, note.methods) == (["chat.>"], ["billing.charge"])
        async for _ in chat:
            raise AssertionError("an event after the revocation")
        assert isinstance(chat.error, switchboard.Revoked) and chat.error.topic == "chat.>"
        assert news.error is None
    assert isinstance(news.error, switchboard.ClientClosed)


def test_user_word():
    assert switchboard.user_word("john.doe@example.com") == "john:2edoe:40example:2ecom"
    assert switchboard.user_word("a_b-C9") == "a_b-C9"
    assert switchboard.user_word("é*") == ":c3:a9:2a"


@run
async def test_reconnection_to_a_full_hub_waits_its_retry_after(make_hub):
    from helpers import Proxy
    import time

    free, full = make_hub("-demo"), make_hub("-demo", "-max-conns", "1")
    proxy = await Proxy(free.addr).start()
    events: list[tuple[float, State, BaseException | None]] = []
    refused = asyncio.Event()
    back = asyncio.Event()

    def on_state(s: State, err: BaseException | None) -> None:
        events.append((time.monotonic(), s, err))
        if isinstance(err, StatusError):
            refused.set()
        elif s is State.CONNECTED and refused.is_set():
            back.set()

    try:
        async with switchboard.connect(proxy.ws, on_state=on_state, min_backoff=0.01, max_backoff=0.02) as c:
            holder = await switchboard.connect(full.ws)  # takes the full hub's only slot
            proxy.target = full.addr
            proxy.cut()
            await asyncio.wait_for(refused.wait(), 20)
            await holder.close()
            await asyncio.wait_for(back.wait(), 20)
            assert await c.call("add", [1, 2]) == 3
    finally:
        await proxy.close()
    i = next(i for i, e in enumerate(events) if isinstance(e[2], StatusError))
    err = events[i][2]
    assert isinstance(err, StatusError) and err.status == 503 and err.retry_after == 1.0
    nxt = next(e for e in events[i + 1:] if e[1] is State.CONNECTING)
    assert nxt[0] - events[i][0] >= 1.0  # not the 10-20 ms of its own backoff
