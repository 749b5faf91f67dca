"""The studio under attack and under load: concurrent saves, read-only writes, non-diagram files, hostile names,
huge bodies, a full disk, malformed blocks, runs of other folders, and a compilation that never ends.

Every test talks to the real ASGI app through httpx (one event loop, so concurrent requests really interleave).
"""

from __future__ import annotations

import asyncio
import copy
import errno
import hashlib
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import orjson
import pytest
from pydantic import BaseModel, field_validator

from blocks.registry import BUILTIN_BLOCKS, registry
from engine import Block, BlockRegistry
from engine.web.app import create_app
from tests.web.studio_client import HEADERS, ROOT, TOKEN

BASE = "http://127.0.0.1:8765"
JSON_HEADERS = HEADERS | {"content-type": "application/json"}




def app_for(folder: Path, runs: Path, blocks: BlockRegistry | None = None, **options: Any) -> Any:
    return create_app(folder, runs, blocks if blocks is not None else registry(), token=TOKEN, **options)


async def _client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        yield client


def call(app: Any, method: str, url: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(go())


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- 1. concurrent saves: one writer wins, the others are told the file changed ------------------------------


def test_thirty_concurrent_saves_from_one_base_hash_one_wins_the_rest_get_409(folder: Path, tmp_path: Path) -> None:
    app = app_for(folder, tmp_path / "runs")
    file = folder / "order_agent.yaml"

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            view = (await client.get("/api/diagrams/order_agent.yaml")).json()
            bodies = []
            for writer in range(30):
                diagram = copy.deepcopy(view["diagram"])
                diagram["description"] = f"written by writer {writer}"
                bodies.append({"base_hash": view["hash"], "diagram": diagram})
            return list(await asyncio.gather(*(client.put("/api/diagrams/order_agent.yaml", json=body, headers=HEADERS)
                                               for body in bodies)))

    responses = asyncio.run(go())
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] + [409] * 29, statuses
    [winner] = [index for index, response in enumerate(responses) if response.status_code == 200]
    assert f"written by writer {winner}" in file.read_text(encoding="utf-8")
    on_disk = sha(file)
    assert responses[winner].json()["hash"] == on_disk
    assert all(response.json()["hash"] == on_disk for response in responses if response.status_code == 409)


# -- 4. --read-only refuses every writing route, with one guard ------------------------------------------------

# Every route that writes, with a body that would succeed on a writable studio.
WRITING_ROUTES = [
    ("PUT", "/api/diagrams/order_agent.yaml"),
    ("POST", "/api/diagrams"),
    ("POST", "/api/diagrams/order_agent.yaml/rename"),
    ("DELETE", "/api/diagrams/order_agent.yaml"),
    ("POST", "/api/runs/{run_id}/scenario"),
    ("PUT", "/api/diagrams/order_agent.yaml/source"),
    ("PUT", "/api/diagrams/order_agent.yaml/pins/ask"),
    ("DELETE", "/api/diagrams/order_agent.yaml/pins/ask"),
    ("DELETE", "/api/sessions/{session}"),
    ("POST", "/api/diagrams/order_agent.yaml/knowledge/{name}/index"),
    ("POST", "/api/diagrams/order_agent.yaml/publish"),
    ("POST", "/api/diagrams/order_agent.yaml/rollback"),
    ("POST", "/api/examples"),
]
# State-changing methods that read-only allows: checking a draft, running (an answer to a Wait, a replay and a
# chat turn are runs), running scenarios.
READ_ONLY_ALLOWED = [
    ("POST", "/api/validate"),
    ("POST", "/api/diagrams/{path}/runs"),
    ("POST", "/api/diagrams/{path}/chat"),
    ("POST", "/api/runs/{run_id}/resume"),
    ("POST", "/api/runs/{run_id}/replay"),
    ("POST", "/api/scenarios/run"),
    ("POST", "/api/parse"),
    ("POST", "/api/diagrams/{path}/preview"),
    ("PUT", "/api/layouts/{key}"),
    ("POST", "/api/diagrams/{path}/knowledge/{name}/search"),  # a retrieval test reads the index (built in memory)
]


def _writing_body(method: str, url: str, folder: Path, view: dict[str, Any]) -> dict[str, Any] | None:
    if url.endswith("/pins/ask"):
        return {"text": "pinned"} if method == "PUT" else None
    if url.endswith("/publish"):
        return {"note": "first"}
    if url.endswith("/rollback"):
        return {"version": 1}
    if url == "/api/examples":
        return {"example": "greeting_counter.yaml", "path": "copied.yaml"}
    if method == "PUT" and url.endswith("/source"):
        return {"base_hash": view["hash"], "text": "diagram: changed\n"}
    if method == "PUT":
        return {"base_hash": view["hash"], "diagram": view["diagram"] | {"description": "changed"}}
    if url == "/api/diagrams":
        return {"path": "new.yaml"}
    if url.endswith("/rename"):
        return {"to": "renamed.yaml"}
    if url.endswith("/scenario"):
        return {"path": "greeting_counter.scenario.yaml"}
    return None


@pytest.mark.parametrize(("method", "url"), WRITING_ROUTES)
def test_read_only_refuses_each_writing_route_and_writes_nothing(folder: Path, tmp_path: Path, method: str,
                                                                 url: str) -> None:
    scenario = folder / "greeting_counter.scenario.yaml"
    scenario.write_text("# written by hand: keep this comment\n- scenario: counts\n  diagram: greeting_counter.yaml\n",
                        encoding="utf-8")
    app = app_for(folder, tmp_path / "runs", read_only=True)
    before = _files(folder)

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            view = (await client.get("/api/diagrams/order_agent.yaml")).json()
            target = url
            if "{run_id}" in url:  # a run started from this (read-only) studio: running is allowed
                started = await client.post("/api/diagrams/greeting_counter.yaml/runs", json={}, headers=HEADERS)
                assert started.status_code == 202
                run_id = started.json()["run_id"]
                for _ in range(500):
                    if (await client.get(f"/api/runs/{run_id}")).json().get("status", "running") != "running":
                        break
                    await asyncio.sleep(0.02)
                target = url.replace("{run_id}", run_id)
            body = _writing_body(method, url, folder, view)
            return await client.request(method, target, headers=JSON_HEADERS,
                                        content=orjson.dumps(body) if body is not None else b"{}")

    response = asyncio.run(go())
    assert response.status_code == 403, response.text
    assert "--read-only" in response.json()["error"]
    assert _files(folder) == before


def _files(folder: Path) -> dict[Path, bytes]:
    """The folder's files (embedding caches apart: reading a diagram may fill the cache beside its registry)."""
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file() and
            not path.name.endswith(".embeddings.json")}


def test_the_read_only_lists_cover_every_state_changing_route(folder: Path, tmp_path: Path) -> None:
    """A new route that changes state must be added to one of the lists above (and so be tested)."""
    app = app_for(folder, tmp_path / "runs")
    found = set()
    for route in app.app.routes:
        for method in getattr(route, "methods", None) or ():
            if method not in ("GET", "HEAD"):
                found.add((method, route.path))
    listed = {(method, url.replace("order_agent.yaml", "{path:path}").replace("{path}", "{path:path}")
               .replace("/pins/ask", "/pins/{block}"))
              for method, url in WRITING_ROUTES + READ_ONLY_ALLOWED}
    assert found == listed


# -- 6. diagram routes act on diagram files only -------------------------------------------------------------


def test_diagram_routes_refuse_registries_scenarios_and_data(folder: Path, tmp_path: Path) -> None:
    (folder / "orders.scenario.yaml").write_text("- scenario: one\n  diagram: order_agent.yaml\n", encoding="utf-8")
    (folder / "customers.yaml").write_text("- {name: Ana}\n- {name: Rui}\n", encoding="utf-8")
    files = {path: path.read_bytes() for path in folder.rglob("*.yaml")}
    app = app_for(folder, tmp_path / "runs")
    registry_view = {"registry": "orders", "blocks": []}
    for path in ("registry/orders.yaml", "orders.scenario.yaml", "customers.yaml"):
        assert call(app, "GET", f"/api/diagrams/{path}").status_code == 404
        put = call(app, "PUT", f"/api/diagrams/{path}", headers=HEADERS,
                   json={"base_hash": sha(folder / path), "diagram": registry_view})
        assert put.status_code == 404 and "not a diagram" in put.json()["error"], put.text
        renamed = call(app, "POST", f"/api/diagrams/{path}/rename", headers=HEADERS, json={"to": "moved.yaml"})
        assert renamed.status_code == 404
        deleted = call(app, "DELETE", f"/api/diagrams/{path}", headers=JSON_HEADERS)
        assert deleted.status_code == 404
    assert {path: path.read_bytes() for path in folder.rglob("*.yaml")} == files
    listed = {entry["path"] for entry in call(app, "GET", "/api/diagrams").json()}
    assert "orders.scenario.yaml" not in listed and "customers.yaml" not in listed and "order_agent.yaml" in listed
    scenarios = call(app, "GET", "/api/scenarios").json()
    assert [entry["path"] for entry in scenarios] == ["orders.scenario.yaml"]


def test_a_diagram_that_does_not_parse_is_still_a_diagram_to_fix_or_delete(folder: Path, tmp_path: Path) -> None:
    (folder / "broken.yaml").write_text("diagram: broken\nblocks: [\n", encoding="utf-8")
    app = app_for(folder, tmp_path / "runs")
    listed = {entry["path"]: entry for entry in call(app, "GET", "/api/diagrams").json()}
    assert listed["broken.yaml"]["valid"] is False
    assert call(app, "GET", "/api/diagrams/broken.yaml").status_code == 200
    assert call(app, "DELETE", "/api/diagrams/broken.yaml", headers=JSON_HEADERS).status_code == 204


# -- 7. names: a plain file name, no control characters or line separators ------------------------------------

HOSTILE_ENDINGS = ["\n", "\r", "\r\n", "\t", "\x00", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("character", HOSTILE_ENDINGS, ids=[repr(c) for c in HOSTILE_ENDINGS])
def test_names_with_control_characters_or_line_separators_are_refused(folder: Path, tmp_path: Path,
                                                                      character: str) -> None:
    app = app_for(folder, tmp_path / "runs")
    before = sorted(path.name for path in folder.iterdir())
    for name in (f"nl.yaml{character}", f"n{character}l.yaml", f"{character}nl.yaml"):
        created = call(app, "POST", "/api/diagrams", headers=HEADERS, json={"path": name})
        assert created.status_code == 422, (name, created.text)
        renamed = call(app, "POST", "/api/diagrams/claude_qa.yaml/rename", headers=HEADERS, json={"to": name})
        assert renamed.status_code == 422, (name, renamed.text)
    assert sorted(path.name for path in folder.iterdir()) == before


# -- 10. the body limit holds while reading, announced or chunked ----------------------------------------------


def test_an_oversized_chunked_body_is_refused_after_8_mb_not_read_whole(folder: Path, tmp_path: Path) -> None:
    app = app_for(folder, tmp_path / "runs")
    sent = [0]
    chunk = b"a" * (1024 * 1024)

    async def body() -> AsyncIterator[bytes]:
        yield b'{"base_hash": "x", "diagram": {"pad": "'
        for _ in range(64):  # 64 MiB on offer
            sent[0] += 1
            yield chunk
        yield b'"}}'

    response = call(app, "PUT", "/api/diagrams/order_agent.yaml", headers=JSON_HEADERS, content=body())
    assert response.status_code == 413 and "8 MB" in response.json()["error"]
    assert sent[0] <= 9  # it stopped reading just past the limit


def test_an_announced_oversized_body_is_refused_before_reading(folder: Path, tmp_path: Path) -> None:
    app = app_for(folder, tmp_path / "runs")
    sent = [0]

    async def body() -> AsyncIterator[bytes]:
        for _ in range(16):
            sent[0] += 1
            yield b"a" * (1024 * 1024)

    headers = JSON_HEADERS | {"content-length": str(16 * 1024 * 1024)}
    for method, url in (("PUT", "/api/diagrams/order_agent.yaml"), ("POST", "/api/validate")):
        sent[0] = 0
        response = call(app, method, url, headers=headers, content=body())
        assert response.status_code == 413 and "8 MB" in response.json()["error"]
        assert sent[0] <= 1


# -- 11. a full disk: the old file stays, the answer says why in JSON --------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs (root can mount one; elsewhere the test is skipped, saying why)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True,
                             check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.decode().strip()[:80]})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_save_on_a_full_disk_keeps_the_file_and_answers_507_in_json(small_disk: Path, tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    shutil.copy(ROOT / "diagrams" / "greeting_counter.yaml", small_disk / "greet.yaml")
    before = (small_disk / "greet.yaml").read_bytes()
    filler = small_disk / "filler.bin"
    with filler.open("wb", buffering=0) as handle:  # fill the disk to its last byte
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    app = app_for(small_disk, tmp_path / "runs")
    view = call(app, "GET", "/api/diagrams/greet.yaml").json()
    diagram = view["diagram"] | {"description": "a longer description " * 50}
    response = call(app, "PUT", "/api/diagrams/greet.yaml", headers=HEADERS,
                    json={"base_hash": view["hash"], "diagram": diagram})
    assert response.status_code == 507, response.text
    assert "no space left" in response.json()["error"].lower() and "greet.yaml" in response.json()["error"]
    assert (small_disk / "greet.yaml").read_bytes() == before
    assert not [p for p in small_disk.iterdir() if p.name.startswith(".diagrama-")]  # no temporary file left
    assert "Traceback" not in caplog.text
    created = call(app, "POST", "/api/diagrams", headers=HEADERS, json={"path": "new.yaml"})
    assert created.status_code == 507 and not (small_disk / "new.yaml").exists()


# -- 13. malformed blocks: problems with line and field, never a 500 ----------------------------------------------

MALFORMED = [
    {"blocks": [1]},
    {"blocks": 5},
    {"blocks": "x"},
    {"blocks": [{"id": ["a"], "type": "Start"}]},
    {"blocks": [{"id": {"a": 1}, "type": "Set", "next": "b"}]},
    {"blocks": [{"id": "s", "type": "Start", "next": [1, {"to": ["x"]}]}, None]},
    {"diagram": ["x"], "blocks": [{"id": "s", "type": ["Start"], "position": "here"}]},
    {"blocks": [{"id": "s", "type": "Start", "on_error": {"a": 1}, "body": [1]}]},
]


@pytest.mark.parametrize("diagram", MALFORMED, ids=[orjson.dumps(d).decode()[:40] for d in MALFORMED])
def test_malformed_blocks_are_problems_on_validate_and_get(folder: Path, tmp_path: Path, diagram: dict[str, Any]) -> None:
    app = app_for(folder, tmp_path / "runs")
    checked = call(app, "POST", "/api/validate", headers=HEADERS, json={"diagram": diagram, "path": "m.yaml"})
    assert checked.status_code == 200, checked.text
    assert checked.json()["problems"] and checked.json()["valid"] is False
    text = "".join(f"{key}: {orjson.dumps(value).decode()}\n" for key, value in diagram.items())
    (folder / "m.yaml").write_text(text if "diagram" in diagram else "diagram: m\n" + text, encoding="utf-8")
    opened = call(app, "GET", "/api/diagrams/m.yaml")
    assert opened.status_code == 200, opened.text
    problems = opened.json()["problems"]
    assert problems and all(problem["line"] for problem in problems), problems
    assert call(app, "GET", "/api/diagrams").status_code == 200


# -- 15. runs of diagrams outside the served folder stay out of reach -------------------------------------------


def test_runs_of_diagrams_outside_the_folder_are_not_readable_from_a_shared_runs_dir(folder: Path,
                                                                                       tmp_path: Path) -> None:
    from engine import load, run

    runs = tmp_path / "shared-runs"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(ROOT / "diagrams" / "greeting_counter.yaml", outside / "secret_counter.yaml")
    shutil.copy(ROOT / "diagrams" / "greeting_counter.yaml", folder / "mine.yaml")
    theirs = run(load(outside / "secret_counter.yaml", registry()), {}, runs_dir=runs)
    mine = run(load(folder / "mine.yaml", registry()), {}, runs_dir=runs)
    app = app_for(folder, runs)
    assert call(app, "GET", f"/api/runs/{mine.run_id}").status_code == 200
    refused = call(app, "GET", f"/api/runs/{theirs.run_id}")
    assert refused.status_code == 404 and "secret_counter" not in refused.text


# -- 5. compilation runs off the event loop, bounded; a slow one does not hold other requests ----------------------


class _Gate:
    """Holds a plugin's input check until released: a compilation that takes as long as the test wants."""

    entered = threading.Event()
    release = threading.Event()
    left = threading.Event()
    calls = 0


class _WaitInputs(BaseModel):
    note: str = ""

    @field_validator("note")
    @classmethod
    def _wait(cls, value: str) -> str:
        _Gate.calls += 1
        _Gate.entered.set()
        _Gate.release.wait(timeout=10)
        _Gate.left.set()
        return value


class Slow(Block):
    """A plugin whose input check waits (as one doing I/O might)."""

    Inputs: ClassVar[type[BaseModel]] = _WaitInputs

    def run(self, inputs: Any, context: Any) -> None:
        return None


SLOW = """\
diagram: slow
blocks:
  - {id: start, type: Start, next: wait}
  - {id: wait, type: Slow, with: {note: hello}}
"""


@pytest.fixture
def gate() -> Iterator[type[_Gate]]:
    for event in (_Gate.entered, _Gate.release, _Gate.left):
        event.clear()
    _Gate.calls = 0
    yield _Gate
    _Gate.release.set()


def test_a_slow_compilation_does_not_hold_other_requests(folder: Path, tmp_path: Path, gate: type[_Gate]) -> None:
    (folder / "slow.yaml").write_text(SLOW, encoding="utf-8")
    app = app_for(folder, tmp_path / "runs", BlockRegistry((*BUILTIN_BLOCKS, Slow)))

    async def go() -> tuple[httpx.Response, bool, httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            listing = asyncio.create_task(client.get("/api/diagrams"))
            await asyncio.to_thread(gate.entered.wait, 10)
            session = await client.get("/api/session")
            still_waiting = not gate.left.is_set()  # the session answered while the compilation was held
            gate.release.set()
            return session, still_waiting, await listing

    session, still_waiting, listing = asyncio.run(go())
    assert session.status_code == 200 and still_waiting
    assert {entry["path"]: entry["valid"] for entry in listing.json()}["slow.yaml"] is True


def test_a_compilation_past_its_bound_is_answered_and_not_retried_for_the_same_text(folder: Path, tmp_path: Path,
                                                                                     gate: type[_Gate]) -> None:
    (folder / "slow.yaml").write_text(SLOW, encoding="utf-8")
    app = app_for(folder, tmp_path / "runs", BlockRegistry((*BUILTIN_BLOCKS, Slow)), compile_timeout=0.2)
    first = {entry["path"]: entry for entry in call(app, "GET", "/api/diagrams").json()}
    assert first["slow.yaml"]["valid"] is False and first["order_agent.yaml"]["valid"] is True
    opened = call(app, "GET", "/api/diagrams/slow.yaml").json()
    assert [problem["code"] for problem in opened["problems"]] == ["compile_timeout"]
    call(app, "GET", "/api/diagrams")
    assert gate.calls == 1  # the same text is not compiled again while it is known to take too long
    gate.release.set()
