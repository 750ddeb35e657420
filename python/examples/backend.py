"""A web backend (a FastAPI route, say) that asks a user's browser tab to
confirm an order, through the hub, with call_user: every tab alice has open
is asked, and the answers come back together.

    python3 backend.py ws://127.0.0.1:8080/rpc alice   # with $TOKEN set
    python3 tab.py ws://127.0.0.1:8080/rpc               # alice's "tab", $TOKEN hers

With FastAPI, the client is made once at startup and the route is:

    @app.post("/orders/{order_id}/confirm")
    async def confirm_route(order_id: str, user: str) -> dict[str, object]:
        return await confirm_order(hub, user, order_id)
"""

import asyncio
import os
import sys

import switchboard


async def confirm_order(hub: switchboard.Client, user: str, order_id: str) -> dict[str, object]:
    """confirm_order asks each tab of user to confirm, within 10 s."""
    answers = await hub.call_user(user, "confirm", {"order": order_id}, timeout=10)
    yes = [a.peer.id for a in answers if a.error is None and a.result is True]
    return {"order": order_id, "tabs": len(answers), "confirmed_by": yes}


async def main(url: str, user: str) -> None:
    async with switchboard.connect(url, token=os.environ.get("TOKEN")) as hub:
        print(await confirm_order(hub, user, "o-42"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
