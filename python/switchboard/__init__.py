"""Switchboard's Python client: a peer of a Switchboard hub, over one
WebSocket that it keeps up, asyncio-first.

    import asyncio, switchboard

    async def main() -> None:
        async with switchboard.connect("ws://127.0.0.1:8080/rpc") as c:
            print(await c.call("subtract", [42, 23]))

    asyncio.run(main())

switchboard.sync has the same calls for scripts without asyncio, and
switchboard.http makes calls over HTTP POST, holding no socket.
"""

from ._conn import BatchElem, BatchResult
from .client import Call, Client, connect
from .errors import (
    APPLICATION_ERROR,
    CANCELLED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NO_SUCH_PEER,
    OVERLOADED,
    PARSE_ERROR,
    PROVIDER_LOST,
    SHUTTING_DOWN,
    TIMEOUT,
    UNAUTHORIZED,
    ClientClosed,
    ConnectionLost,
    Disconnected,
    RPCError,
    Revoked,
    StatusError,
    SwitchboardError,
    TokenRefused,
)
from .options import Options, State
from .peers import History, PeerResult, PeerResults
from .provide import Provision
from .router import Method, Request, Router, current_request, progress
from .streams import Event, PeerInfo, Position, PresenceChange, RevokedNote, Subscription, user_word

__version__ = "0.0.0"

__all__ = [
    "APPLICATION_ERROR", "CANCELLED", "INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST",
    "METHOD_NOT_FOUND", "NO_SUCH_PEER", "OVERLOADED", "PARSE_ERROR", "PROVIDER_LOST",
    "SHUTTING_DOWN", "TIMEOUT", "UNAUTHORIZED",
    "BatchElem", "BatchResult", "Call", "Client", "ClientClosed", "ConnectionLost",
    "Disconnected", "Event", "History", "Method", "Options", "PeerInfo", "PeerResult", "PeerResults",
    "Position", "PresenceChange", "Provision", "RPCError", "Request", "Revoked", "RevokedNote", "Router", "State",
    "StatusError", "Subscription", "SwitchboardError", "TokenRefused", "connect",
    "current_request", "progress", "user_word",
]
