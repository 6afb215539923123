"""`hitl-bridge serve`, except that each click it acks then stalls before it is handled.

For the durability tests (`Cluster.start_worker(..., module=STALLS_AFTER_ACK)`): a worker killed
once a click's 200 has arrived dies after the ack and before the router saw the click, which is
what a crash in that millisecond leaves behind. The click is written down and acked as ever;
only its handling, the step after the ack, never starts.
"""

from __future__ import annotations

import asyncio
import sys

from adapters.cli.command import main
from adapters.surfaces.slack.interactions import Interactions
from adapters.surfaces.slack.parse import Click


async def _stall(self: Interactions, key: str, click: Click) -> None:
    await asyncio.Event().wait()  # until the test kills the process


if __name__ == "__main__":
    Interactions._handle_click = _stall  # type: ignore[method-assign]
    sys.exit(main())
