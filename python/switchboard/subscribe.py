"""Subscribing, and taking in the events and presence changes the hub
sends for the client's subscriptions."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import TYPE_CHECKING, Any, Callable

from ._conn import Conn, ProgressFn
from .errors import ClientClosed, ConnectionLost, Disconnected, Revoked, RPCError
from .options import Options
from .streams import PeerInfo, Position, PresenceChange, PresenceFn, RevokedNote, Subscription, match


class SubscribeMixin:
    """SubscribeMixin gives Client its subscriptions."""

    if TYPE_CHECKING:
        _o: Options
        _log: logging.Logger
        _subs: dict[Subscription, None]
        _sub_lock: asyncio.Lock

        async def call(self, method: str, params: Any = None, *, timeout: float | None = None,
                       on_progress: ProgressFn | None = None, fail_fast: bool | None = None) -> Any: ...

        async def notify(self, method: str, params: Any = None, *, fail_fast: bool | None = None) -> None: ...

        def _spawn(self, coro: Any) -> asyncio.Task[Any]: ...

        def _drop_provision(self, method: str) -> None: ...

    # ---- subscriptions ----

    async def subscribe(self, pattern: str, *, since: Position | None = None,
                        on_presence: PresenceFn | None = None,
                        handler: Callable[[Any], Any] | None = None) -> Subscription:
        """subscribe subscribes to a topic pattern ("news.*", "news.>") and
        returns the Subscription, an async iterator of its events, once the
        hub has accepted (a refusal is an RPCError, -32001 when the hub's
        policy says no). since resumes after a saved position; on_presence
        asks for the peers joining and leaving, in order with the events;
        handler, if given, is called with each event on a task of the
        client's instead."""
        s = Subscription(self, pattern, self._o.event_buffer, on_presence, since)
        params: dict[str, Any] = {"topic": pattern}
        if since is not None:
            params["since"] = since.to_json()
        if on_presence is not None:
            params["presence"] = True
        async with self._sub_lock:
            self._subs[s] = None
            try:
                res = await self.call("rpc.subscribe", params)
            except BaseException as e:
                self._subs.pop(s, None)
                if not isinstance(e, RPCError) and not any(o.pattern == pattern for o in self._subs):
                    # The hub may have subscribed after we stopped waiting.
                    self._spawn(self._forget(pattern))
                raise
            s._start(res, since)
        if handler is not None:
            self._spawn(_drive(s, handler, self._log))
        return s

    async def _unsubscribe(self, s: Subscription) -> None:
        async with self._sub_lock:
            if s not in self._subs:
                return
            del self._subs[s]
            s._end()
            if any(o.pattern == s.pattern for o in self._subs):
                return
            try:
                await self.call("rpc.unsubscribe", {"topic": s.pattern}, fail_fast=True)
            except (Disconnected, ClientClosed, ConnectionLost):
                pass  # the hub forgets a connection's subscriptions with it

    async def _forget(self, pattern: str) -> None:
        try:
            await self.notify("rpc.unsubscribe", {"topic": pattern}, fail_fast=True)
        except (Disconnected, ClientClosed, ConnectionLost):
            pass

    async def _resubscribe(self, conn: Conn) -> None:
        """_resubscribe subscribes again on a new connection to each
        pattern, from the earliest position of its subscriptions."""
        groups: dict[str, dict[str, Any]] = {}
        for s in self._subs:
            s._reset()
            p = groups.setdefault(s.pattern, {"topic": s.pattern})
            if s.wants_presence:
                p["presence"] = True
            pos = s.position
            if not pos.epoch:
                continue
            since = p.get("since")
            if since is None:
                p["since"] = pos.to_json()
            elif since["epoch"] == pos.epoch and pos.seq < since["seq"]:
                since["seq"] = pos.seq
        if not groups:
            return
        results = await asyncio.gather(*(conn.call("rpc.subscribe", p) for p in groups.values()))
        for p, res in zip(groups.values(), results):
            since = Position(p["since"]["epoch"], p["since"]["seq"]) if "since" in p else None
            for s in list(self._subs):
                if s.pattern == p["topic"]:
                    s._start(res, since)

    def _inline(self, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            return
        if method == "rpc.revoked":
            self._revoked(params)
            return
        if method == "rpc.missed":
            self._missed_topics(params)
            return
        topic = params.get("topic")
        if not isinstance(topic, str):
            return
        if method == "rpc.event":
            replay = params.get("replay")
            for s in self._subs:
                if (s.pattern == replay) if replay else match(s.pattern, topic):
                    s._event(params)
            return
        change = PresenceChange(method == "rpc.join", topic, PeerInfo.from_json(params.get("peer")))
        for s in self._subs:
            if s.wants_presence and s.pattern == topic:
                s._push(change)

    def _missed_topics(self, params: dict[str, Any]) -> None:
        """_missed_topics takes in rpc.missed: in a cluster of hubs, the hub
        lost events from another node on topics that the named patterns
        match. The subscriptions of those patterns hold their events from
        now, and are subscribed again on the same connection from their
        earliest position; the hub says recovered: false, so each gets a
        Missed event, then every later event once and in order."""
        topics = [t for t in params.get("topics") or [] if isinstance(t, str)]
        groups: dict[str, dict[str, Any]] = {}
        subs = [s for s in self._subs if s.known and s.pattern in topics and s.position.epoch]
        for s in subs:
            s._reset()
            p = groups.setdefault(s.pattern, {"topic": s.pattern})
            if s.wants_presence:
                p["presence"] = True
            pos = s.position
            since = p.get("since")
            if since is None:
                p["since"] = pos.to_json()
            elif since["epoch"] == pos.epoch and pos.seq < since["seq"]:
                since["seq"] = pos.seq
        if groups:
            self._log.info("switchboard: cluster events missed: resuming %s", list(groups))
            self._spawn(self._resume(list(groups.values()), subs))

    async def _resume(self, groups: list[dict[str, Any]], subs: list[Subscription]) -> None:
        """_resume subscribes again to each pattern of groups and starts
        subs with the answers. A lost connection leaves them to the
        reconnection; a refusal starts them with the loss reported."""
        async with self._sub_lock:
            for p in groups:
                since = Position(p["since"]["epoch"], p["since"]["seq"])
                try:
                    res = await self.call("rpc.subscribe", p, fail_fast=True)
                except RPCError as e:
                    self._log.warning("switchboard: resuming %s after missed events refused: %s", p["topic"], e)
                    res = {"epoch": since.epoch, "seq": since.seq, "recovered": False}
                except (Disconnected, ClientClosed, ConnectionLost):
                    continue  # the reconnection subscribes them again
                for s in subs:
                    if s.pattern == p["topic"] and s in self._subs:
                        s._start(res, since)

    def _revoked(self, params: dict[str, Any]) -> None:
        """_revoked ends the subscriptions and drops the provisions the hub
        revoked, then tells on_revoked."""
        topics = [t for t in params.get("topics") or [] if isinstance(t, str)]
        methods = [m for m in params.get("methods") or [] if isinstance(m, str)]
        self._log.warning("switchboard: revoked by the hub: topics %s, methods %s", topics, methods)
        for s in list(self._subs):
            if s.pattern in topics:
                del self._subs[s]
                s._end(Revoked(s.pattern))
        for m in methods:
            self._drop_provision(m)
        if self._o.on_revoked is not None:
            try:
                self._o.on_revoked(RevokedNote(topics, methods))
            except Exception:
                self._log.exception("switchboard: on_revoked failed")


async def _drive(s: Subscription, handler: Callable[[Any], Any], log: logging.Logger) -> None:
    async for ev in s:
        try:
            r = handler(ev)
            if inspect.isawaitable(r):
                await r
        except Exception:
            log.exception("switchboard: event handler failed")
