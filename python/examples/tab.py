"""Stands in for a browser tab of a user: it serves confirm, which the
backend calls with call_user (backend.py). The token (in $TOKEN) says who
the user is.

    python3 tab.py ws://127.0.0.1:8080/rpc
"""

import asyncio
import os
import signal
import sys

import switchboard

router = switchboard.Router()


@router.method()
def confirm(order: str) -> bool:
    """Asks the user to confirm an order (here: always yes)."""
    print("asked to confirm", order, flush=True)
    return True


async def main(url: str) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with switchboard.connect(url, router=router, token=os.environ.get("TOKEN")) as c:
        print("tab of", (await c.whoami()).user, "ready", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/rpc"))
