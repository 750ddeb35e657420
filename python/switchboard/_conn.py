"""One WebSocket as a symmetric JSON-RPC peer: calls out, matched by id;
calls in, served concurrently; rpc.cancel and rpc.progress both ways."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from . import _wire
from .errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConnectionLost,
    RPCError,
    _Answer,
)
from .router import Method, Request, run_handler

log = logging.getLogger("switchboard")

# Lookup finds the handler of a method the other side calls, None if none.
Lookup = Callable[[str], "Method | None"]
# Inline handles hub notifications (rpc.event, rpc.join, rpc.leave) on the
# reader, in arrival order.
Inline = Callable[[str, Any], None]
ProgressFn = Callable[[Any], Any]


@dataclass
class BatchElem:
    """BatchElem is one element of a batch: a call, or a notification when
    notify is set."""

    method: str
    params: Any = None
    notify: bool = False


@dataclass
class BatchResult(_Answer):
    """BatchResult is the answer to one element of a batch: its result, or
    error (an RPCError). A notification gets neither."""

    result: Any = None
    error: RPCError | None = None


def check_params(params: Any) -> Any:
    """check_params accepts what can be params: None, a list or a dict
    (tuples become lists)."""
    if isinstance(params, tuple):
        return list(params)
    if params is not None and not isinstance(params, (list, dict)):
        raise TypeError("switchboard: params must be None, a list or a dict")
    return params


class _Pending:
    __slots__ = ("fut", "on_progress")

    def __init__(self, fut: asyncio.Future[Any], on_progress: ProgressFn | None) -> None:
        self.fut = fut
        self.on_progress = on_progress


def spawn_in(tasks: set[asyncio.Task[Any]], coro: Any) -> asyncio.Task[Any]:
    """spawn_in runs coro as a task that tasks holds until it is done (the
    event loop keeps only weak references to its tasks)."""
    t = asyncio.get_running_loop().create_task(coro)
    tasks.add(t)
    t.add_done_callback(tasks.discard)
    return t


class Conn:
    """Conn serves one WebSocket until it ends. run() is its reader; the
    other methods may be called from any task of the same event loop."""

    def __init__(self, ws: Any, url: str, lookup: Lookup, inline: Inline, describe: Callable[[], Any], max_in_flight: int) -> None:
        self.ws = ws
        self.url = url
        self._lookup = lookup
        self._inline = inline
        self._describe = describe
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}
        self._batches: list[list[int]] = []
        self._serving: dict[str, asyncio.Task[None]] = {}  # by the JSON of the caller's id
        self._tasks: set[asyncio.Task[Any]] = set()
        self._slots = asyncio.Semaphore(max_in_flight)
        loop = asyncio.get_running_loop()
        self.done: asyncio.Future[ConnectionLost] = loop.create_future()

    @property
    def closed(self) -> bool:
        return self.done.done()

    # ---- calls out ----

    def _id(self) -> int:
        i = self._next_id
        self._next_id += 1
        return i

    def lost_error(self) -> ConnectionLost:
        """lost_error returns a new ConnectionLost saying why the
        connection ended (a new one for each caller, so that tracebacks do
        not pile up on one)."""
        lost = self.done.result()
        return ConnectionLost(str(lost), lost.close_code, lost.reason)

    async def send(self, msg: Any) -> None:
        if self.done.done():
            raise self.lost_error()
        try:
            await self.ws.send(_wire.dumps(msg))
        except _wire.ConnectionClosed as e:
            self._lost(e)
            raise self.lost_error() from e

    async def call(self, method: str, params: Any, on_progress: ProgressFn | None = None) -> Any:
        """call sends a request and waits for its answer. Cancelling the
        waiting task sends rpc.cancel for it."""
        i = self._id()
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[i] = _Pending(fut, on_progress)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": i}
        if params is not None:
            msg["params"] = params
        try:
            await self.send(msg)
            return await fut
        except asyncio.CancelledError:
            if self._pending.pop(i, None) is not None:
                self.cancel_soon([i])
            raise
        finally:
            self._pending.pop(i, None)

    async def notify(self, method: str, params: Any) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)

    async def batch(self, elems: Sequence[BatchElem]) -> list[BatchResult]:
        """batch sends elems as one message and waits for every answer."""
        msgs: list[dict[str, Any]] = []
        futs: list[asyncio.Future[Any] | None] = []
        ids: list[int] = []
        loop = asyncio.get_running_loop()
        for e in elems:
            m: dict[str, Any] = {"jsonrpc": "2.0", "method": e.method}
            if e.params is not None:
                m["params"] = check_params(e.params)
            if e.notify:
                futs.append(None)
            else:
                i = self._id()
                m["id"] = i
                f: asyncio.Future[Any] = loop.create_future()
                self._pending[i] = _Pending(f, None)
                futs.append(f)
                ids.append(i)
            msgs.append(m)
        if not msgs:
            raise ValueError("switchboard: an empty batch")
        self._batches.append(ids)
        try:
            await self.send(msgs)
            out = []
            for fut in futs:
                if fut is None:
                    out.append(BatchResult())
                    continue
                try:
                    out.append(BatchResult(result=await fut))
                except RPCError as err:
                    out.append(BatchResult(error=err))
            return out
        except asyncio.CancelledError:
            left = [i for i in ids if self._pending.pop(i, None) is not None]
            if left:
                self.cancel_soon(left)
            raise
        finally:
            for i in ids:
                self._pending.pop(i, None)
            if ids in self._batches:
                self._batches.remove(ids)

    def cancel_soon(self, ids: list[int]) -> None:
        """cancel_soon sends rpc.cancel for ids without waiting: the caller
        is being cancelled itself."""
        if self.done.done():
            return
        msgs = [{"jsonrpc": "2.0", "method": "rpc.cancel", "params": {"id": i}} for i in ids]
        self.spawn(self._send_quietly(msgs[0] if len(msgs) == 1 else msgs))

    async def _send_quietly(self, msg: Any) -> None:
        try:
            await self.send(msg)
        except ConnectionLost:
            pass

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        return spawn_in(self._tasks, coro)

    # ---- the reader ----

    async def run(self) -> None:
        """run reads until the WebSocket ends, then fails the calls in
        flight with ConnectionLost and cancels the handlers running."""
        err: BaseException | None = None
        try:
            recv = self.ws.recv
            slots = self._slots
            while True:
                for work in self._receive(await recv()):
                    # Beyond max_in_flight calls being served, read on only
                    # when one ends: the hub then holds the rest.
                    await slots.acquire()
                    self.spawn(self._in_slot(work))
        except _wire.ConnectionClosed as e:
            err = e
        except asyncio.CancelledError:
            err = ConnectionLost("connection closed")
        except Exception as e:  # a bug of ours: end the connection, not the loop
            log.exception("switchboard: reader failed")
            err = e
        self._lost(err)
        await self._finish()
        await self._closed()

    async def _closed(self) -> None:
        """_closed waits for the WebSocket library to finish closing, so
        that none of its tasks outlives the connection."""
        task = getattr(self.ws, "close_connection_task", None)  # the legacy implementation's
        try:
            async with asyncio.timeout(10):
                await (asyncio.shield(task) if task is not None else self.ws.wait_closed())
        except Exception as e:
            log.debug("switchboard: closing the WebSocket: %s", e)

    def _lost(self, e: BaseException | None) -> ConnectionLost:
        if not self.done.done():
            if isinstance(e, ConnectionLost):
                lost = e
            else:
                code, reason = _wire.close_info(e) if e is not None else (None, "")
                what = f"closed with code {code}" + (f": {reason}" if reason else "") if code else str(e or "closed")
                lost = ConnectionLost(f"connection lost: {what}", code, reason)
            self.done.set_result(lost)
        return self.done.result()

    async def _finish(self) -> None:
        for p in list(self._pending.values()):
            if not p.fut.done():
                p.fut.set_exception(self.lost_error())
        self._pending.clear()
        for t in list(self._serving.values()):
            t.cancel()
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """close closes the WebSocket with code; run() then ends."""
        try:
            await self.ws.close(code, reason)
        except Exception:
            pass

    async def _in_slot(self, work: Any) -> None:
        try:
            await work
        finally:
            self._slots.release()

    def _receive(self, text: str | bytes) -> list[Any]:
        """_receive handles a message and returns the coroutines that serve
        the calls in it (a batch's as one)."""
        try:
            msg = _wire.loads(text)
        except ValueError:
            log.debug("switchboard: unparsable message dropped")
            return []
        if isinstance(msg, list):
            replies = [r for r in (self._one(m, batch=True) for m in msg) if r is not None]
            return [self._gather_batch(replies)] if replies else []
        r = self._one(msg, batch=False)
        return [r] if r is not None else []

    async def _gather_batch(self, replies: list[Any]) -> None:
        out = [x for x in await asyncio.gather(*replies) if x is not None]
        if out:
            await self._send_quietly(out)

    def _one(self, m: Any, batch: bool) -> Any:
        """_one handles one message. For a request it returns the coroutine
        that serves it (its answer, when batch, else sends it)."""
        if not isinstance(m, dict):
            return None
        method = m.get("method")
        if method is None:
            self._response(m)
            return None
        has_id = "id" in m
        params = m.get("params")
        if method in ("rpc.event", "rpc.join", "rpc.leave", "rpc.revoked", "rpc.missed"):
            self._inline(method, params)
            return None
        if method == "rpc.cancel":
            if isinstance(params, dict) and "id" in params:
                t = self._serving.get(_wire.dumps(params["id"]))
                if t is not None:
                    t.cancel()
            return None
        if method == "rpc.progress":
            if isinstance(params, dict) and isinstance(params.get("id"), int):
                p = self._pending.get(params["id"])
                if p is not None and p.on_progress is not None:
                    try:
                        r = p.on_progress(params.get("data"))
                        if asyncio.iscoroutine(r):
                            self.spawn(r)
                    except Exception:
                        log.exception("switchboard: progress callback failed")
            return None
        if not isinstance(method, str):
            return self._answer(m.get("id"), None, RPCError(INVALID_REQUEST), batch) if has_id else None
        return self._serve(method, params, m.get("id"), has_id, batch)

    def _response(self, m: dict[str, Any]) -> None:
        i = m.get("id")
        p = self._pending.get(i) if isinstance(i, int) and not isinstance(i, bool) else None
        if p is None:
            if i is None and "error" in m:
                # An error for a whole batch (too many elements, say).
                err = RPCError.from_json(m["error"])
                for ids in self._batches:
                    for j in ids:
                        q = self._pending.get(j)
                        if q is not None and not q.fut.done():
                            q.fut.set_exception(err)
            return
        if p.fut.done():
            return
        if "error" in m and m["error"] is not None:
            p.fut.set_exception(RPCError.from_json(m["error"]))
        elif "result" in m:
            p.fut.set_result(m["result"])
        else:
            p.fut.set_exception(RPCError(INTERNAL_ERROR, "invalid response", m))

    async def _serve(self, method: str, params: Any, id_: Any, has_id: bool, batch: bool) -> Any:
        if method == "rpc.ping":
            return await self._answer(id_, {}, None, batch) if has_id else None
        if method == "rpc.discover":
            return await self._answer(id_, self._describe(), None, batch) if has_id else None
        h = self._lookup(method)
        if h is None:
            return await self._answer(id_, None, RPCError(METHOD_NOT_FOUND), batch) if has_id else None

        async def send_progress(data: Any) -> None:
            await self._send_quietly({"jsonrpc": "2.0", "method": "rpc.progress", "params": {"id": id_, "data": data}})

        req = Request(method, params, id_, not has_id, send_progress)
        key = _wire.dumps(id_) if has_id else ""
        task = asyncio.current_task()
        if has_id and task is not None:
            self._serving[key] = task
        try:
            result: Any = None
            error: RPCError | None = None
            try:
                result = await run_handler(h, req)
            except RPCError as e:
                error = e
            if not has_id:
                if error is not None:
                    log.debug("switchboard: notification %s failed: %s", method, error)
                return None
            return await self._answer(id_, result, error, batch)
        finally:
            if has_id and self._serving.get(key) is task:
                del self._serving[key]

    async def _answer(self, id_: Any, result: Any, error: RPCError | None, batch: bool) -> Any:
        r: dict[str, Any] = {"jsonrpc": "2.0", "id": id_}
        if error is not None:
            r["error"] = error.to_json()
        else:
            r["result"] = result
        if batch:
            return r
        try:
            await self.send(r)
        except ConnectionLost:
            pass
        except (TypeError, ValueError) as e:  # a result JSON cannot hold
            r.pop("result", None)
            r["error"] = RPCError(INTERNAL_ERROR, f"result not JSON: {e}").to_json()
            await self._send_quietly(r)
        return None
