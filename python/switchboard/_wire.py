"""The wire: JSON text and the WebSocket library, whichever version."""

from __future__ import annotations

import asyncio
import importlib
import json
import ssl
from typing import Any, Mapping

from .errors import StatusError, retry_after

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(v: Any) -> str:
    """dumps encodes v compactly. Python's ints are exact at any size, so
    ids and numbers beyond 64 bits travel unchanged."""
    return _encoder.encode(v)


loads = json.loads

# websockets 13 and newer have the new asyncio implementation, whose
# connect takes additional_headers; 10.x to 12.x only the legacy one, which
# takes extra_headers. Both read the same close frames and status codes.
try:
    _ws: Any = importlib.import_module("websockets.asyncio.client")
    _HEADERS = "additional_headers"
except ImportError:  # websockets < 13
    _ws = importlib.import_module("websockets.legacy.client")
    _HEADERS = "extra_headers"
_exc: Any = importlib.import_module("websockets.exceptions")

ConnectionClosed: type[Exception] = _exc.ConnectionClosed


async def open_socket(
    url: str,
    *,
    headers: Mapping[str, str],
    origin: str | None,
    ssl_context: ssl.SSLContext | None,
    max_message: int,
    timeout: float,
) -> Any:
    """open_socket dials url and returns the WebSocket. A refused
    handshake is a StatusError with its status and Retry-After."""
    kw: dict[str, Any] = {
        _HEADERS: dict(headers),
        "max_size": max_message,
        "open_timeout": timeout,
        "ping_interval": None,  # the client calls rpc.ping itself
        "compression": None,
        "max_queue": 1024,
    }
    if origin:
        kw["origin"] = origin
    if ssl_context is not None and url.startswith("wss:"):
        kw["ssl"] = ssl_context
    try:
        return await _ws.connect(url, **kw)
    except _exc.InvalidHandshake as e:
        if _HEADERS == "extra_headers":
            # The legacy implementation leaves a task closing the refused
            # connection, done at the next turns of the loop: let it end
            # here rather than outlive the attempt.
            for _ in range(3):
                await asyncio.sleep(0)
        status, hdrs, body = _refusal(e)
        if status is None:
            raise
        raise StatusError(status, body, retry_after(hdrs.get("Retry-After") if hdrs else None)) from e


def _refusal(e: Exception) -> tuple[int | None, Any, str]:
    """_refusal reads the status, headers and body of a refused handshake,
    from InvalidStatusCode (legacy) or InvalidStatus (new)."""
    resp = getattr(e, "response", None)
    if resp is not None and hasattr(resp, "status_code"):
        body = resp.body.decode("utf-8", "replace") if getattr(resp, "body", None) else ""
        return resp.status_code, resp.headers, body.strip()[:200]
    if hasattr(e, "status_code"):
        return e.status_code, getattr(e, "headers", None), ""
    return None, None, ""


def close_info(e: BaseException) -> tuple[int | None, str]:
    """close_info returns the close code and reason the other side sent,
    when e is the end of a WebSocket."""
    rcvd = getattr(e, "rcvd", None)
    if rcvd is not None:
        return rcvd.code, rcvd.reason
    return None, ""
