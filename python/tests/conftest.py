from __future__ import annotations

import asyncio
import functools
import gc
import os
import sys
import warnings
from typing import Any, Awaitable, Callable, Iterator

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from hubproc import Hub  # noqa: E402


@pytest.fixture
def hub() -> Iterator[Hub]:
    h = Hub("-demo").start()
    yield h
    h.stop()


@pytest.fixture
def make_hub() -> Iterator[Callable[..., Hub]]:
    hubs: list[Hub] = []

    def make(*args: str) -> Hub:
        h = Hub(*args).start()
        hubs.append(h)
        return h

    yield make
    for h in hubs:
        h.stop()


def run(fn: Callable[..., Awaitable[Any]], debug: bool = True) -> Callable[..., Any]:
    """run runs an async test in a new event loop in debug mode, and fails
    it if a task is left behind or a ResourceWarning was raised."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        async def main() -> Any:
            r = await fn(*args, **kwargs)
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            assert not left, f"tasks left behind: {left}"
            return r

        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            r = asyncio.run(main(), debug=debug)
            gc.collect()
        return r

    return wrapper


def run_fast(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
    """run_fast is run without asyncio's debug mode, for tests that count
    calls per second."""
    return run(fn, debug=False)
