"""Calls over HTTP POST, for processes that hold no socket: one POST per
call or batch, with the standard library's urllib.

    from switchboard.http import HTTPClient

    hc = HTTPClient("http://127.0.0.1:8080/rpc")
    print(hc.call("subtract", [42, 23]))

The hub cannot call back or deliver events over POST. The methods block;
from asyncio, run them with asyncio.to_thread.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from typing import Any, Mapping, Sequence

from . import _wire
from ._conn import BatchElem, BatchResult, check_params
from .errors import INTERNAL_ERROR, RPCError, StatusError, retry_after
from .peers import PeerResult, _addressed, _peer_results
from .streams import PeerInfo


class HTTPClient:
    """HTTPClient calls a hub's methods over HTTP POST. It holds nothing
    between calls and is safe to use from several threads."""

    def __init__(self, url: str, *, token: str | None = None, headers: Mapping[str, str] | None = None,
                 timeout: float = 30.0, ssl_context: ssl.SSLContext | None = None, max_message: int = 1 << 20) -> None:
        self.url = url
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if token:
            self._headers["Authorization"] = "Bearer " + token
        self._timeout = timeout
        self._ssl = ssl_context
        self._max = max_message
        self._next = 1

    def _post(self, body: Any, timeout: float | None) -> Any:
        req = urllib.request.Request(self.url, data=_wire.dumps(body).encode(), headers=self._headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout or self._timeout, context=self._ssl) as resp:
                if resp.status == 204:
                    return None
                data = resp.read(self._max + 1)
        except urllib.error.HTTPError as e:
            with e:
                text = e.read(4096).decode("utf-8", "replace")
            try:
                err = _wire.loads(text).get("error")
            except (ValueError, AttributeError):
                err = None
            rpc_err = RPCError.from_json(err) if err is not None else None
            raise StatusError(e.code, text.strip()[:200], retry_after(e.headers.get("Retry-After")), rpc_err) from None
        if len(data) > self._max:
            raise RPCError(INTERNAL_ERROR, f"response over {self._max} bytes")
        return _wire.loads(data)

    def _id(self) -> int:
        i = self._next
        self._next += 1
        return i

    def call(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """call POSTs one request and returns its result; a JSON-RPC error
        is raised as RPCError, an HTTP status other than 200 as StatusError
        (a 401 with code -32001)."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._id()}
        params = check_params(params)
        if params is not None:
            msg["params"] = params
        r = self._post(msg, timeout)
        if not isinstance(r, dict):
            raise RPCError(INTERNAL_ERROR, "invalid response", r)
        if r.get("error") is not None:
            raise RPCError.from_json(r["error"])
        return r.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        """notify POSTs a notification; the hub answers 204."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        params = check_params(params)
        if params is not None:
            msg["params"] = params
        self._post(msg, None)

    def batch(self, elems: Sequence[BatchElem], *, timeout: float | None = None) -> list[BatchResult]:
        """batch POSTs elems as one batch and returns one BatchResult per
        element, in order."""
        msgs = []
        ids: list[int | None] = []
        for e in elems:
            m: dict[str, Any] = {"jsonrpc": "2.0", "method": e.method}
            if e.params is not None:
                m["params"] = check_params(e.params)
            i = None if e.notify else self._id()
            if i is not None:
                m["id"] = i
            ids.append(i)
            msgs.append(m)
        r = self._post(msgs, timeout)
        if isinstance(r, dict) and r.get("error") is not None:  # the whole batch refused
            err = RPCError.from_json(r["error"])
            return [BatchResult(error=err) if i is not None else BatchResult() for i in ids]
        by_id = {x.get("id"): x for x in r or [] if isinstance(x, dict)}
        out = []
        for i in ids:
            x = by_id.get(i) if i is not None else None
            if i is None:
                out.append(BatchResult())
            elif x is None:
                out.append(BatchResult(error=RPCError(INTERNAL_ERROR, "no answer in the batch")))
            elif x.get("error") is not None:
                out.append(BatchResult(error=RPCError.from_json(x["error"])))
            else:
                out.append(BatchResult(result=x.get("result")))
        return out

    def publish(self, topic: str, data: Any = None) -> int:
        """publish publishes data on topic: how many peers it reached."""
        return int(self.call("rpc.publish", {"topic": topic, "data": data}).get("delivered", 0))

    def whoami(self) -> PeerInfo:
        return PeerInfo.from_json(self.call("rpc.whoami"))

    def call_peer(self, peer_id: str, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """call_peer calls method on one peer by its id (rpc.call)."""
        t = timeout or self._timeout
        return self.call("rpc.call", _addressed({"peer": peer_id}, method, params, t), timeout=t)

    def call_user(self, user: str, method: str, params: Any = None, *, timeout: float | None = None) -> list[PeerResult]:
        return self._many({"user": user}, method, params, timeout)

    def call_topic(self, topic: str, method: str, params: Any = None, *, timeout: float | None = None) -> list[PeerResult]:
        return self._many({"topic": topic}, method, params, timeout)

    def _many(self, to: dict[str, str], method: str, params: Any, timeout: float | None) -> list[PeerResult]:
        t = timeout or self._timeout
        r = self.call("rpc.call", _addressed(to, method, params, t), timeout=t)
        return _peer_results(r)
