"""Subscriptions: events with positions, history, presence, resuming
without loss after a cut connection, and being told of a hub restart."""

from __future__ import annotations

import asyncio

import switchboard
from switchboard import Event, Position, PresenceChange, State
from conftest import run
from helpers import Proxy, States


@run
async def test_subscribe_publish_history_presence(hub):
    async with switchboard.connect(hub.ws) as a, switchboard.connect(hub.ws) as b:
        changes: list[PresenceChange] = []
        sub = await a.subscribe("news.>", on_presence=changes.append)
        both = await a.subscribe("news.*")  # overlapping: both get the event
        handled: list[Event] = []
        got = asyncio.Event()

        def handle(ev: Event) -> None:
            handled.append(ev)
            got.set()

        await a.subscribe("news.sport", handler=handle)
        assert await b.publish("news.sport", {"score": "2-1"}) == 1
        assert await b.publish("news.weather", "sunny") == 1
        e1 = await sub.get(20)
        e2 = await sub.get(20)
        assert (e1.topic, e1.data, e2.topic, e2.data) == ("news.sport", {"score": "2-1"}, "news.weather", "sunny")
        assert e1.epoch and e2.seq > e1.seq > 0
        assert (await both.get(20)).seq == e1.seq
        await asyncio.wait_for(got.wait(), 20)
        assert [e.seq for e in handled] == [e1.seq]
        assert sub.position == e2.position

        h = await b.history("news.>", limit=10)
        assert [(e.topic, e.seq) for e in h.events] == [("news.sport", e1.seq), ("news.weather", e2.seq)]
        assert h.epoch == e1.epoch and not h.truncated
        h = await b.history("news.>", since=e1.position)
        assert [e.seq for e in h.events] == [e2.seq]

        me = await a.whoami()
        assert [p.id for p in await b.presence("news.sport")] == [me.id]
        bs = await b.subscribe("news.local")
        await b.publish("news.local", 1)  # comes after the join, in order
        ev = await sub.get(20)
        assert ev.topic == "news.local"
        bme = await b.whoami()
        assert any(c.join and c.peer.id == bme.id for c in changes)
        await bs.unsubscribe()
        await sub.unsubscribe()
        async for _ in sub:  # ended: iteration stops
            raise AssertionError("event after unsubscribe")


@run
async def test_resume_without_loss_across_a_cut(hub):
    proxy = await Proxy(hub.addr).start()
    states = States()
    try:
        async with switchboard.connect(proxy.ws, on_state=states, min_backoff=0.05) as sub_c, \
                switchboard.connect(hub.ws) as pub:
            sub = await sub_c.subscribe("orders.>")
            await pub.publish("orders.1", 1)
            assert (await sub.get(20)).data == 1
            states.connected.clear()
            assert proxy.cut() == 1
            # Published while the subscriber is away; replayed on return.
            for i in range(2, 6):
                await pub.publish(f"orders.{i}", i)
            await asyncio.wait_for(states.connected.wait(), 20)
            await pub.publish("orders.6", 6)
            got = [(await sub.get(20)).data for _ in range(5)]
            assert got == [2, 3, 4, 5, 6]  # none missed, none twice, no missed marker
            assert State.DISCONNECTED in states.seen
            assert await sub_c.call("add", [1, 2]) == 3
    finally:
        await proxy.close()


@run
async def test_told_of_missed_events_after_hub_restart(hub):
    states = States()
    async with switchboard.connect(hub.ws, on_state=states, min_backoff=0.05, max_backoff=0.2) as c:
        sub = await c.subscribe("news.>")
        await c.publish("news.before", 1)
        first = await sub.get(20)
        states.connected.clear()
        await asyncio.to_thread(hub.restart)  # SIGTERM: the hub closes with 1001
        await asyncio.wait_for(states.connected.wait(), 30)
        missed = await sub.get(20)
        assert missed.missed  # a new epoch: the old positions mean nothing
        await c.publish("news.after", "back")
        ev = await sub.get(20)
        assert (ev.topic, ev.data) == ("news.after", "back")
        assert ev.epoch != first.epoch


@run
async def test_resume_from_a_saved_position(hub):
    async with switchboard.connect(hub.ws) as c:
        sub = await c.subscribe("log.>")
        await c.publish("log.a", "a")
        saved = (await sub.get(20)).position
        await sub.unsubscribe()
        await c.publish("log.b", "b")
        await c.publish("log.c", "c")
    # A later run of the program starts after what it processed.
    async with switchboard.connect(hub.ws) as c:
        sub = await c.subscribe("log.>", since=saved)
        assert [(await sub.get(20)).data for _ in range(2)] == ["b", "c"]
        sub2 = await c.subscribe("log.>", since=Position("another-epoch", 1))
        assert (await sub2.get(20)).missed


@run
async def test_failover_to_the_next_hub(make_hub):
    h1, h2 = make_hub("-demo"), make_hub("-demo")
    states = States()
    async with switchboard.connect([h1.ws, h2.ws], on_state=states, min_backoff=0.05) as c:
        assert c.url == h1.ws
        states.connected.clear()
        await asyncio.to_thread(h1.kill)
        await asyncio.wait_for(states.connected.wait(), 30)
        assert c.url == h2.ws
        assert await c.call("add", [2, 3]) == 5


@run
async def test_slow_reader_is_told_it_missed_events(hub):
    async with switchboard.connect(hub.ws, event_buffer=2) as c:
        sub = await c.subscribe("fast.>")
        last = 0
        for i in range(5):
            last = await c.publish("fast.x", i)
        # The reader took nothing meanwhile: two were kept, the rest dropped.
        await c.call("rpc.ping")  # the events came before this answer
        got = [await sub.get(20) for _ in range(2)]
        assert [e.data for e in got] == [0, 1] and last == 1
        assert sub.dropped == 3
        await c.publish("fast.x", 5)
        missed = await sub.get(20)
        assert missed.missed
        assert (await sub.get(20)).data == 5


@run
async def test_resume_without_loss_across_a_restart_of_a_persistent_hub(make_hub, tmp_path):
    import socket

    with socket.socket() as s:  # a port for the hub's embedded NATS server
        s.bind(("127.0.0.1", 0))
        nats = "127.0.0.1:%d" % s.getsockname()[1]
    h = make_hub("-demo", "-nats", "embedded", "-nats-listen", nats, "-nats-jetstream",
                 "-nats-store", str(tmp_path / "store"))
    states = States()
    async with switchboard.connect(h.ws, on_state=states, min_backoff=0.05, max_backoff=0.2) as c:
        sub = await c.subscribe("orders.>")
        await c.publish("orders.1", 1)
        first = await sub.get(20)
        states.connected.clear()
        await asyncio.to_thread(h.restart)  # the stream is on disk: same epoch
        async with switchboard.connect(h.ws) as pub:
            await pub.publish("orders.2", 2)
            await pub.publish("orders.3", 3)
        await asyncio.wait_for(states.connected.wait(), 30)
        got = [await sub.get(20) for _ in range(2)]
        assert [(e.missed, e.data) for e in got] == [(False, 2), (False, 3)]
        assert got[0].epoch == first.epoch and got[1].seq > got[0].seq > first.seq
