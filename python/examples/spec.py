"""The JSON-RPC 2.0 specification's examples, against the demo hub:
subtract by position and by name, a notification, a batch, errors.

    python3 spec.py ws://127.0.0.1:8080/rpc
"""

import asyncio
import sys

import switchboard
from switchboard import BatchElem


async def main(url: str) -> None:
    async with switchboard.connect(url) as c:
        print("by position:", await c.call("subtract", [42, 23]))
        print("by name:", await c.call("subtract", {"subtrahend": 23, "minuend": 42}))
        await c.notify("update", [1, 2, 3, 4, 5])
        print("notification: sent, nothing comes back")
        results = await c.batch([
            BatchElem("sum", [1, 2, 4]),
            BatchElem("notify_hello", [7], notify=True),
            BatchElem("subtract", [42, 23]),
            BatchElem("foo.get", {"name": "myself"}),
            BatchElem("get_data"),
        ])
        for r in results:
            print("batch:", r.error if r.error else r.result)
        try:
            await c.call("foobar")
        except switchboard.RPCError as e:
            print("error:", e.code, e.message)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/rpc"))
