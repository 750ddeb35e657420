"""Errors and the protocol's error codes."""

from __future__ import annotations

from typing import Any

# The JSON-RPC 2.0 specification's codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# The hub's own codes (the protocol's section 4).
APPLICATION_ERROR = -32000
UNAUTHORIZED = -32001
CANCELLED = -32002
TIMEOUT = -32003
OVERLOADED = -32004
SHUTTING_DOWN = -32005
PROVIDER_LOST = -32006
NO_SUCH_PEER = -32007

_MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    UNAUTHORIZED: "Unauthorized",
    CANCELLED: "Request cancelled",
    TIMEOUT: "Request timed out",
}


class SwitchboardError(Exception):
    """SwitchboardError is the base of every error the package raises."""


class _Answer:
    """_Answer is a result or an error (an RPCError): a batch element's
    (BatchResult) or a peer's (PeerResult)."""

    result: Any
    error: RPCError | None

    def value(self) -> Any:
        """value returns the result, or raises the error."""
        if self.error is not None:
            raise self.error
        return self.result


class RPCError(SwitchboardError):
    """RPCError is a JSON-RPC error object: the other side answered a call
    with it, or a handler raises it to choose the code, message and data
    sent back."""

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        self.code = code
        self.message = message if message is not None else _MESSAGES.get(code, "error")
        self.data = data
        super().__init__(f"jsonrpc error {code}: {self.message}")

    def to_json(self) -> dict[str, Any]:
        """to_json returns the error object as it travels on the wire."""
        e: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            e["data"] = self.data
        return e

    @classmethod
    def from_json(cls, e: Any) -> RPCError:
        """from_json reads an error object; a malformed one is -32603."""
        if not isinstance(e, dict) or not isinstance(e.get("code"), int):
            return cls(INTERNAL_ERROR, "malformed error object", e)
        msg = e.get("message")
        return cls(e["code"], msg if isinstance(msg, str) else "", e.get("data"))


class ConnectionLost(SwitchboardError):
    """ConnectionLost is raised by a call that was in flight when the
    connection dropped: it may or may not have run on the other side.
    close_code and reason are the WebSocket's, when it was closed with one."""

    def __init__(self, message: str, close_code: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.close_code = close_code
        self.reason = reason


class Disconnected(SwitchboardError):
    """Disconnected is raised by a call made while the client reconnects,
    when it was not to wait (fail_fast): it was not sent."""


class ClientClosed(SwitchboardError):
    """ClientClosed is raised by the methods of a closed client: closed by
    close(), or by itself after giving up reconnecting (the cause is
    chained)."""


class Revoked(SwitchboardError):
    """Revoked is why a subscription ended when the hub revoked it: a
    refreshed token no longer allows its pattern (rpc.revoked)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"subscription to {topic} revoked by the hub: no longer allowed")
        self.topic = topic


class TokenRefused(SwitchboardError):
    """TokenRefused is reported to on_state when refreshing a token failed:
    the token function raised, or the hub refused the new token."""


class StatusError(SwitchboardError):
    """StatusError is an HTTP answer other than the one expected: a refused
    WebSocket handshake or a POST answered with another status. A 401 or
    403 is the protocol's -32001 (code); retry_after is the Retry-After
    header in seconds (0 when absent), as a full hub sends with 503;
    error is the JSON-RPC error the body held, if any."""

    def __init__(self, status: int, body: str = "", retry_after: float = 0.0, error: RPCError | None = None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.error = error
        self.code: int | None = error.code if error else UNAUTHORIZED if status in (401, 403) else None
        detail = f": {body}" if body else ""
        super().__init__(f"HTTP {status}{detail}")


def retry_after(value: str | None) -> float:
    """retry_after reads a Retry-After header: seconds, or an HTTP date
    taken from now; 0 when absent or invalid."""
    if not value:
        return 0.0
    value = value.strip()
    if value.isdigit():
        return float(value)
    import email.utils
    import time

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(when.timestamp() - time.time(), 0.0)
