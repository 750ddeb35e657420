import switchboard
from conftest import run


@run
async def test_add(hub):
    async with switchboard.connect(hub.ws) as c:
        assert await c.call("add", [1, 2]) == 3
