"""`diagrama serve`: a read-only web view of a folder of diagrams and their runs.

A Starlette app with a small JSON API and one static page that draws diagrams as SVG.
Layouts come from `position` or a layered layout computed here; the YAML files stay
the source of truth. Paths are confined to the served folder, and no key is ever sent.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from engine.compile.block import BlockRegistry
from engine.compile.inputs import check_inputs
from engine.compile.loader import load_diagram
from engine.errors import DiagramaError, DiagramInvalid, Problem
from engine.format.values import json_default
from engine.format.yamlfile import read_yaml
from engine.runs.traces import list_runs, run_path, steps
from engine.runtime.context import Services
from engine.runtime.execute import execute
from engine.runtime.trace import new_run_id, read_events

__all__ = ["create_app", "diagram_view", "layered_layout"]

STATIC = Path(__file__).parent / "static"
_RUN_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
_LEVELS = {"error_level": "Handle", "message_level": "Debug"}


class _JSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, default=json_default, option=orjson.OPT_NON_STR_KEYS)


def _not_found(what: str = "not found") -> Response:
    return _JSON({"error": what}, status_code=404)


def _links(raw: dict[str, Any]) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    following = raw.get("next")
    if isinstance(following, str):
        links.append({"target": following, "kind": "next", "when": None})
    elif isinstance(following, list):
        for link in following:
            if isinstance(link, dict) and isinstance(link.get("to"), str):
                links.append({"target": link["to"], "kind": "next", "when": link.get("when")})
    if isinstance(raw.get("on_error"), str):
        links.append({"target": raw["on_error"], "kind": "error", "when": None})
    if isinstance(raw.get("body"), str):
        links.append({"target": raw["body"], "kind": "body", "when": None})
    return links


def layered_layout(ids: list[str], edges: list[tuple[str, str, str]], start: str | None) -> dict[str, tuple[float, float]]:
    """Layers by distance from Start along next/body links; error handlers sit beside."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from((a, b) for a, b, kind in edges if kind != "error" and a in graph and b in graph)
    depth: dict[str, int] = dict(nx.single_source_shortest_path_length(graph, start)) if start in graph else {}
    for a, b, kind in edges:
        if kind == "error" and a in depth and b not in depth:
            depth[b] = depth[a] + 1
    deepest = max(depth.values(), default=0)
    for node in ids:
        if node not in depth:
            deepest += 1
            depth[node] = deepest
    layers: dict[int, list[str]] = {}
    for node in ids:  # file order within a layer keeps the drawing stable
        layers.setdefault(depth[node], []).append(node)
    positions: dict[str, tuple[float, float]] = {}
    for level, members in layers.items():
        for index, node in enumerate(members):
            positions[node] = (80 + index * 240 - (len(members) - 1) * 120 + 400, 60 + level * 130)
    return positions


def diagram_view(path: Path, root: Path, registry: BlockRegistry) -> dict[str, Any]:
    """What the page draws: blocks as written, links, layout, effective levels, problems."""
    problems: list[Problem] = []
    try:
        load_diagram(path, registry)
    except DiagramInvalid as exc:
        problems = exc.problems
    try:
        data, _lines = read_yaml(path)
    except DiagramInvalid as exc:
        data, problems = {}, exc.problems
    data = data if isinstance(data, dict) else {}
    raw_blocks = [b for b in data.get("blocks") or [] if isinstance(b, dict) and isinstance(b.get("id"), str)]
    start = next((b for b in raw_blocks if b.get("type") == "Start"), {})
    defaults = {key: start.get(key, "Default") for key in _LEVELS}
    by_block: dict[str, list[str]] = {}
    general: list[str] = []
    for problem in problems:
        text = f"line {problem.line}: {problem.message}" if problem.line else problem.message
        if problem.hint:
            text += f" ({problem.hint})"
        (by_block.setdefault(problem.block, []) if problem.block else general).append(
            text if not problem.field else f"{problem.field}: {text}")
    links = [{"source": b["id"], **link} for b in raw_blocks for link in _links(b)]
    known = {b["id"] for b in raw_blocks}
    links = [link for link in links if link["target"] in known]
    layout = layered_layout([b["id"] for b in raw_blocks], [(e["source"], e["target"], e["kind"]) for e in links],
                            start.get("id"))
    blocks = []
    for raw in raw_blocks:
        levels = {}
        for key, built_in in _LEVELS.items():
            own = raw.get(key, "Default")
            if raw is start:
                levels[key] = {"value": own if own != "Default" else built_in, "inherited": own == "Default",
                               "from": "built-in default" if own == "Default" else "this block"}
            elif own in (None, "Default"):
                value = defaults[key] if defaults[key] != "Default" else built_in
                levels[key] = {"value": value, "inherited": True, "from": f"Start '{start.get('id', '?')}'"}
            else:
                levels[key] = {"value": own, "inherited": False, "from": "this block"}
        position = raw.get("position")
        x, y = position if isinstance(position, list) and len(position) == 2 else layout[raw["id"]]
        settings = {k: v for k, v in raw.items() if k not in ("id", "type", "label", "position", "with", "set", "next",
                                                              "on_error", "body", "error_level", "message_level")}
        blocks.append({"id": raw["id"], "type": raw.get("type"), "label": raw.get("label"), "x": x, "y": y,
                       "with": raw.get("with") or {}, "set": raw.get("set") or {}, "settings": settings,
                       "levels": levels, "problems": by_block.get(raw["id"], [])})
    bodies = []
    for raw in raw_blocks:
        if raw.get("type") == "Loop" and isinstance(raw.get("body"), str):
            bodies.append({"loop": raw["id"], "members": _body_members(raw, raw_blocks)})
    return {"path": path.relative_to(root).as_posix(), "name": data.get("diagram", path.stem),
            "description": data.get("description", ""), "blocks": blocks, "links": links, "bodies": bodies,
            "problems": general, "valid": not problems, "inputs": start.get("inputs") or {}}


def _body_members(loop: dict[str, Any], raw_blocks: list[dict[str, Any]]) -> list[str]:
    by_id = {b["id"]: b for b in raw_blocks}
    members: list[str] = []
    pending = [loop["body"]]
    while pending:
        current = pending.pop()
        if current in members or current == loop["id"] or current not in by_id:
            continue
        members.append(current)
        pending += [link["target"] for link in _links(by_id[current]) if link["kind"] != "error"]
    return members


def create_app(root: Path, runs_dir: Path, registry: BlockRegistry, services: Services | None = None) -> Starlette:
    root = root.resolve()
    runs_dir = runs_dir.resolve()
    tasks: set[asyncio.Task[Any]] = set()

    def diagram_file(relative: str) -> Path | None:
        candidate = (root / relative).resolve()
        if not candidate.is_relative_to(root) or candidate.suffix not in (".yaml", ".yml") or not candidate.is_file():
            return None
        return candidate

    def trace_file(run_id: str) -> Path | None:
        if not _RUN_ID.match(run_id):
            return None
        candidate = runs_dir / run_id / "trace.jsonl"
        return candidate if candidate.is_file() else None

    async def index(_: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def diagrams(_: Request) -> Response:
        found = []
        for path in sorted([*root.glob("*.yaml"), *root.glob("*.yml")]):
            view = diagram_view(path, root, registry)
            found.append({k: view[k] for k in ("path", "name", "description", "valid")} | {"blocks": len(view["blocks"])})
        return _JSON(found)

    async def diagram(request: Request) -> Response:
        path = diagram_file(request.path_params["path"])
        return _JSON(diagram_view(path, root, registry)) if path else _not_found()

    async def diagram_runs(request: Request) -> Response:
        path = diagram_file(request.path_params["path"])
        if path is None:
            return _not_found()
        listed = []
        for summary in list_runs(runs_dir, limit=200):
            if summary.path == str(path):
                listed.append({"run_id": summary.run_id, "status": summary.status, "started": summary.started,
                               "duration_ms": summary.duration_ms, "steps": summary.steps})
        return _JSON(listed)

    async def start_run(request: Request) -> Response:
        path = diagram_file(request.path_params["path"])
        if path is None:
            return _not_found()
        try:
            payload = await request.json()
        except ValueError:
            payload = {}
        try:
            loaded = load_diagram(path, registry)
            inputs = check_inputs(loaded, payload.get("inputs") or {})
        except DiagramaError as exc:
            return _JSON({"error": str(exc)}, status_code=400)
        run_id = new_run_id()
        run_services = Services(offline=bool(payload.get("offline", True)))
        if services is not None:
            run_services.environ = services.environ
            run_services.extras = services.extras
        task = asyncio.create_task(execute(loaded, inputs, runs_dir=runs_dir, services=run_services, run_id=run_id))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return _JSON({"run_id": run_id}, status_code=202)

    async def run(request: Request) -> Response:
        trace = trace_file(request.path_params["run_id"])
        if trace is None:
            return _not_found()
        events = read_events(trace)
        after = int(request.query_params.get("after", 0) or 0)
        drawn = run_path(trace)
        first = events[0] if events else {}
        finished = next((e for e in reversed(events) if e.get("event") == "run_finished"), None)
        diagram_path = Path(str(first.get("path", "")))
        relative = diagram_path.relative_to(root).as_posix() if diagram_path.is_relative_to(root) else None
        return _JSON({
            "run_id": request.path_params["run_id"], "diagram": relative, "status": finished["status"] if finished else "running",
            "errors": finished.get("errors", []) if finished else [],
            "blocks": sorted(drawn.blocks), "links": sorted(drawn.links), "failed": drawn.failed, "passes": drawn.passes,
            "steps": [step.__dict__ | {"payloads": []} for step in steps(events)],
            "events": events[after:], "count": len(events),
        })

    routes = [
        Route("/", index),
        Route("/api/diagrams", diagrams),
        Route("/api/diagrams/{path:path}/runs", diagram_runs, methods=["GET"]),
        Route("/api/diagrams/{path:path}/runs", start_run, methods=["POST"]),
        Route("/api/diagrams/{path:path}", diagram),
        Route("/api/runs/{run_id}", run),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(routes=routes)
