"""A provider in Python, called from the Go client (the rpc command) and
from the JavaScript client (Node.js), with progress both ways."""

from __future__ import annotations

import asyncio
import json

import switchboard
from switchboard import Request
from conftest import run
from hubproc import ROOT, binary


async def charge(req: Request, account: str, amount: int) -> dict[str, object]:
    """Charges an account, in cents."""
    await req.progress({"done": 50})
    return {"account": account, "charged": amount, "method": req.method}


async def _run(*cmd: str) -> tuple[int, str, str]:
    p = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                             cwd=str(ROOT))
    try:
        out, err = await asyncio.wait_for(p.communicate(), 60)
    finally:
        if p.returncode is None:
            p.kill()
            await p.wait()
    assert p.returncode is not None
    return p.returncode, out.decode(), err.decode()


@run
async def test_go_client_calls_python_provider(hub):
    rpc = await asyncio.to_thread(binary, "rpc")
    async with switchboard.connect(hub.ws) as worker:
        await worker.provide("billing.*", charge)
        code, out, err = await _run(rpc, "call", "-compact", "-progress", hub.ws, "billing.charge",
                                    '{"account": "acme", "amount": 1250}')
        assert code == 0, err
        assert json.loads(out) == {"account": "acme", "charged": 1250, "method": "billing.charge"}
        assert '{"done":50}' in err


JS = """
import { connect } from "./web/switchboard.js";
const rpc = await connect(process.argv[1]);
const notes = [];
const r = await rpc.call("billing.charge", ["acme", 99], { onProgress: (d) => notes.push(d) });
console.log(JSON.stringify({ r, notes }));
rpc.close();
"""


@run
async def test_js_client_calls_python_provider(hub):
    async with switchboard.connect(hub.ws) as worker:
        await worker.provide("billing.charge", charge)
        # Node 22 has a WebSocket of its own; Node 20 behind a flag.
        code, _, _ = await _run("node", "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)")
        flags = [] if code == 0 else ["--experimental-websocket"]
        code, out, err = await _run("node", *flags, "--no-warnings", "--input-type=module", "-e", JS, hub.ws)
        assert code == 0, err
        assert json.loads(out) == {"r": {"account": "acme", "charged": 99, "method": "billing.charge"},
                                   "notes": [{"done": 50}]}

