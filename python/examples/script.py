"""switchboard.sync for a script without asyncio, and a one-off call over
HTTP POST, which holds no socket.

    python3 script.py ws://127.0.0.1:8080/rpc
"""

import sys

from switchboard import sync
from switchboard.http import HTTPClient

url = sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/rpc"

with sync.connect(url) as c:
    print("add:", c.call("add", [1, 2]))
    sub = c.subscribe("news.>")
    print("published to", c.publish("news.script", {"hello": "world"}), "peer(s)")
    ev = sub.get(timeout=10)
    print("event:", ev.topic, ev.data)

hc = HTTPClient(url.replace("ws", "http", 1))
print("over POST:", hc.call("subtract", {"minuend": 42, "subtrahend": 23}))
