"""Tenants (issue 38, 5): a key sees, follows, resumes and forgets only the runs and sessions it created, and gets
404 for another key's, word for word as for a run that does not exist; an admin key (`--admin-key`, DIAGRAMA_API_ADMINS,
a keys file's `admin`) and `--no-auth`'s one caller see every one; sessions are each key's own; a run's owner is in
the store, so a restarted server, and another API process sharing the store, agree."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.api.conftest import AUTH, KEYS, OTHER_KEY, Served
from tests.api.test_durable_api import add_durable_robots
from tests.batch.test_celery import broker

__all__ = ["broker"]  # the fixture (a Redis server), for the Celery test

ADMIN_KEY = "dgk_admin-key-0123456789abcdef"
OTHER = {"Authorization": f"Bearer {OTHER_KEY}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
NO_RUN = "20260101-000000-abcdef"
_T = TypeVar("_T")


def run(work: Coroutine[Any, Any, _T]) -> _T:
    return asyncio.run(work)


@pytest.fixture
def tenants_app(make_app: Callable[..., Any], robots_dir: Path) -> Callable[..., Any]:
    """The API with keys ci and other, and ops, an admin key (by --admin-key)."""
    add_durable_robots(robots_dir)

    def make(**options: Any) -> Any:
        options.setdefault("environ", {"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}"})
        options.setdefault("admin_keys", ("ops",))
        return make_app(**options)

    return make


def _without_id(answer: httpx.Response, run_id: str) -> tuple[int, Any]:
    return answer.status_code, answer.text.replace(run_id, "RUN")


def test_another_keys_run_is_404_word_for_word_as_no_run(tenants_app: Callable[..., Any],
                                                         client: Callable[..., httpx.AsyncClient]) -> None:
    app = tenants_app()

    async def go() -> dict[str, Any]:
        async with client(app) as ci, client(app, **OTHER) as other, client(app, **ADMIN) as ops:
            started = await ci.post("/v1/robots/approve/runs", json={})  # it waits at its Wait: resumable
            run_id = started.json()["run_id"]
            asked = {}
            for name, caller in (("ci", ci), ("other", other), ("ops", ops)):
                asked[name] = [await caller.get(f"/v1/runs/{run_id}"), await caller.get(f"/v1/runs/{run_id}/events")]
            missing = [await other.get(f"/v1/runs/{NO_RUN}"), await other.get(f"/v1/runs/{NO_RUN}/events"),
                       await other.post(f"/v1/runs/{NO_RUN}/resume", json={"answer": {"approved": True}})]
            stolen = await other.post(f"/v1/runs/{run_id}/resume", json={"answer": {"approved": True}})
            still = await ci.get(f"/v1/runs/{run_id}")
            resumed = await ci.post(f"/v1/runs/{run_id}/resume", json={"answer": {"approved": True}})
            return {"run_id": run_id, "started": started, "asked": asked, "missing": missing, "stolen": stolen,
                    "still": still, "resumed": resumed}

    found = run(go())
    run_id = found["run_id"]
    assert found["started"].json()["status"] == "waiting"
    assert [a.status_code for a in found["asked"]["ci"]] == [200, 200]
    assert [a.status_code for a in found["asked"]["ops"]] == [200, 200]  # the admin key sees every run
    # Another key learns nothing: the same status and words as for a run that does not exist.
    got, missing = found["asked"]["other"], found["missing"]
    assert [_without_id(a, run_id) for a in got] == [_without_id(a, NO_RUN) for a in missing[:2]]
    assert _without_id(found["stolen"], run_id) == _without_id(missing[2], NO_RUN)
    assert found["stolen"].status_code == 404 and found["stolen"].json()["error"] == f"no durable run '{run_id}'"
    # Its resume did nothing: the run still waits for its owner, who resumes it.
    assert found["still"].json()["status"] == "waiting"
    assert found["resumed"].json()["status"] == "succeeded"


def test_sessions_are_each_keys_own_and_named_by_its_own_names(tenants_app: Callable[..., Any],
                                                               client: Callable[..., httpx.AsyncClient]) -> None:
    app = tenants_app()

    async def go() -> dict[str, httpx.Response]:
        async with client(app) as ci, client(app, **OTHER) as other, client(app, **ADMIN) as ops:
            found = {
                "ci 1": await ci.post("/v1/robots/chat/runs", json={"inputs": {"message": "ciao"}, "session": "s1"}),
                "ci 2": await ci.post("/v1/robots/chat/runs", json={"inputs": {"message": "come va"}, "session": "s1"}),
                "other 1": await other.post("/v1/robots/chat/runs", json={"inputs": {"message": "olá"},
                                                                           "session": "s1"}),
                "ci reads": await ci.get("/v1/sessions/s1"),
                "other reads": await other.get("/v1/sessions/s1"),
                "other wrong robot": await other.post("/v1/robots/chat2/runs", json={"session": "s1"}),
                "ops reads ci's": await ops.get("/v1/sessions/ci:s1"),
                "ops own s1": await ops.get("/v1/sessions/s1"),
                "other forgets ci's": await other.delete("/v1/sessions/ci:s1"),
                "other forgets": await other.delete("/v1/sessions/s1"),
                "ci still": await ci.get("/v1/sessions/s1"),
                "too long": await ci.post("/v1/robots/chat/runs", json={"session": "x" * 98}),
            }
            found["longest"] = await ci.post("/v1/robots/chat/runs", json={"session": "x" * 97})
            return found

    found = run(go())
    # Two conversations named s1: each key's memory is its own.
    assert found["ci 2"].json()["variables"]["said"] == ["ciao", "come va"]
    assert found["other 1"].json()["variables"]["said"] == ["olá"]
    assert found["ci reads"].json()["session_id"] == "s1" and found["ci reads"].json()["turns"] == 2
    assert found["other reads"].json()["session_id"] == "s1" and found["other reads"].json()["turns"] == 1
    # A refusal names the session as its caller does, never as the store keeps it.
    wrong = found["other wrong robot"]
    assert wrong.status_code == 409 and "session 's1'" in wrong.json()["error"] and "other:" not in wrong.text
    # The admin key names sessions as the store keeps them: key ci's is ci:s1.
    assert found["ops reads ci's"].json()["session_id"] == "ci:s1" and found["ops reads ci's"].json()["turns"] == 2
    assert found["ops own s1"].status_code == 404
    assert found["other forgets ci's"].status_code == 404 and found["other forgets"].status_code == 204
    assert found["ci still"].json()["turns"] == 2
    # A key's session name and its id fit a session name (100 characters): ci leaves 97.
    assert found["too long"].status_code == 400 and "at most 97 characters" in found["too long"].json()["problems"][0]
    assert found["longest"].status_code == 200


def test_without_keys_the_one_caller_sees_every_run_and_names_sessions_as_kept(
        tenants_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], tmp_path: Path) -> None:
    keyed = tenants_app()

    async def started() -> str:
        async with client(keyed) as ci:
            await ci.post("/v1/robots/chat/runs", json={"inputs": {"message": "ciao"}, "session": "s1"})
            return str((await ci.post("/v1/robots/counter/runs", json={})).json()["run_id"])

    run_id = run(started())
    open_app = tenants_app(no_auth=True, environ={}, admin_keys=())

    async def go() -> list[httpx.Response]:
        async with client(open_app, **{"X-Anything": "no key"}) as anyone:
            return [await anyone.get(f"/v1/runs/{run_id}"), await anyone.get("/v1/sessions/ci:s1")]

    read, session = run(go())
    assert read.status_code == 200 and read.json()["run_id"] == run_id
    assert session.json()["session_id"] == "ci:s1"


def test_a_runs_owner_outlives_the_server(tenants_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient],
                                         store_url: str) -> None:
    async def start() -> str:
        async with client(tenants_app(store_url=store_url)) as ci:
            return str((await ci.post("/v1/robots/counter/runs", json={})).json()["run_id"])

    run_id = run(start())
    restarted = tenants_app(store_url=store_url)  # a new process's app: nothing of the run in memory

    async def go() -> list[int]:
        async with client(restarted) as ci, client(restarted, **OTHER) as other, client(restarted, **ADMIN) as ops:
            return [(await caller.get(f"/v1/runs/{run_id}")).status_code for caller in (ci, other, ops)]

    assert run(go()) == [200, 404, 200]


def test_an_admin_key_named_by_the_environment_or_no_key_at_all(make_app: Callable[..., Any],
                                                                client: Callable[..., httpx.AsyncClient]) -> None:
    from engine.errors import UsageError

    app = make_app(environ={"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}", "DIAGRAMA_API_ADMINS": "ops, other"})

    async def go() -> list[int]:
        async with client(app) as ci, client(app, **OTHER) as other, client(app, **ADMIN) as ops:
            run_id = (await ci.post("/v1/robots/counter/runs", json={})).json()["run_id"]
            return [(await caller.get(f"/v1/runs/{run_id}")).status_code for caller in (other, ops)]

    assert run(go()) == [200, 200]  # other and ops are admin keys here
    with pytest.raises(UsageError, match="names no key of this server: nobody"):
        make_app(admin_keys=("nobody",))
    with pytest.raises(UsageError, match="not 'no key'"):
        make_app(admin_keys=("no key",))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is absent (apt-get install redis-server)")
def test_api_processes_on_celery_agree_whose_run_it_is(tenants_app: Callable[..., Any], serve: Callable[..., Served],
                                                       tmp_path: Path, broker: str) -> None:
    # Two API processes sharing the broker and the store; no worker is needed: a queued run is already someone's.
    def celery() -> Any:
        return tenants_app(backend="celery", broker=broker, store_url=f"sqlite:///{tmp_path / 'shared.db'}")

    one, two = serve(celery()), serve(celery())
    queued = httpx.post(f"{one.url}/v1/robots/counter/runs", json={"wait": False}, headers=AUTH, timeout=30)
    run_id = queued.json()["run_id"]
    assert queued.json()["status"] == "queued"
    answers = {who: httpx.get(f"{two.url}/v1/runs/{run_id}", headers=headers, timeout=30)
               for who, headers in (("ci", AUTH), ("other", OTHER), ("ops", ADMIN))}
    assert {who: a.status_code for who, a in answers.items()} == {"ci": 200, "other": 404, "ops": 200}
    assert answers["ci"].json()["status"] == "queued"
