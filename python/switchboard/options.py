"""Options of a Client, and the tokens it sends."""

from __future__ import annotations

import base64
import enum
import json
import logging
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Optional, Sequence, Union

from .router import Router

TokenFunc = Callable[[], Union[str, Awaitable[str]]]
StateFn = Callable[["State", Optional[BaseException]], None]


class State(enum.Enum):
    """State is where a client's connection is."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    CLOSED = "closed"

    def __str__(self) -> str:
        return self.value


@dataclass
class Options:
    """Options configures a Client; every field has a default. connect()
    takes the same names as keyword arguments. Durations are in seconds."""

    urls: Sequence[str] = ()
    """Further hub URLs, the other nodes of a cluster: tried when the first
    does not answer, and moved to when the connection drops."""
    router: Router | None = None
    """Serves the calls the hub makes on this client (none: -32601)."""
    token: str | TokenFunc | None = None
    """A bearer token, or a function returning one: called before each
    connection attempt, and again before a JSON Web Token's exp, the new
    token then going to the hub with rpc.auth."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra HTTP headers for the handshake."""
    origin: str | None = None
    """The Origin header of the handshake (a hub checks it against its
    allowed origins; none is sent by default, as for a non-browser)."""
    ssl: ssl.SSLContext | None = None
    """TLS for wss:// (default: the system's roots)."""
    dial_timeout: float = 10.0
    """One connection attempt: TCP, TLS, handshake, re-subscribing."""
    call_timeout: float | None = 30.0
    """A call that names no timeout, waiting for a reconnection included;
    None: no bound."""
    ping_interval: float | None = 30.0
    """How often the client calls rpc.ping; None: never."""
    ping_timeout: float = 30.0
    """How long the answer to rpc.ping may take before the connection is
    dropped and made again."""
    min_backoff: float = 0.1
    max_backoff: float = 10.0
    """The pause before a reconnection attempt doubles from min to max,
    drawn at random between half and all of it; a refusal with a
    Retry-After (a full hub's 503) waits at least that long."""
    max_attempts: int = 0
    """Consecutive failed attempts before the client closes itself; 0:
    forever; negative: never reconnect."""
    fail_fast: bool = False
    """Calls made while disconnected fail at once (Disconnected) instead of
    waiting for the connection."""
    on_state: StateFn | None = None
    """Called at each state change with its cause, in order."""
    on_revoked: Callable[[Any], None] | None = None
    """Called with a RevokedNote (topics, methods) when the hub ended
    subscriptions or provided methods that a refreshed token no longer
    allows (rpc.revoked); the client has ended and dropped them already:
    those subscriptions' iteration stops, their error is a Revoked."""
    max_message: int = 1 << 20
    """The largest message taken from the hub (1 MiB, as the hub's
    default); beyond it the connection is closed (1009) and made again."""
    max_in_flight: int = 256
    """Calls from the hub served at once; more wait for one to end."""
    event_buffer: int = 1024
    """Events waiting for one subscription's reader; beyond it they are
    dropped and the reader gets a missed Event."""
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("switchboard"))


def token_expiry(tok: str) -> float | None:
    """token_expiry reads the exp claim (seconds since the epoch) of a JSON
    Web Token, without verifying it; None for another token."""
    parts = tok.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        exp: Any = json.loads(payload).get("exp")
    except (ValueError, AttributeError):
        return None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


MAX_REFRESH_MARGIN = 30.0
"""A token is replaced a quarter of its remaining life before exp, at
most this many seconds before."""
MIN_REFRESH_RETRY = 0.5
"""The shortest pause before a failed refresh is tried again (half the
time left to exp, at least this)."""


def refresh_in(exp: float) -> float:
    """refresh_in returns how long from now a token expiring at exp is to
    be replaced."""
    left = exp - time.time()
    return max(left - min(left / 4, MAX_REFRESH_MARGIN), 0.0)
