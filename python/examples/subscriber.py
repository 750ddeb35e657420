"""A subscriber that survives hub restarts: it resumes from the last event
it took, gets what was published meanwhile, and is told when the hub could
not give it everything (a restarted in-memory hub has a new epoch).

    python3 subscriber.py ws://127.0.0.1:8080/rpc 'news.>'
"""

import asyncio
import signal
import sys

import switchboard


async def main(url: str, pattern: str) -> None:
    def on_state(s: switchboard.State, err: BaseException | None) -> None:
        print("state:", s, err or "", flush=True)

    async with switchboard.connect(url, on_state=on_state, max_backoff=2) as c:
        sub = await c.subscribe(pattern)
        print("subscribed to", pattern, "at", sub.position, flush=True)
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, lambda: asyncio.ensure_future(sub.unsubscribe()))
        async for ev in sub:
            if ev.missed:
                print("missed: the hub lost some events; reload", flush=True)
                continue
            print("event:", ev.topic, ev.data, ev.seq, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/rpc",
                     sys.argv[2] if len(sys.argv) > 2 else "news.>"))
