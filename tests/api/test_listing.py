"""`GET /v1/runs`: the robots' runs newest first, in pages a cursor walks without repeats or gaps (also while new
runs come), filtered by robot, status, session and time; runs going in the process listed before the store has
them; every bad parameter a 400 naming it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import GATES, inner
from tests.api.test_durable_api import add_durable_robots


async def _page(caller: httpx.AsyncClient, **query: Any) -> dict[str, Any]:
    answered = await caller.get("/v1/runs", params=query)
    assert answered.status_code == 200, answered.text
    return dict(answered.json())


async def _walk(caller: httpx.AsyncClient, **query: Any) -> list[list[str]]:
    """Every page's run ids, following next_cursor to the end."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await _page(caller, **query, **({"cursor": cursor} if cursor else {}))
        pages.append([run["run_id"] for run in page["runs"]])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages


def test_pages_newest_first_walk_every_run_once_and_filter(make_app: Callable[..., Any], robots_dir: Path,
                                                           client: Callable[..., httpx.AsyncClient]) -> None:
    add_durable_robots(robots_dir)
    app = make_app()
    backend = inner(app).state.backend

    async def go() -> dict[str, Any]:
        async with client(app) as caller:
            started = [(await caller.post(f"/v1/robots/{robot}/runs", json=body)).json()
                       for robot, body in [("counter", {}), ("echoer", {"inputs": {"text": "a"}}), ("counter", {}),
                                           ("chat", {"session": "ana"}), ("echoer", {"inputs": {"text": "b"}}),
                                           ("chat", {"session": "bea"}), ("chat", {"session": "ana"})]]
            await backend.recorded()
            found: dict[str, Any] = {"started": started, "all": await _page(caller),
                                     "pages": await _walk(caller, limit=3)}
            first = await _page(caller, limit=2)
            newer = (await caller.post("/v1/robots/echoer/runs", json={})).json()  # comes between two pages
            await backend.recorded()
            found["after_newer"] = await _page(caller, limit=2, cursor=first["next_cursor"])
            found["first"], found["newer"] = first, newer
            found["echoer"] = await _page(caller, robot="echoer")
            found["ana"] = await _page(caller, session="ana")
            found["since"] = await _page(caller, since=found["all"]["runs"][2]["started"])
            found["failed"] = await _page(caller, status="failed")
            found["succeeded"] = await _page(caller, status="succeeded", limit=500)
            return found

    found = asyncio.run(go())
    ids = [run["run_id"] for run in found["started"]]
    listed = found["all"]["runs"]
    assert [run["run_id"] for run in listed] == ids[::-1]  # newest first
    assert found["all"]["next_cursor"] is None
    assert [run["started"] for run in listed] == sorted((run["started"] for run in listed), reverse=True)
    assert listed[0] == {"run_id": ids[6], "robot": "chat", "status": "succeeded", "started": listed[0]["started"],
                         "duration_ms": listed[0]["duration_ms"], "steps": 2, "session": "ana", "trigger": None,
                         "run": f"/v1/runs/{ids[6]}"}
    assert found["pages"] == [ids[6:3:-1], ids[3:0:-1], ids[:1]]  # 3, 3, 1: each run once
    # A run that starts between two pages is on neither later page: the cursor holds the place, not an offset.
    assert [run["run_id"] for run in found["first"]["runs"]] == [ids[6], ids[5]]
    assert [run["run_id"] for run in found["after_newer"]["runs"]] == [ids[4], ids[3]]
    assert [run["run_id"] for run in found["echoer"]["runs"]] == [found["newer"]["run_id"], ids[4], ids[1]]
    assert [run["run_id"] for run in found["ana"]["runs"]] == [ids[6], ids[3]]
    assert [run["run_id"] for run in found["since"]["runs"]] == [found["newer"]["run_id"], ids[6], ids[5], ids[4]]
    assert found["failed"]["runs"] == []
    assert len(found["succeeded"]["runs"]) == 8


def test_a_run_going_is_listed_before_the_store_has_it_and_a_waiting_one_as_it_is_now(
        make_app: Callable[..., Any], robots_dir: Path, client: Callable[..., httpx.AsyncClient]) -> None:
    add_durable_robots(robots_dir)
    app = make_app()
    backend = inner(app).state.backend

    async def go() -> dict[str, Any]:
        async with client(app) as caller:
            held = (await caller.post("/v1/robots/holder/runs", json={"wait": False, "inputs": {"gate": "l"}})).json()
            going = await _page(caller)
            running = await _page(caller, status="running")
            GATES.setdefault("l", threading.Event()).set()
            async with caller.stream("GET", held["events"]) as events:  # closes once the run has ended
                await events.aread()
            await backend.recorded()
            ended = await _page(caller)
            asked = (await caller.post("/v1/robots/approve/runs", json={})).json()
            await backend.recorded()
            waiting = await _page(caller, status="waiting")
            await caller.post(f"/v1/runs/{asked['run_id']}/resume", json={"answer": {"approved": True}})
            await backend.recorded()
            return {"held": held, "going": going, "running": running, "ended": ended, "asked": asked,
                    "waiting": waiting, "after": await _page(caller, status="waiting"),
                    "done": await _page(caller, robot="approve")}

    found = asyncio.run(go())
    run_id = found["held"]["run_id"]
    assert [(run["run_id"], run["status"]) for run in found["going"]["runs"]] == [(run_id, "running")]
    assert [run["run_id"] for run in found["running"]["runs"]] == [run_id]
    assert [(run["run_id"], run["status"]) for run in found["ended"]["runs"]] == [(run_id, "succeeded")]
    assert found["ended"]["runs"][0]["steps"] == 4
    asked = found["asked"]["run_id"]
    assert [(run["run_id"], run["status"]) for run in found["waiting"]["runs"]] == [(asked, "waiting")]
    assert found["after"]["runs"] == []
    assert [(run["run_id"], run["status"]) for run in found["done"]["runs"]] == [(asked, "succeeded")]


def test_every_bad_parameter_is_a_400_naming_it(make_app: Callable[..., Any],
                                                 client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()
    bad = {"limit=0": "limit", "limit=501": "limit", "limit=ten": "limit", "limit=1e3": "limit",
           "status=done": "status", "robot=../etc": "robot", "session=a%20b": "session", "since=yesterday": "since",
           "since=nan": "since", "cursor=bm90IGEgY3Vyc29y": "cursor", "cursor=%%%": "cursor", "page=2": "page",
           "robot=a&robot=b": "robot"}

    async def go() -> dict[str, httpx.Response]:
        async with client(app) as caller:
            answers = {query: await caller.get(f"/v1/runs?{query}") for query in bad}
            answers["all"] = await caller.get("/v1/runs?limit=0&status=done&cursor=x&since=never")
            answers["fine"] = await caller.get("/v1/runs?since=2026-01-01T00:00:00&limit=500&status=queued")
            return answers

    answers = asyncio.run(go())
    for query, name in bad.items():
        refused = answers[query]
        assert refused.status_code == 400, query
        body = refused.json()
        assert body["error"] == "the runs cannot be listed so"
        assert len(body["problems"]) == 1 and body["problems"][0].startswith(f"{name}: "), (query, body)
    assert [problem.split(":")[0] for problem in answers["all"].json()["problems"]] == [
        "status", "since", "limit", "cursor"]
    assert answers["fine"].status_code == 200 and answers["fine"].json() == {"runs": [], "next_cursor": None}


def test_each_key_lists_its_own_runs_and_sessions_by_its_own_names(make_app: Callable[..., Any], robots_dir: Path,
                                                                    client: Callable[..., httpx.AsyncClient]) -> None:
    from tests.api.conftest import KEYS, OTHER_KEY
    from tests.api.test_tenants import ADMIN, ADMIN_KEY

    add_durable_robots(robots_dir)
    app = make_app(environ={"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}"}, admin_keys=("ops",))

    async def go() -> dict[str, Any]:
        async with client(app) as ci, client(app, Authorization=f"Bearer {OTHER_KEY}") as other, \
                client(app, **ADMIN) as ops:
            mine = [(await ci.post("/v1/robots/chat/runs", json={"session": "bea"})).json()["run_id"],
                    (await ci.post("/v1/robots/counter/runs", json={})).json()["run_id"]]
            theirs = (await other.post("/v1/robots/chat/runs", json={"session": "bea"})).json()["run_id"]
            await inner(app).state.backend.recorded()
            return {"mine": mine, "theirs": theirs, "ci": await _page(ci), "other": await _page(other),
                    "ops": await _page(ops), "ci_bea": await _page(ci, session="bea"),
                    "other_bea": await _page(other, session="bea"), "ops_bea": await _page(ops, session="ci:bea")}

    found = asyncio.run(go())
    mine, theirs = found["mine"], found["theirs"]
    assert [run["run_id"] for run in found["ci"]["runs"]] == mine[::-1]
    assert [(run["run_id"], run["session"]) for run in found["other"]["runs"]] == [(theirs, "bea")]
    assert [(run["run_id"], run["session"]) for run in found["ci_bea"]["runs"]] == [(mine[0], "bea")]
    assert [run["run_id"] for run in found["other_bea"]["runs"]] == [theirs]
    assert [run["run_id"] for run in found["ops"]["runs"]] == [theirs, *mine[::-1]]  # an admin sees all, as kept:
    assert [(run["run_id"], run["session"]) for run in found["ops_bea"]["runs"]] == [(mine[0], "ci:bea")]
