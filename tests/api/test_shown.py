"""Events and answers tell a key only what it needs (issue 38, 7): a key that is not an admin's reads `run_started`
with the diagram's name and its file relative to the robots' folder, without pid or host, a subdiagram's file the
same way, and no answer or refusal names a server folder; an admin key reads events as the trace has them, and the
trace on disk keeps everything."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from engine.runtime.trace import read_events as read_trace
from tests.api.conftest import AUTH, KEYS, Served, read_events
from tests.api.test_durable_api import APPROVE
from tests.api.test_tenants import ADMIN, ADMIN_KEY
from tests.security.test_damaged_rows import damage

PARENT = """
diagram: parent
description: Calls a subdiagram from the data folder.
blocks:
  - id: start
    type: Start
    message_level: Debug
    next: call
  - id: call
    type: Subdiagram
    with: {diagram: data/child.yaml, inputs: {}}
    set: {got: "{{ variables.said }}"}
"""
CHILD = """
diagram: child
blocks:
  - id: start
    type: Start
    next: say
  - id: say
    type: Set
    set: {said: hello}
"""


def _events(served: Served, run_id: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    with httpx.stream("GET", f"{served.url}/v1/runs/{run_id}/events", headers=headers, timeout=30) as response:
        return [orjson.loads(event.data) for event in read_events(response)]


def test_a_key_reads_the_diagrams_name_not_the_servers_paths_pid_or_host(
        make_app: Callable[..., Any], serve: Callable[..., Served], robots_dir: Path, tmp_path: Path) -> None:
    (robots_dir / "parent.yaml").write_text(textwrap.dedent(PARENT).lstrip())
    (robots_dir / "data" / "child.yaml").write_text(textwrap.dedent(CHILD).lstrip())
    served = serve(make_app(environ={"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}"}, admin_keys=("ops",)))
    run_id = httpx.post(f"{served.url}/v1/robots/parent/runs", json={}, headers=AUTH, timeout=30).json()["run_id"]
    shown, whole = _events(served, run_id, AUTH), _events(served, run_id, ADMIN)
    trace = read_trace(tmp_path / "runs" / run_id / "trace.jsonl")
    started, sub = shown[0], next(e for e in shown if e["event"] == "subdiagram_started")
    assert started["event"] == "run_started" and started["diagram"] == "parent" and started["path"] == "parent.yaml"
    assert "pid" not in started and "host" not in started
    assert sub["file"] == "data/child.yaml"
    assert str(tmp_path) not in str(shown)
    # Everything else as the trace has it; the trace itself, and an admin key's stream, keep everything.
    assert [e["event"] for e in shown] == [e["event"] for e in trace]
    assert shown[1:] == [e if e["event"] != "subdiagram_started" else {**e, "file": "data/child.yaml"}
                         for e in trace[1:]]
    assert whole == trace
    assert trace[0]["path"] == str(robots_dir / "parent.yaml") and {"pid", "host"} <= set(trace[0])


def test_a_refusal_names_no_server_folder_to_a_key_an_admin_reads_it_whole(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], robots_dir: Path,
        tmp_path: Path) -> None:
    (robots_dir / "approve.yaml").write_text(APPROVE.lstrip(), encoding="utf-8")
    app = make_app(environ={"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}"}, admin_keys=("ops",))

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with client(app) as ci, client(app, **ADMIN) as ops:
            run_id = (await ci.post("/v1/robots/approve/runs", json={})).json()["run_id"]
            damage(tmp_path / "runs" / "diagrama.db", run_id, "cut short")  # its refusal names the store's file
            return (await ci.post(f"/v1/runs/{run_id}/resume", json={"answer": {"approved": True}}),
                    await ops.post(f"/v1/runs/{run_id}/resume", json={"answer": {"approved": True}}))

    to_key, to_admin = asyncio.run(go())
    assert to_key.status_code == to_admin.status_code == 409
    assert str(tmp_path) not in to_key.text and "in the store runs/diagrama.db" in to_key.json()["error"]
    assert int(to_key.headers["content-length"]) == len(to_key.content)
    assert str(tmp_path / "runs" / "diagrama.db") in to_admin.json()["error"]


LEAKY = """
diagram: leaky
allowed_modules: [shown_leaky_fns]
blocks:
  - id: start
    type: Start
    next: read
  - id: read
    type: Function
    with: {function: "shown_leaky_fns:read", arguments: {}}
"""
LEAKY_CODE = '''
from pathlib import Path

def read():
    raise ValueError(f"cannot read {Path(__file__).parent / 'data' / 'prices.csv'}")
'''


@pytest.fixture
def fresh_leaky_module() -> Iterator[None]:
    """A module a diagram allows is imported once a process, from the first folder that had it: this test's folder
    (and the next test's, which may use LEAKY too) must be the one its `__file__` names."""
    sys.modules.pop("shown_leaky_fns", None)
    yield
    sys.modules.pop("shown_leaky_fns", None)


@pytest.mark.usefixtures("fresh_leaky_module")
def test_a_runs_answer_names_no_server_folder_to_a_key_even_one_that_waited_for_it(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], robots_dir: Path) -> None:
    (robots_dir / "leaky.yaml").write_text(textwrap.dedent(LEAKY).lstrip())
    (robots_dir / "shown_leaky_fns.py").write_text(LEAKY_CODE)
    app = make_app(environ={"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}"}, admin_keys=("ops",))

    async def go() -> list[httpx.Response]:
        async with client(app) as ci, client(app, **ADMIN) as ops:
            waited = await ci.post("/v1/robots/leaky/runs", json={})  # the answer's body comes when the run ends
            run_id = waited.json()["run_id"]
            return [waited, await ci.get(f"/v1/runs/{run_id}"), await ops.get(f"/v1/runs/{run_id}")]

    waited, read, to_admin = asyncio.run(go())
    for answered in (waited, read):
        assert answered.json()["status"] == "failed", answered.text
        assert str(robots_dir) not in answered.text and "cannot read data/prices.csv" in answered.text
    assert f"cannot read {robots_dir / 'data' / 'prices.csv'}" in to_admin.text
