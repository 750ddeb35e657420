"""Providing methods to the other peers of the hub (rpc.provide)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ._conn import Conn, ProgressFn
from .errors import ClientClosed, ConnectionLost, Disconnected
from .router import Method
from .streams import match


class Provision:
    """Provision is a method, or a pattern of methods, that the client
    serves to the other peers through the hub, across reconnections,
    until withdraw()."""

    def __init__(self, owner: ProvideMixin, method: str, m: Method) -> None:
        self._owner = owner
        self.method = method
        self._m = m

    async def withdraw(self) -> None:
        """withdraw tells the hub to stop forwarding calls of the method
        (rpc.unprovide), then stops serving them."""
        await self._owner._withdraw(self)


class ProvideMixin:
    """ProvideMixin gives Client provide() and what serving it needs."""

    if TYPE_CHECKING:

        async def call(self, method: str, params: Any = None, *, timeout: float | None = None,
                       on_progress: ProgressFn | None = None, fail_fast: bool | None = None) -> Any: ...

    def __init__(self) -> None:
        self._prov: dict[str, Provision] = {}

    async def provide(self, method: str, handler: Callable[..., Any], *, description: str | None = None) -> Provision:
        """provide serves method to every other peer of the hub: the hub
        forwards their calls of it to this client. method is a name
        ("billing.charge") or a pattern ("billing.*", "billing.>"); the
        handler's params are bound as a Router's are, and a Request
        parameter tells which method was called. Its docstring (or
        description) describes it in the hub's rpc.discover. Returns once
        the hub accepted (a refusal is an RPCError: -32001 by policy,
        -32602 for a malformed name)."""
        if not method or method.startswith("rpc."):
            raise ValueError(f"switchboard: cannot provide {method!r}")
        if method in self._prov:
            raise ValueError(f"switchboard: {method} is provided already")
        p = Provision(self, method, Method(method, handler, description))
        self._prov[method] = p  # before the hub is told: its first call finds it
        try:
            await self.call("rpc.provide", {"methods": [method]})
        except BaseException:
            if self._prov.get(method) is p:
                del self._prov[method]
            raise
        return p

    async def _withdraw(self, p: Provision) -> None:
        if self._prov.get(p.method) is not p:
            return
        try:
            await self.call("rpc.unprovide", {"methods": [p.method]}, fail_fast=True)
        except (Disconnected, ClientClosed, ConnectionLost):
            pass  # the hub forgets what a connection provided with it
        finally:
            if self._prov.get(p.method) is p:
                del self._prov[p.method]

    def _drop_provision(self, method: str) -> None:
        """_drop_provision forgets a provision the hub revoked: it no longer
        forwards its calls, and it is not provided again."""
        self._prov.pop(method, None)

    def _provided(self, method: str) -> Method | None:
        p = self._prov.get(method)
        if p is not None:
            return p._m
        for name, q in self._prov.items():
            if ("*" in name or ">" in name) and match(name, method):
                return q._m
        return None

    def _described(self) -> list[Method]:
        """_described lists the methods provided by name, for
        rpc.discover."""
        return [p._m for n, p in self._prov.items() if "*" not in n and ">" not in n]

    async def _reprovide(self, conn: Conn) -> None:
        if self._prov:
            await conn.call("rpc.provide", {"methods": list(self._prov)})
