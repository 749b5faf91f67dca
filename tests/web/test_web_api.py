"""The web view's API, through httpx against the ASGI app."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from blocks.registry import registry
from engine.web.app import create_app

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def client(tmp_path: Path):
    app = create_app(ROOT / "diagrams", tmp_path / "runs", registry(), token="t")

    async def call(method: str, url: str, **kwargs):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as c:
            response = await c.request(method, url, headers={"x-diagrama-token": "t"}, **kwargs)
            if method == "POST" and response.status_code == 202:
                await asyncio.sleep(0.3)  # the run goes on in the app's loop; let it finish
                response.extensions["run"] = (await c.get(f"/api/runs/{response.json()['run_id']}")).json()
            return response

    return lambda method, url, **kw: asyncio.run(call(method, url, **kw))


@pytest.mark.slow
def test_every_example_diagram_is_listed(client) -> None:
    listed = client("GET", "/api/diagrams").json()
    assert {d["path"] for d in listed} == {p.name for p in (ROOT / "diagrams").glob("*.yaml")}
    assert all(d["valid"] for d in listed)


def test_diagram_view_has_blocks_links_and_inherited_levels(client) -> None:
    view = client("GET", "/api/diagrams/order_agent.yaml").json()
    ids = [b["id"] for b in view["diagram"]["blocks"]]
    assert ids == ["start", "ask", "dispatch", "apologise", "done"]
    kinds = {(e["source"], e["target"]): e["kind"] for e in view["compiled"]["links"]}
    assert kinds[("ask", "apologise")] == "error" and kinds[("dispatch", "ask")] == "next"
    ask = view["diagram"]["blocks"][1]
    assert ask["with"]["tools"] == "{{ tools('orders', query=question, top_k=3) }}"
    assert view["compiled"]["levels"]["ask"]["error_level"] == {"value": "Handle", "inherited": True,
                                                                "from": "Start 'start'"}
    # The read-only view's fields (a layout of its own, blocks and links outside `compiled`) are gone.
    assert not {"name", "description", "blocks", "links", "bodies", "inputs"} & set(view)


def test_loop_bodies_are_grouped(client) -> None:
    view = client("GET", "/api/diagrams/classify_messages.yaml").json()
    assert view["compiled"]["bodies"] == [{"loop": "each_message", "members": ["classify"]}]


def test_validation_errors_are_shown_on_their_blocks(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("diagram: bad\nblocks:\n  - {id: start, type: Start, next: a}\n"
                                       "  - {id: a, type: Set, set: {x: '{{ nope }}'}}\n")
    app = create_app(tmp_path, tmp_path / "runs", registry())

    async def get():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as c:
            return (await c.get("/api/diagrams/bad.yaml")).json()

    view = asyncio.run(get())
    assert not view["valid"]
    problems = [p for p in view["problems"] if p["block"] == "a"]
    assert problems and "nope" in problems[0]["message"] and problems[0]["line"] == 4
    # Not compiled, it is still drawn: from the links its file names.
    assert [(e["source"], e["target"], e["kind"]) for e in view["compiled"]["links"]] == [("start", "a", "next")]


def test_run_from_the_api_and_read_its_path(client) -> None:
    started = client("POST", "/api/diagrams/order_agent.yaml/runs", json={"inputs": {}, "offline": True})
    assert started.status_code == 202
    run = started.extensions["run"]
    assert run["status"] == "succeeded" and run["diagram"] == "order_agent.yaml"
    assert ["ask", "dispatch"] in run["links"] and run["failed"] is None
    steps = {s["block"]: s for s in run["steps"]}
    assert steps["ask"]["model"] == "claude-sonnet-5-5" and steps["ask"]["tokens"]
    assert steps["dispatch"]["status"] == "succeeded"


def test_bad_inputs_are_refused(client) -> None:
    response = client("POST", "/api/diagrams/order_agent.yaml/runs", json={"inputs": {"qustion": "x"}})
    assert response.status_code == 400 and "did you mean 'question'?" in response.json()["error"]


@pytest.mark.parametrize("url", [
    "/api/diagrams/..%2F..%2Fpyproject.toml",
    "/api/diagrams/%2Fetc%2Fpasswd",
    "/api/diagrams/../README.md",
    "/api/diagrams/data/customer_messages.csv",
    "/api/runs/..%2F..%2Fetc",
    "/api/runs/does-not-exist",
    "/static/../web.py",
])
def test_path_traversal_gets_404(client, url: str) -> None:
    assert client("GET", url).status_code == 404


def test_no_key_reaches_the_page(client, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-123456")
    started = client("POST", "/api/diagrams/claude_qa.yaml/runs", json={"offline": True})
    assert "sk-ant-secret-value-123456" not in str(started.extensions["run"])
    assert "sk-ant-secret-value-123456" not in client("GET", "/api/diagrams/claude_qa.yaml").text


def test_runs_started_from_the_command_line_with_a_relative_path_are_listed_and_open(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    import json
    import shutil

    from click.testing import CliRunner

    from engine.cli import app as cli_app

    (tmp_path / "robots").mkdir()
    shutil.copy(ROOT / "diagrams/greeting_counter.yaml", tmp_path / "robots/greet.yaml")
    shutil.copy(ROOT / "diagrams/claude_qa.yaml", tmp_path / "robots/other.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    monkeypatch.delenv("DIAGRAMA_RUNS_DIR", raising=False)
    ran = CliRunner().invoke(cli_app, ["run", "robots/greet.yaml", "-q", "--output", "json"])
    assert ran.exit_code == 0, ran.output
    run_id = json.loads(ran.stdout)["run_id"]
    # A batch's worth of newer runs of another diagram must not push this one out of its list.
    newer = json.dumps({"event": "run_started", "run_id": "x", "diagram": "other", "timestamp": 1,
                        "path": str(tmp_path / "robots/other.yaml")})
    for number in range(210):
        folder = tmp_path / "runs" / f"99990101-000000-{number:06d}"
        folder.mkdir(parents=True)
        (folder / "trace.jsonl").write_text(newer + "\n")
    web = create_app(tmp_path / "robots", tmp_path / "runs", registry())

    async def get(url: str):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://127.0.0.1:8765") as c:
            return (await c.get(url)).json()

    listed = asyncio.run(get("/api/diagrams/greet.yaml/runs"))
    assert [entry["run_id"] for entry in listed] == [run_id]
    opened = asyncio.run(get(f"/api/runs/{run_id}"))
    assert opened["diagram"] == "greet.yaml" and opened["status"] == "succeeded"


def test_runs_of_the_folders_diagrams_run_from_elsewhere_are_found_through_the_run_store(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    import json
    import shutil

    from click.testing import CliRunner

    from engine.cli import app as cli_app

    (tmp_path / "robots").mkdir()
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(ROOT / "diagrams/greeting_counter.yaml", tmp_path / "robots/greet.yaml")
    monkeypatch.setenv("DIAGRAMA_STORE", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.delenv("DIAGRAMA_RUNS_DIR", raising=False)
    monkeypatch.chdir(tmp_path / "elsewhere")
    ran = CliRunner().invoke(cli_app, ["run", "../robots/greet.yaml", "-q", "--output", "json"])
    assert ran.exit_code == 0, ran.output
    run_id = json.loads(ran.stdout)["run_id"]
    monkeypatch.chdir(tmp_path)
    web = create_app(tmp_path / "robots", tmp_path / "runs", registry())

    async def get(url: str):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=web), base_url="http://127.0.0.1:8765") as c:
            return (await c.get(url)).json()

    assert [entry["run_id"] for entry in asyncio.run(get("/api/diagrams/greet.yaml/runs"))] == [run_id]
    assert asyncio.run(get(f"/api/runs/{run_id}"))["diagram"] == "greet.yaml"
