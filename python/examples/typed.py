"""The demo hub's methods through the module "rpc gen-py" wrote from its
rpc.discover (demo_api.py): names, params and results checked by mypy.

    rpc gen-py ws://127.0.0.1:8080/rpc > demo_api.py
    python3 typed.py ws://127.0.0.1:8080/rpc
"""

import asyncio
import sys

import switchboard
from demo_api import API


async def main(url: str) -> None:
    async with switchboard.connect(url) as c:
        api = API(c)
        print("add:", await api.add(1, 2))
        print("subtract:", await api.subtract(minuend=42, subtrahend=23))
        print("sum:", await api.sum(1, 2, 4))
        slept = await api.sleep(120)
        print("sleep:", slept["slept"])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/rpc"))
