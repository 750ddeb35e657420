"""Subscriptions: events with their positions in the hub's stream, resumed
after a drop from the last one taken, and told when some were missed."""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Union

if TYPE_CHECKING:
    from .subscribe import SubscribeMixin


@dataclass(frozen=True)
class Position:
    """Position is a place in a hub's event stream: the epoch naming the
    stream and an event's sequence number in it. Save one to resume a
    subscription in a later run (subscribe(since=...))."""

    epoch: str
    seq: int

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "seq": self.seq}

    def __str__(self) -> str:
        return f"{self.epoch}:{self.seq}"


@dataclass(frozen=True)
class PeerInfo:
    """PeerInfo is how the hub shows a peer: its id, the user its token
    named (if any) and, in a cluster, its node."""

    id: str
    user: str = ""
    node: str = ""

    @classmethod
    def from_json(cls, v: Any) -> PeerInfo:
        v = v if isinstance(v, dict) else {}
        return cls(str(v.get("id", "")), v.get("user") or "", v.get("node") or "")


@dataclass(frozen=True)
class Event:
    """Event is one event of a subscription: its topic, data, and position
    (seq, epoch). An Event with missed set carries nothing else: the hub
    could not give every event since the last one (its history was
    shorter, or it restarted); what was built from the events should be
    reloaded."""

    topic: str
    data: Any
    seq: int = 0
    epoch: str = ""
    missed: bool = False

    @property
    def position(self) -> Position:
        return Position(self.epoch, self.seq)


MISSED = Event(topic="", data=None, missed=True)


@dataclass(frozen=True)
class PresenceChange:
    """PresenceChange is a peer joining or leaving a subscription's
    pattern (subscribe(on_presence=...))."""

    join: bool
    topic: str
    peer: PeerInfo


PresenceFn = Callable[[PresenceChange], Union[None, Awaitable[None]]]
_Item = Union[Event, PresenceChange]


@dataclass(frozen=True)
class RevokedNote:
    """RevokedNote is what the hub ended (rpc.revoked) because a refreshed
    token no longer allows it: subscription patterns and provided methods,
    as they were subscribed and provided."""

    topics: list[str]
    methods: list[str]


_PLAIN = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def user_word(identity: str) -> str:
    """user_word returns an identity (a token's subject, the user of
    whoami) escaped into one topic word, as the hub puts it into topics,
    rules ({user}) and rpc.call addresses: letters, digits, "_" and "-"
    stay, every other byte of its UTF-8 becomes ":" and two lower-case hex
    digits. "user." + user_word("john.doe@example.com") + ".inbox" is
    "user.john:2edoe:40example:2ecom.inbox"."""
    return "".join(chr(b) if b in _PLAIN else f":{b:02x}" for b in identity.encode())


def match(pattern: str, topic: str) -> bool:
    """match reports whether topic matches pattern: "*" stands for one
    word, a final ">" for one or more."""
    p = pattern.split(".")
    t = topic.split(".")
    for i, w in enumerate(p):
        if w == ">" and i == len(p) - 1:
            return len(t) > i
        if i >= len(t) or (w != "*" and w != t[i]):
            return False
    return len(p) == len(t)


class _Waking:
    """_Waking is an async iterator whose one reader sleeps until _wake
    says there is more."""

    _waiter: asyncio.Future[None] | None = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _sleep(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None


class Subscription(_Waking):
    """Subscription is an async iterator of the events of a topic pattern.
    It lasts across reconnections: the client subscribes again from the
    position of the last event taken, and the hub replays what was
    published meanwhile; each event comes once, in order. Iteration ends
    when the subscription is unsubscribed, revoked, or the client closes
    (error says which). It is for one reader at a time."""

    def __init__(self, client: SubscribeMixin, pattern: str, max_events: int, on_presence: PresenceFn | None, since: Position | None) -> None:
        self._c = client
        self.pattern = pattern
        self._max = max_events
        self._on_presence = on_presence
        self._queue: collections.deque[_Item] = collections.deque()
        self._gap = False
        self._ended = False
        self.error: BaseException | None = None
        """error is None while the subscription lasts and after
        unsubscribe(); a Revoked once the hub revoked it; a ClientClosed
        once the client closed."""
        self.dropped = 0
        self._pos = since or Position("", 0)
        self._since_given = since is not None
        self.known = False  # the rpc.subscribe result has been taken in
        self._head = 0
        self._held: list[dict[str, Any]] = []

    @property
    def position(self) -> Position:
        """position is that of the last event taken or, before any, of the
        start: where the subscription would resume."""
        return self._pos

    @property
    def wants_presence(self) -> bool:
        return self._on_presence is not None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            while not self._queue:
                if self._ended:
                    raise StopAsyncIteration
                await self._sleep()
            item = self._queue.popleft()
            if isinstance(item, Event):
                return item
            if self._on_presence is not None:
                r = self._on_presence(item)
                if r is not None:
                    await r

    async def get(self, timeout: float | None = None) -> Event:
        """get returns the next event, waiting at most timeout seconds
        (TimeoutError); StopAsyncIteration once the subscription ended."""
        if timeout is None:
            return await self.__anext__()
        async with asyncio.timeout(timeout):
            return await self.__anext__()

    async def unsubscribe(self) -> None:
        """unsubscribe ends the subscription: the hub is told when no other
        subscription of the client has the same pattern."""
        await self._c._unsubscribe(self)

    # ---- fed by the client, on the event loop ----

    def _push(self, item: _Item) -> None:
        if self._ended:
            return
        if len(self._queue) >= self._max:
            self.dropped += 1
            self._gap = True
            return
        if self._gap:
            self._gap = False
            self._queue.append(MISSED)
        self._queue.append(item)
        self._wake()

    def _missed(self) -> None:
        self._gap = True
        if len(self._queue) < self._max:
            self._gap = False
            self._queue.append(MISSED)
            self._wake()

    def _end(self, err: BaseException | None = None) -> None:
        if not self._ended:
            self._ended = True
            self.error = err
        self._wake()

    def _reset(self) -> None:
        """_reset marks the subscription not started, before it is
        subscribed again on a new connection."""
        self.known = False
        self._held = []

    def _start(self, res: Any, since: Position | None) -> None:
        """_start takes in the rpc.subscribe result (made with since) and
        the events held meanwhile."""
        if self.known:
            return
        self.known = True
        res = res if isinstance(res, dict) else {}
        epoch = str(res.get("epoch", ""))
        seq = res.get("seq", 0)
        self._head = seq if isinstance(seq, int) else 0
        if since is None:
            self._pos = Position(epoch, self._head)
        elif epoch != self._pos.epoch:
            self._pos = Position(epoch, 0)
            self._missed()
        elif res.get("recovered") is not True:
            self._missed()
        held, self._held = self._held, []
        for ev in held:
            self._offer(ev)

    def _event(self, ev: dict[str, Any]) -> None:
        if not self.known:
            if len(self._held) >= self._max:
                self.dropped += 1
                self._gap = True
            else:
                self._held.append(ev)
            return
        self._offer(ev)

    def _offer(self, ev: dict[str, Any]) -> None:
        seq = ev.get("seq") or 0
        replay = ev.get("replay") or ""
        if seq:
            if (replay and replay != self.pattern) or seq <= self._pos.seq or (not replay and seq <= self._head):
                return
            self._pos = Position(str(ev.get("epoch", "")), seq)
        self._push(Event(str(ev.get("topic", "")), ev.get("data"), seq, str(ev.get("epoch", ""))))
