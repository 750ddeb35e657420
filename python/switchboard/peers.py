"""Calling chosen peers through the hub (rpc.call), who am I, history and
presence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._conn import ProgressFn, check_params
from .errors import RPCError, _Answer
from .options import Options
from .streams import Event, PeerInfo, Position


@dataclass(frozen=True)
class PeerResult(_Answer):
    """PeerResult is one peer's answer to call_user or call_topic: its
    result, or its error."""

    peer: PeerInfo
    result: Any = None
    error: RPCError | None = None


class PeerResults(list[PeerResult]):
    """PeerResults is the answer of call_user or call_topic: one
    PeerResult per peer, as many as fit in one message of the hub's.
    truncated says the hub left out those that did not fit, and asked is
    the number of peers called (the length when not truncated). In a
    cluster of hubs, unanswered names the nodes that did not say in time
    which peers they have: their peers were not called (empty when all
    did)."""

    truncated: bool = False
    asked: int = 0
    unanswered: list[str]

    @classmethod
    def from_json(cls, r: Any) -> PeerResults:
        r = r if isinstance(r, dict) else {}
        out = cls()
        for e in r.get("results") or []:
            err = e.get("error")
            out.append(PeerResult(PeerInfo.from_json(e.get("peer")), e.get("result"),
                                  RPCError.from_json(err) if err is not None else None))
        out.truncated = r.get("truncated") is True
        asked = r.get("asked")
        out.asked = asked if out.truncated and isinstance(asked, int) else len(out)
        nodes = r.get("unanswered")
        out.unanswered = [n for n in nodes if isinstance(n, str)] if r.get("incomplete") is True and isinstance(nodes, list) else []
        return out


@dataclass(frozen=True)
class History:
    """History is the answer to history(): the stream's epoch and latest
    position, and the events held, oldest first. truncated: the events
    asked for did not fit in one message; these are the newest that did."""

    epoch: str
    seq: int
    events: list[Event]
    truncated: bool = False


def _addressed(to: dict[str, str], method: str, params: Any, timeout: float | None) -> dict[str, Any]:
    p: dict[str, Any] = dict(to)
    p["method"] = method
    params = check_params(params)
    if params is not None:
        p["params"] = params
    if timeout is not None and timeout > 0:
        # A little less than the caller waits, for the answer to come back.
        p["timeout"] = max(1, int(timeout * 950))
    return p


class PeersMixin:
    """PeersMixin gives Client (and HTTP's AsyncHTTPClient) the calls that
    address peers, built on call()."""

    if TYPE_CHECKING:

        async def call(self, method: str, params: Any = None, *, timeout: float | None = None,
                       on_progress: ProgressFn | None = None, fail_fast: bool | None = None) -> Any: ...

        _o: Options

    def _call_timeout(self, timeout: float | None) -> float | None:
        t = self._o.call_timeout if timeout is None else timeout
        return t if t is not None and t > 0 else None

    async def whoami(self) -> PeerInfo:
        """whoami returns this client's peer id (what others address it
        by), user and node, as the hub shows them."""
        return PeerInfo.from_json(await self.call("rpc.whoami"))

    async def call_peer(self, peer_id: str, method: str, params: Any = None, *,
                        timeout: float | None = None, on_progress: ProgressFn | None = None) -> Any:
        """call_peer calls method on the peer with that id, wherever it is
        connected, and returns its result; its error is raised unchanged.
        The hub's own answers: -32007 (no such peer), -32006 (it left
        mid-call), -32003 (timeout, which is passed to the hub a little
        shorter, so that it answers first)."""
        t = self._call_timeout(timeout)
        return await self.call("rpc.call", _addressed({"peer": peer_id}, method, params, t),
                               timeout=t or -1, on_progress=on_progress)

    async def call_user(self, user: str, method: str, params: Any = None, *, timeout: float | None = None) -> PeerResults:
        """call_user calls method on every peer of user at once (this
        client left out) and returns one PeerResult per peer."""
        return await self._call_many({"user": user}, method, params, timeout)

    async def call_topic(self, topic: str, method: str, params: Any = None, *, timeout: float | None = None) -> PeerResults:
        """call_topic calls method on every peer an event on topic would
        reach (this client left out), one PeerResult per peer."""
        return await self._call_many({"topic": topic}, method, params, timeout)

    async def _call_many(self, to: dict[str, str], method: str, params: Any, timeout: float | None) -> PeerResults:
        t = self._call_timeout(timeout)
        r = await self.call("rpc.call", _addressed(to, method, params, t), timeout=t or -1)
        return PeerResults.from_json(r)

    async def history(self, pattern: str, limit: int = 0, since: Position | None = None) -> History:
        """history returns the recent events of a topic or pattern the hub
        holds: at most limit (the newest; 0: the hub's default), only those
        after since when given."""
        p: dict[str, Any] = {"topic": pattern}
        if limit > 0:
            p["limit"] = limit
        if since is not None:
            p["since"] = since.to_json()
        r = await self.call("rpc.history", p)
        epoch = str(r.get("epoch", ""))
        events = [Event(str(e.get("topic", "")), e.get("data"), int(e.get("seq", 0)), epoch) for e in r.get("events") or []]
        return History(epoch, int(r.get("seq", 0)), events, bool(r.get("truncated")))

    async def presence(self, topic: str) -> list[PeerInfo]:
        """presence returns the peers an event on topic would reach."""
        r = await self.call("rpc.presence", {"topic": topic})
        return [PeerInfo.from_json(p) for p in (r or {}).get("peers") or []]
