"""`POST /v1/runs/{id}/cancel`: a going run stops at its next step (202, then `cancelled`, its next block never run);
a waiting one is cancelled at once (200) and its session let go; an ended one is a 409; another key's run is a 404."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import GATES, OTHER_KEY
from tests.api.test_durable_api import add_durable_robots


def test_a_running_run_stops_at_its_next_step_cancelled(make_app: Callable[..., Any],
                                                        client: Callable[..., httpx.AsyncClient]) -> None:
    gate = GATES.setdefault("cancel-me", threading.Event())

    async def go() -> dict[str, Any]:
        async with client(make_app()) as caller:
            started = await caller.post("/v1/robots/holder/runs", json={"inputs": {"gate": "cancel-me"},
                                                                       "wait": False})
            run = started.json()["run_id"]
            for _ in range(500):
                if (await caller.get(f"/v1/runs/{run}")).json()["status"] == "running":
                    break
                await asyncio.sleep(0.01)
            cancelled = await caller.post(f"/v1/runs/{run}/cancel")
            other = await caller.post(f"/v1/runs/{run}/cancel", headers={"Authorization": f"Bearer {OTHER_KEY}"})
            gate.set()  # the Hold block ends: the step loop finds the cancellation before `done`
            for _ in range(500):
                found = (await caller.get(f"/v1/runs/{run}")).json()
                if found["status"] not in ("running", "queued"):
                    break
                await asyncio.sleep(0.01)
            again = await caller.post(f"/v1/runs/{run}/cancel")
            return {"cancelled": cancelled, "other": other, "found": found, "again": again}

    seen = asyncio.run(go())
    assert seen["cancelled"].status_code == 202 and seen["cancelled"].headers["location"].startswith("/v1/runs/")
    assert seen["other"].status_code == 404  # another key's run is no run of its own
    found = seen["found"]
    assert found["status"] == "cancelled", found
    assert "done" not in found["path"] and found["path"][:2] == ["start", "speak"]
    assert [e["type"] for e in found["errors"]] == ["run_cancelled"]
    assert seen["again"].status_code == 409 and "ended" in seen["again"].json()["error"]


def test_a_waiting_run_is_cancelled_at_once_and_its_session_let_go(make_app: Callable[..., Any],
                                                                   client: Callable[..., httpx.AsyncClient],
                                                                   robots_dir: Path) -> None:
    add_durable_robots(robots_dir)

    async def go() -> dict[str, httpx.Response]:
        async with client(make_app()) as caller:
            waiting = await caller.post("/v1/robots/approve/runs", json={"inputs": {"text": "ciao"}})
            run = waiting.json()["run_id"]
            cancelled = await caller.post(f"/v1/runs/{run}/cancel")
            read = await caller.get(f"/v1/runs/{run}")
            resumed = await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": True}})
            missing = await caller.post("/v1/runs/no-such-run/cancel")
            return {"waiting": waiting, "cancelled": cancelled, "read": read, "resumed": resumed, "missing": missing}

    seen = asyncio.run(go())
    assert seen["waiting"].json()["status"] == "waiting"
    assert seen["cancelled"].status_code == 200 and seen["cancelled"].json()["status"] == "cancelled"
    assert seen["read"].json()["status"] == "cancelled"
    assert seen["resumed"].status_code == 409  # a cancelled run never goes on
    assert seen["missing"].status_code == 404
