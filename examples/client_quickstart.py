"""Ask a person through the bridge's HTTP API with hitl_client.

    pip install ./clients/python   # from the repository's root
    HITL_URL=http://localhost:3000 HITL_TOKEN=hitl_... HITL_TO=slack:U0123ABCD \
        python examples/client_quickstart.py

HITL_TO is who is asked (slack:<user or channel>, teams:<conversation>, email:<address>).
"""

import asyncio
import os

from hitl_client import HitlClient, RequestDeclined, RequestExpired


async def main() -> None:
    to = os.environ.get("HITL_TO", "slack:U0123ABCD")
    async with HitlClient(os.environ["HITL_URL"], os.environ["HITL_TOKEN"]) as hitl:
        region = await hitl.ask("Which region should v2 go to?", to, timeout_seconds=600)
        choice = await hitl.select_option("Roll out how?", ["all at once", "canary first"], to)
        try:
            await hitl.request_approval(f"Deploy v2 to {region}, {choice.selectedValue}",
                                        "The release train leaves today", to)  # fmt: skip
        except (RequestDeclined, RequestExpired) as refused:
            print(f"Not deploying: {refused.reason or 'no answer'}")
            return
        print(f"Deploying v2 to {region} ({choice.selectedValue}); approved by a person.")
        async for page in hitl.list(status="answered", limit=10):
            print("recent answers:", [(r.tool, r.answered_by) for r in page])
            break  # the newest page is enough here


if __name__ == "__main__":
    asyncio.run(main())
