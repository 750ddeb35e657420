"""Serving methods: a Router of handlers, their params bound by position or
by name from the function's signature, and rpc.discover from the signatures
and docstrings."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar, Union

from .errors import INVALID_PARAMS, RPCError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Request:
    """Request is the call a handler is serving. A handler that declares a
    parameter of this type gets it; any code running for the handler reads
    it with current_request()."""

    method: str
    params: Any
    id: Any = None
    notification: bool = False
    _progress: Callable[[Any], Awaitable[None]] | None = field(default=None, repr=False)

    async def progress(self, data: Any) -> None:
        """progress sends rpc.progress with data to the caller, before the
        answer. Over HTTP POST, or for a notification, it does nothing."""
        if self._progress is not None and not self.notification:
            await self._progress(data)


_current: contextvars.ContextVar[Request] = contextvars.ContextVar("switchboard_request")


def current_request() -> Request:
    """current_request returns the call being served by the handler this
    runs for; LookupError outside a handler."""
    return _current.get()


async def progress(data: Any) -> None:
    """progress sends rpc.progress for the call being served, as
    Request.progress does."""
    await _current.get().progress(data)


class Method:
    """Method is one handler: a function whose parameters are the call's
    params, by position or by name, checked against their type hints."""

    def __init__(self, name: str, fn: Callable[..., Any], description: str | None = None) -> None:
        self.name = name
        self.fn = fn
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # unresolvable forward references: no checks
            hints = {}
        self._request_param: str | None = None
        self._params: list[inspect.Parameter] = []
        for p in sig.parameters.values():
            raw = p.annotation
            if hints.get(p.name) is Request or (isinstance(raw, str) and raw.split(".")[-1] == "Request"):
                self._request_param = p.name
            else:
                self._params.append(p)
        self._sig = sig.replace(parameters=self._params)
        self._hints = hints
        doc = inspect.getdoc(fn) or ""
        self.summary, self.description, self.param_docs = _parse_doc(description or doc)

    async def invoke(self, req: Request) -> Any:
        """invoke binds req.params and runs the function (awaited when it is
        a coroutine function). Params that do not fit are -32602."""
        args, kwargs = self._bind(req.params)
        if self._request_param:
            kwargs[self._request_param] = req
        token = _current.set(req)
        try:
            r = self.fn(*args, **kwargs)
            if inspect.isawaitable(r):
                r = await r
            return r
        finally:
            _current.reset(token)

    def _bind(self, params: Any) -> tuple[list[Any], dict[str, Any]]:
        try:
            if params is None:
                b = self._sig.bind()
            elif isinstance(params, list):
                b = self._sig.bind(*params)
            elif isinstance(params, dict):
                b = self._sig.bind(**params)
            else:
                raise TypeError("params must be an array or an object")
        except TypeError as e:
            raise RPCError(INVALID_PARAMS, "Invalid params", str(e)) from None
        for name, value in b.arguments.items():
            hint = self._hints.get(name)
            if hint is None:
                continue
            kind = self._sig.parameters[name].kind
            values = value if kind == inspect.Parameter.VAR_POSITIONAL else [value]
            if kind == inspect.Parameter.VAR_KEYWORD:
                values = list(value.values())
            for v in values:
                if not _fits(v, hint):
                    raise RPCError(INVALID_PARAMS, "Invalid params", f"{name}: want {_hint_name(hint)}")
        # By name wherever possible, so that a Request parameter may stand
        # anywhere; positionally before a *args.
        var_pos = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in self._params)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for name, value in b.arguments.items():
            kind = self._sig.parameters[name].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif kind == inspect.Parameter.VAR_KEYWORD:
                kwargs.update(value)
            elif kind == inspect.Parameter.POSITIONAL_ONLY or (var_pos and kind == inspect.Parameter.POSITIONAL_OR_KEYWORD):
                args.append(value)
            else:
                kwargs[name] = value
        return args, kwargs

    def describe(self) -> dict[str, Any]:
        """describe returns the method's OpenRPC method object."""
        m: dict[str, Any] = {"name": self.name}
        if self.summary:
            m["summary"] = self.summary
        if self.description:
            m["description"] = self.description
        params = []
        structure = "either"
        for p in self._params:
            hint = self._hints.get(p.name, Any)
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                structure = "by-position"
                params.append({"name": "params", "schema": schema(hint)})
                continue
            if p.kind == inspect.Parameter.VAR_KEYWORD:
                structure = "by-name"
                params.append({"name": "params", "schema": {"type": "object", "additionalProperties": schema(hint)}})
                continue
            if p.kind == inspect.Parameter.POSITIONAL_ONLY:
                structure = "by-position"
            d: dict[str, Any] = {"name": p.name}
            if p.name in self.param_docs:
                d["description"] = self.param_docs[p.name]
            if p.default is inspect.Parameter.empty:
                d["required"] = True
            d["schema"] = schema(hint)
            params.append(d)
        m["paramStructure"] = structure
        m["params"] = params
        m["result"] = {"name": "result", "schema": schema(self._hints.get("return", Any))}
        return m


class Router:
    """Router holds the methods a client serves: to the hub (calls back),
    and to other peers (Client.provide). Register with the method
    decorator:

        router = Router()

        @router.method()
        async def subtract(minuend: float, subtrahend: float) -> float:
            '''Subtracts subtrahend from minuend.'''
            return minuend - subtrahend
    """

    def __init__(self, title: str = "switchboard-python", version: str = "") -> None:
        self.title = title
        self.version = version
        self._methods: dict[str, Method] = {}

    def method(self, name: str | None = None, *, description: str | None = None) -> Callable[[F], F]:
        """method registers the decorated function under name (default: the
        function's name). Its docstring describes it in rpc.discover."""

        def register(fn: F) -> F:
            self.add(name or fn.__name__, fn, description=description)
            return fn

        return register

    def add(self, name: str, fn: Callable[..., Any], *, description: str | None = None) -> Method:
        """add registers fn under name. rpc.* names and a name taken
        already are programming errors (ValueError)."""
        if not name or name.startswith("rpc."):
            raise ValueError(f"switchboard: cannot register {name!r}")
        if name in self._methods:
            raise ValueError(f"switchboard: {name!r} is registered already")
        m = Method(name, fn, description)
        self._methods[name] = m
        return m

    def lookup(self, name: str) -> Method | None:
        """lookup returns the method registered under name, or None."""
        return self._methods.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def describe(self, extra: list[Method] | None = None) -> dict[str, Any]:
        """describe returns the OpenRPC document of the methods (and of
        extra ones), as rpc.discover answers it."""
        ms = dict(self._methods)
        for m in extra or []:
            ms.setdefault(m.name, m)
        return {
            "openrpc": "1.3.2",
            "info": {"title": self.title, "version": self.version or "0.0.0"},
            "methods": [ms[n].describe() for n in sorted(ms)],
        }


def _parse_doc(doc: str) -> tuple[str, str, dict[str, str]]:
    """_parse_doc splits a docstring into its first paragraph (summary),
    the rest (description), and the Args: section's lines "name: text"."""
    args: dict[str, str] = {}
    keep: list[str] = []
    in_args = False
    last = ""
    for line in doc.splitlines():
        s = line.strip()
        if s in ("Args:", "Arguments:", "Parameters:", "Params:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", s)
            if m and line.startswith((" ", "\t")) and line[: len(line) - len(line.lstrip())] != "":
                last = m.group(1).lstrip("*")
                args[last] = m.group(2)
                continue
            if s and last and line.startswith((" ", "\t")):
                args[last] += " " + s
                continue
            if not s:
                continue
            in_args = False
        keep.append(line)
    text = "\n".join(keep).strip()
    summary, _, rest = text.partition("\n\n")
    return " ".join(summary.split()), rest.strip(), args


def _origin(hint: Any) -> Any:
    return typing.get_origin(hint)


def _is_union(hint: Any) -> bool:
    return _origin(hint) is Union or isinstance(hint, types.UnionType)


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def schema(hint: Any) -> dict[str, Any]:
    """schema returns the JSON Schema of a type hint: the basic types,
    lists, dicts, unions, Optional, Literal and TypedDicts; {} for Any and
    what it does not know."""
    if hint is Any or hint is object or hint is inspect.Parameter.empty:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if _is_union(hint):
        return {"anyOf": [schema(a) for a in typing.get_args(hint)]}
    origin = _origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        s: dict[str, Any] = {"type": "array"}
        if args and not (origin is tuple and len(args) != 2 and args[-1] is not Ellipsis):
            s["items"] = schema(args[0])
        return s
    if _is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        req = sorted(getattr(hint, "__required_keys__", hints.keys()))
        s = {"type": "object", "properties": {k: schema(v) for k, v in hints.items()}}
        if req:
            s["required"] = req
        return s
    if origin is dict or hint is dict:
        s = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            s["additionalProperties"] = schema(args[1])
        return s
    return {}


def _fits(v: Any, hint: Any) -> bool:
    """_fits reports whether a decoded JSON value fits a type hint, as far
    as JSON can tell (an int fits float; unknown hints fit anything)."""
    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return v is None
    if hint is bool:
        return isinstance(v, bool)
    if hint is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if hint is float:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if hint is str:
        return isinstance(v, str)
    if _is_union(hint):
        return any(_fits(v, a) for a in typing.get_args(hint))
    origin = _origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        return v in args
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple):
        return isinstance(v, list) and (not args or args[-1] is Ellipsis or len(args) != 1 or all(_fits(x, args[0]) for x in v))
    if _is_typeddict(hint):
        if not isinstance(v, dict):
            return False
        hints = typing.get_type_hints(hint)
        need = getattr(hint, "__required_keys__", frozenset(hints))
        return all(k in v for k in need) and all(_fits(v[k], hints[k]) for k in v if k in hints)
    if origin is dict or hint is dict:
        return isinstance(v, dict) and (len(args) != 2 or all(_fits(x, args[1]) for x in v.values()))
    return True


def _hint_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


async def run_handler(m: Method, req: Request) -> Any:
    """run_handler invokes m, turning what it raises into the error sent
    back: RPCError as it is, cancellation -32002, a timeout -32003, any
    other exception -32000 with its text."""
    from .errors import APPLICATION_ERROR, CANCELLED, TIMEOUT

    try:
        return await m.invoke(req)
    except RPCError:
        raise
    except asyncio.CancelledError:
        raise RPCError(CANCELLED) from None
    except TimeoutError:
        raise RPCError(TIMEOUT) from None
    except Exception as e:
        raise RPCError(APPLICATION_ERROR, str(e) or type(e).__name__) from e
