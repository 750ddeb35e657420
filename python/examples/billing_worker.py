"""A worker that provides billing.* to every peer of the hub: any client,
in Go, JavaScript, Python or curl, calls billing.charge on the hub and the
hub forwards the call here. It keeps serving across hub restarts.

    python3 billing_worker.py ws://127.0.0.1:8080/rpc
    rpc call ws://127.0.0.1:8080/rpc billing.charge '{"account": "acme", "cents": 1250}'
"""

import asyncio
import signal
import sys
from typing import TypedDict

import switchboard
from switchboard import Request, RPCError


class Receipt(TypedDict):
    account: str
    cents: int
    receipt: str


async def charge(req: Request, account: str, cents: int) -> Receipt:
    """Charges an account.

    Args:
        account: whom to charge
        cents: how much, in cents
    """
    if cents <= 0:
        raise RPCError(4001, "nothing to charge", {"cents": cents})
    await req.progress({"status": "authorizing"})
    return {"account": account, "cents": cents, "receipt": f"r-{account}-{cents}"}


async def refund(receipt: str) -> bool:
    """Refunds a charge by its receipt."""
    return receipt.startswith("r-")


async def main(url: str) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, stop.set)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with switchboard.connect(url, on_state=lambda s, err: print("state:", s, err or "", flush=True)) as c:
        await c.provide("billing.charge", charge)
        await c.provide("billing.refund", refund)
        print("providing billing.charge, billing.refund", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/rpc"))
