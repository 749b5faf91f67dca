"""The fault test's tool: each call is an effect, logged to $DIAGRAMA_FAULT_LOG (one line per call)."""

from __future__ import annotations

import os
import time
from typing import Any


def get_order_status(order_id: int) -> dict[str, Any]:
    with open(os.environ["DIAGRAMA_FAULT_LOG"], "a", encoding="utf-8") as log:  # one append per call: atomic
        log.write(f"{order_id}\n")
    time.sleep(0.02)  # long enough for a kill to land inside a call now and then
    return {"order_id": order_id, "status": "shipped" if order_id % 2 else "packing"}
