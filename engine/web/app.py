"""`diagrama serve`: the studio — an HTTP API over a folder of diagrams and their runs, and its page.

The YAML files stay the source of truth: the page edits the diagram as JSON, and a save
writes the smallest YAML change (engine.web.yaml_edit). Every request passes the Guard
(own Host; state changes only from the page's origin, as JSON, with the server's token).
Runs from the page are offline unless the server was started with `--allow-online`.
"""

from __future__ import annotations

import difflib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.errors import DiagramInvalid, Problem
from engine.format.yamlfile import read_yaml_text
from engine.runtime.context import Services
from engine.web.files import Folder, FolderError
from engine.web.guard import TOKEN_HEADER, Guard, allowed_hosts, new_token
from engine.web.http import answer, handle, json_body
from engine.web.models import (
    BlockType,
    Checked,
    Compiled,
    Conflict,
    CsvPreview,
    DiagramFile,
    DiagramSummary,
    Hash,
    PathAnswer,
    Registry,
    Saved,
    Session,
    format_facts,
)
from engine.web.models import Problem as ProblemAnswer
from engine.web.runs import RunRoutes
from engine.web.view import compile_text, problem_json, studio_document
from engine.web.yaml_edit import EditError, apply_edit, content_hash, new_diagram_text

__all__ = ["STUDIO_BUILD", "create_app", "palette"]

STUDIO_BUILD = Path(__file__).parent / "ui" / "dist"


def palette(registry: BlockRegistry) -> list[BlockType]:
    """Each block type as the studio's palette and property panel need it, from its models."""
    found = []
    for name, block in sorted(registry.items()):
        inputs = block.Inputs.model_json_schema()
        tables = {}
        for field, schema in inputs.get("properties", {}).items():
            options = schema.get("anyOf", [])
            if any(isinstance(o, dict) and "csv" in o.get("properties", {}) for o in options):
                tables[field] = field if field in ("history", "tools") else "table"
        found.append(BlockType(
            type=name,
            description=(block.__doc__ or "").strip().splitlines()[0] if block.__doc__ else "",
            inputs_schema=inputs,
            settings_schema=block.Settings.model_json_schema() if block.Settings is not None else None,
            outputs=list(block.output_names()),
            ports=list(block.ports()),
            body_names=list(block.body_names),
            table_fields=tables,
            is_start=block.is_start,
        ))
    return found


class _Texts:
    """Recent file texts by hash, so a refused save can show what changed on disk since the page loaded."""

    def __init__(self, size: int = 64) -> None:
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._size = size

    def remember(self, text: str) -> str:
        digest = content_hash(text)
        self._texts[digest] = text
        self._texts.move_to_end(digest)
        while len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return digest

    def get(self, digest: str) -> str | None:
        return self._texts.get(digest)


class Studio:
    """The diagram endpoints: read, save, validate, create, rename, delete, CSV preview."""

    def __init__(self, folder: Folder, registry: BlockRegistry, read_only: bool) -> None:
        self.folder = folder
        self.registry = registry
        self.read_only = read_only
        self.texts = _Texts()

    def _writable(self) -> None:
        if self.read_only:
            raise FolderError(403, "the studio was started with --read-only")

    def document(self, path: Path, text: str, data: Any, *, with_lines: bool = True) -> Checked:
        """Problems, the compiled picture and the registries' tools of a diagram's text (as if it were the file
        at `path`); `data` is that text as JSON, which the caller already has. One compilation serves all."""
        from engine.compile.validate import template_scope  # the same scope the static check uses

        diagram, problems = compile_text(text, path, self.registry, self.folder.data_roots)
        scope = template_scope(diagram) if diagram is not None else {}
        return Checked(problems=[ProblemAnswer.model_validate(problem_json(p, with_line=with_lines, own=path, folder=self.folder))
                                 for p in problems],
                       compiled=Compiled.model_validate(studio_document(data, diagram, scope, self.registry)),
                       valid=diagram is not None,
                       registries=_registries(diagram))

    async def get(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        text = self.folder.read(path)
        digest = self.texts.remember(text)
        data, unread = read_for_page(text, path)
        if unread:
            document = Checked(problems=[ProblemAnswer.model_validate(problem_json(p, own=path, folder=self.folder))
                                         for p in unread],
                               compiled=Compiled.model_validate(studio_document({}, None, {}, self.registry)), valid=False,
                               registries=[])
        else:
            document = await run_in_threadpool(self.document, path, text, data)
        blocks = data.get("blocks")
        drawable = isinstance(blocks, list) and all(isinstance(block, dict) for block in blocks)
        return answer(DiagramFile(path=self.folder.relative(path), hash=digest, diagram=data if drawable else None,
                                  **dict(document)))

    async def hash(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        return answer(Hash(hash=content_hash(self.folder.read(path))))

    async def put(self, request: Request) -> Response:
        self._writable()
        path = self.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        base, diagram = payload.get("base_hash"), payload.get("diagram")
        if not isinstance(base, str) or not isinstance(diagram, dict):
            raise FolderError(422, "send {\"base_hash\": the hash you loaded, \"diagram\": the diagram as JSON}")
        current = self.folder.read(path)
        digest = self.texts.remember(current)
        if digest != base:
            before = self.texts.get(base)
            diff = "".join(difflib.unified_diff(before.splitlines(True), current.splitlines(True), "loaded", "on disk")) \
                if before is not None else ""
            return answer(Conflict(error="the file changed on disk since you loaded it", hash=digest, diff=diff), 409)
        try:
            text = await run_in_threadpool(apply_edit, current, diagram)
        except EditError as exc:
            raise FolderError(422, str(exc)) from exc
        if text != current:
            self.folder.write(path, text)
        digest = self.texts.remember(text)
        return answer(Saved(hash=digest, **dict(await run_in_threadpool(self.document, path, text, diagram))))

    async def validate(self, request: Request) -> Response:
        payload = await json_body(request)
        diagram, relative = payload.get("diagram"), payload.get("path")
        if not isinstance(diagram, dict):
            raise FolderError(422, "send {\"diagram\": the diagram as JSON, \"path\": its file in the folder}")
        base = self.folder.inside(relative) if isinstance(relative, str) else None
        path = base if base is not None else self.folder.root / "draft.yaml"
        # A draft is checked as plain YAML (libyaml, fast): the same data the save would write, so the same
        # problems; only their line numbers would not be the file's, so they are left out until a save.
        text = _as_yaml(diagram)
        return answer(await run_in_threadpool(self.document, path, text, diagram, with_lines=False))

    async def create(self, request: Request) -> Response:
        self._writable()
        payload = await json_body(request)
        path = self.folder.new_name(payload.get("path"))
        copy_of = payload.get("copy_of")
        if copy_of is not None:
            text = self.folder.read(self.folder.diagram(str(copy_of)))
        else:
            text = new_diagram_text(path.stem.replace(" ", "-"))
        self.folder.write(path, text)
        return answer(PathAnswer(path=self.folder.relative(path)), 201)

    async def rename(self, request: Request) -> Response:
        self._writable()
        source = self.folder.diagram(request.path_params["path"])
        target = self.folder.new_name((await json_body(request)).get("to"))
        source.rename(target)
        return answer(PathAnswer(path=self.folder.relative(target)))

    async def delete(self, request: Request) -> Response:
        self._writable()
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            raise FolderError(415, "send JSON with Content-Type: application/json")
        self.folder.diagram(request.path_params["path"]).unlink()
        return Response(status_code=204)

    async def csv(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        return answer(CsvPreview.model_validate(self.folder.csv_preview(path, request.query_params.get("file", ""))))


def read_for_page(text: str, path: Path) -> tuple[dict[str, Any], list[Problem]]:
    """The file's data as `diagrama run` reads it (engine.format.yamlfile, the one reader), or `{}` and why it cannot
    be read: not YAML, or YAML that is not a mapping."""
    try:
        data, _ = read_yaml_text(text, str(path))
    except DiagramInvalid as exc:
        return {}, exc.problems
    except RecursionError:
        return {}, [Problem(str(path), None, "the file is nested too deeply to read", code="too_deep")]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {}, [Problem(str(path), 1, f"the file holds a YAML {type(data).__name__}, not a mapping",
                            hint="a diagram starts with `diagram: name` and `blocks:`", code="invalid_yaml")]
    return data, []


def _as_yaml(diagram: dict[str, Any]) -> str:
    """The draft as YAML text for the loader: JSON is YAML, and orjson writes it a hundred times faster than a
    YAML dumper. (Lines would all be 1, which is why a draft's problems go without lines.)"""
    try:
        return orjson.dumps(diagram).decode()
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise FolderError(422, f"the diagram cannot be written: {exc}") from exc


def _registries(diagram: Diagram | None) -> list[Registry]:
    """The diagram's tools by group, for the tools field's `tools('group')` choices."""
    if diagram is None or diagram.tools is None:
        return []
    groups: dict[str, dict[str, Any]] = {}
    for tool in diagram.tools.tools.values():
        group = groups.setdefault(tool.entry.group or "", {"group": tool.entry.group or "", "tools": []})
        group["tools"].append({"name": tool.name, "description": tool.entry.description, "enabled": tool.entry.enabled})
    return [Registry.model_validate(group) for group in groups.values()]


def _index(token: str) -> Callable[[Request], Awaitable[Response]]:
    async def index(_: Request) -> Response:
        page = STUDIO_BUILD / "index.html"
        if not page.is_file():
            return HTMLResponse("<h1>diagrama studio</h1><p>The studio's front-end is not built. Reinstall diagrama "
                                "(<code>pip install -e .</code> builds it with npm), or run <code>npm ci && npm run build"
                                "</code> in engine/web/ui.</p>", status_code=503)
        html = page.read_text(encoding="utf-8").replace(
            "</head>", f'<meta name="diagrama-token" content="{token}"></head>', 1)
        return HTMLResponse(html, headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY",
                                           "Content-Security-Policy": "frame-ancestors 'none'"})

    return index


# Long because it holds the route table (a line a route) and the three small handlers that read its settings.
def create_app(
    root: Path,
    runs_dir: Path,
    registry: BlockRegistry,
    services: Services | None = None,
    *,
    read_only: bool = False,
    allow_online: bool = False,
    host: str = "127.0.0.1",
    port: int = 8765,
    extra_hosts: tuple[str, ...] = (),
    token: str | None = None,
    data_roots: tuple[Path, ...] = (),
) -> Guard:
    """The studio as an ASGI app, guarded; `token` is made per server unless given (tests)."""
    folder = Folder(root, data_roots)
    token = token or new_token()
    studio = Studio(folder, registry, read_only)
    runs = RunRoutes(folder, runs_dir.resolve(), registry, services, allow_online=allow_online)

    facts = format_facts()

    async def session(_: Request) -> Response:
        return answer(Session(read_only=read_only, allow_online=allow_online, root=folder.root.name, token=token,
                              token_header=TOKEN_HEADER))

    async def format_(_: Request) -> Response:
        return answer(facts)

    async def blocks(_: Request) -> Response:
        return answer(palette(registry))

    async def diagrams(_: Request) -> Response:
        listed: list[DiagramSummary] = []
        for path in folder.diagrams():
            try:
                text = folder.read(path)
            except FolderError:
                text = None
            data, unread = read_for_page(text, path) if text is not None else ({}, [])
            if text is None or unread:
                listed.append(DiagramSummary(path=path.name, name=path.stem, description="", valid=False, blocks=0))
                continue
            compiled, _problems = compile_text(text, path.resolve(), registry, folder.data_roots)
            data = data if isinstance(data, dict) else {}
            listed.append(DiagramSummary(
                path=path.name, name=str(data.get("diagram", path.stem)), description=str(data.get("description", "")),
                valid=compiled is not None,
                blocks=len(data.get("blocks") or []) if isinstance(data.get("blocks"), list) else 0))
        return answer(listed)

    routes: list[BaseRoute] = [
        Route("/", _index(token)),
        Route("/api/session", session),
        Route("/api/format", format_),
        Route("/api/blocks", blocks),
        Route("/api/diagrams", diagrams, methods=["GET"]),
        Route("/api/diagrams", handle(studio.create), methods=["POST"]),
        Route("/api/validate", handle(studio.validate), methods=["POST"]),
        Route("/api/diagrams/{path:path}/runs", handle(runs.listing), methods=["GET"]),
        Route("/api/diagrams/{path:path}/runs", handle(runs.start), methods=["POST"]),
        Route("/api/diagrams/{path:path}/hash", handle(studio.hash), methods=["GET"]),
        Route("/api/diagrams/{path:path}/csv", handle(studio.csv), methods=["GET"]),
        Route("/api/diagrams/{path:path}/rename", handle(studio.rename), methods=["POST"]),
        Route("/api/diagrams/{path:path}", handle(studio.get), methods=["GET"]),
        Route("/api/diagrams/{path:path}", handle(studio.put), methods=["PUT"]),
        Route("/api/diagrams/{path:path}", handle(studio.delete), methods=["DELETE"]),
        Route("/api/runs/{run_id}", handle(runs.get), methods=["GET"]),
        Route("/api/runs/{run_id}/scenario", handle(runs.save_scenario), methods=["POST"]),
        Route("/api/scenarios/run", handle(runs.run_scenarios), methods=["POST"]),
    ]
    if (STUDIO_BUILD / "assets").is_dir():
        routes.append(Mount("/ui", StaticFiles(directory=STUDIO_BUILD), name="ui"))
    app = Starlette(routes=routes)
    app.state.tasks = runs.tasks
    return Guard(app, allowed_hosts(host, port, extra_hosts), token)
