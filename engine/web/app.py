"""`diagrama serve`: the studio — an HTTP API over a folder of diagrams and their runs, and its page.

The YAML files stay the source of truth: the page edits the diagram as JSON, and a save
writes the smallest YAML change (engine.web.yaml_edit). Every request passes the Guard
(own Host; state changes only from the page's origin, as JSON, with the server's token).
Runs from the page are offline unless the server was started with `--allow-online`; under
`--read-only` one guard refuses every route that writes (runs are allowed: starting one, answering a
waiting one, replaying one, a chat turn). Compilations run off the event loop,
bounded (engine.web.concurrency); a save's hash check and write hold the file's lock.
"""

from __future__ import annotations

import asyncio
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
from engine.errors import DiagramInvalid, Problem
from engine.format.yamlfile import read_yaml_text
from engine.runtime.context import Services
from engine.web.concurrency import Compilations, PathLocks
from engine.web.durable import DurableRoutes
from engine.web.evals import EvalRoutes
from engine.web.files import Folder, FolderError, write_failure
from engine.web.guard import TOKEN_HEADER, Guard, allowed_hosts, new_token
from engine.web.http import answer, handle, json_body
from engine.web.knowledge import KnowledgeRoutes
from engine.web.layouts import LayoutCache
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
    Saved,
    Session,
    format_facts,
)
from engine.web.models import Problem as ProblemAnswer
from engine.web.navigation import NavigationRoutes
from engine.web.publishing import PublishRoutes
from engine.web.runs import RunRoutes
from engine.web.source import SourceRoutes
from engine.web.tool_groups import tool_groups
from engine.web.versions import Versions
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
    """The diagram endpoints: read, save, validate, create, rename, delete, CSV preview, the listing."""

    def __init__(self, folder: Folder, registry: BlockRegistry, compilations: Compilations, versions: Versions) -> None:
        self.folder = folder
        self.versions = versions
        self.registry = registry
        self.texts = _Texts()
        self.compilations = compilations
        self.locks = PathLocks()

    def document(self, path: Path, text: str, data: Any, *, with_lines: bool = True) -> Checked:
        """Problems, the compiled picture and the registries' tools of a diagram's text (as if it were the file
        at `path`); `data` is that text as JSON, which the caller already has. One compilation serves all."""
        from engine.compile.validate import template_scope  # the same scope the static check uses

        diagram, problems = compile_text(text, path, self.registry, self.folder.data_roots)
        scope = template_scope(diagram) if diagram is not None else {}
        return Checked(problems=[ProblemAnswer.model_validate(problem_json(p, with_line=with_lines, own=path, folder=self.folder))
                                 for p in problems],
                       compiled=Compiled.model_validate(studio_document(data, diagram, scope, self.registry,
                                                                        self._locate(path))),
                       valid=diagram is not None,
                       registries=tool_groups(diagram, data, path, self.folder))

    def _locate(self, path: Path) -> Callable[[str], str | None]:
        """A path as a block of the diagram at `path` writes it → that diagram file in the folder, or None."""
        def locate(written: str) -> str | None:
            found = self.folder.inside(written, base=path.parent)
            return self.folder.relative(found) if found is not None and found.is_file() else None

        return locate

    async def checked(self, path: Path, text: str, data: Any, *, with_lines: bool = True) -> Checked:
        """`document` in a worker thread, bounded; a compilation past the bound is answered as a problem."""
        found = await self.compilations.run(path, text, lambda: self.document(path, text, data, with_lines=with_lines))
        return found if found is not None else _unchecked(path, data, self.compilations.timeout, self.registry)

    def unreadable(self, path: Path, problems: list[Problem]) -> Checked:
        """The answer for a text that cannot be read as a diagram: why, and nothing compiled."""
        return Checked(problems=[ProblemAnswer.model_validate(problem_json(p, own=path, folder=self.folder))
                                 for p in problems],
                       compiled=Compiled.model_validate(studio_document({}, None, {}, self.registry)), valid=False,
                       registries=[])

    async def summary(self, path: Path) -> DiagramSummary:
        """A diagram as the listing shows it: name, description, whether it is valid, how many blocks."""
        entry = DiagramSummary(path=self.folder.relative(path), name=path.stem, description="", valid=False, blocks=0)
        try:
            text = self.folder.read(path)
        except (FolderError, OSError):
            return entry

        def work() -> DiagramSummary:
            data, unread = read_for_page(text, path)
            if unread:
                return entry
            compiled, _problems = compile_text(text, path, self.registry, self.folder.data_roots)
            blocks = data.get("blocks")
            return entry.model_copy(update={
                "name": str(data.get("diagram", path.stem)), "description": str(data.get("description", "")),
                "valid": compiled is not None, "blocks": len(blocks) if isinstance(blocks, list) else 0})

        found = await self.compilations.run(path, text, work)
        return found if found is not None else entry

    async def get(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        text = self.folder.read(path)
        digest = self.texts.remember(text)
        data, unread = read_for_page(text, path)
        if unread:
            document = self.unreadable(path, unread)
        else:
            document = await self.checked(path, text, data)
        blocks = data.get("blocks")
        drawable = isinstance(blocks, list) and all(isinstance(block, dict) for block in blocks)
        return answer(DiagramFile(path=self.folder.relative(path), hash=digest, diagram=data if drawable else None,
                                  **dict(document)))

    async def hash(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        return answer(Hash(hash=content_hash(self.folder.read(path))))

    async def put(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        base, diagram = payload.get("base_hash"), payload.get("diagram")
        if not isinstance(base, str) or not isinstance(diagram, dict):
            raise FolderError(422, "send {\"base_hash\": the hash you loaded, \"diagram\": the diagram as JSON}")
        # The hash check and the write are one critical section per file: of two saves from the same base, one
        # writes and the other is told the file changed (the edit is made in a thread meanwhile).
        async with self.locks.hold(path):
            current = self.folder.read(path)
            if self.texts.remember(current) != base:
                return self.conflict(base, current)
            try:
                text = await run_in_threadpool(apply_edit, current, diagram)
            except EditError as exc:
                raise FolderError(422, str(exc)) from exc
            if text != current:
                now = self.folder.read(path)  # an editor outside the studio may have saved meanwhile
                if now != current:
                    return self.conflict(base, now)
                self.folder.write(path, text)
                self.versions.saved(path, current, text)
        digest = self.texts.remember(text)
        return answer(Saved(hash=digest, **dict(await self.checked(path, text, diagram))))

    def conflict(self, base: str, current: str) -> Response:
        digest = self.texts.remember(current)
        before = self.texts.get(base)
        diff = "".join(difflib.unified_diff(before.splitlines(True), current.splitlines(True), "loaded", "on disk")) \
            if before is not None else ""
        return answer(Conflict(error="the file changed on disk since you loaded it", hash=digest, diff=diff), 409)

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
        return answer(await self.checked(path, text, diagram, with_lines=False))

    async def create(self, request: Request) -> Response:
        payload = await json_body(request)
        name = payload.get("path")
        path = self.folder.new_name(name)
        copy_of = payload.get("copy_of")
        if copy_of is not None:
            text = _renamed(self.folder.read(self.folder.diagram(str(copy_of))), path.stem.replace(" ", "-"))
        else:
            text = new_diagram_text(path.stem.replace(" ", "-"))
        async with self.locks.hold(path):
            self.folder.new_name(name)  # still free: a create of the same name may have come first
            self.folder.write(path, text)
            self.versions.saved(path, None, text)
        return answer(PathAnswer(path=self.folder.relative(path)), 201)

    async def rename(self, request: Request) -> Response:
        relative = request.path_params["path"]
        source = self.folder.diagram(relative)
        name = (await json_body(request)).get("to")
        target = self.folder.new_name(name)
        async with self.locks.hold(source, target):
            self.folder.diagram(relative)  # still there, and the target still free, once both are held
            self.folder.new_name(name)
            try:
                source.rename(target)
            except OSError as exc:
                raise write_failure(target.name, exc) from None
        return answer(PathAnswer(path=self.folder.relative(target)))

    async def delete(self, request: Request) -> Response:
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            raise FolderError(415, "send JSON with Content-Type: application/json")
        relative = request.path_params["path"]
        path = self.folder.diagram(relative)
        async with self.locks.hold(path):
            self.folder.diagram(relative).unlink()
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


def _renamed(text: str, name: str) -> str:
    """A copy's text with its `diagram:` name changed to the copy's (the smallest edit); as it was when the file
    cannot be edited (not YAML: the copy is repaired like the original)."""
    data, unread = read_for_page(text, Path("copy.yaml"))
    if unread or "diagram" not in data:
        return text
    try:
        return apply_edit(text, {**data, "diagram": name})
    except EditError:
        return text


def _as_yaml(diagram: dict[str, Any]) -> str:
    """The draft as YAML text for the loader: JSON is YAML, and orjson writes it a hundred times faster than a
    YAML dumper. (Lines would all be 1, which is why a draft's problems go without lines.)"""
    try:
        return orjson.dumps(diagram).decode()
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise FolderError(422, f"the diagram cannot be written: {exc}") from exc


def _unchecked(path: Path, data: Any, seconds: float, registry: BlockRegistry) -> Checked:
    """The answer for a diagram whose check ran past its bound: that, as its one problem."""
    problem = Problem(str(path), None, f"checking this diagram took longer than {seconds:g} s, so it was not waited for",
                      hint="a block type's check or a file the diagram reads is slow; an edit checks it again",
                      code="compile_timeout")
    return Checked(problems=[ProblemAnswer.model_validate(problem_json(problem, with_line=False))],
                   compiled=Compiled.model_validate(studio_document(data, None, {}, registry)), valid=False, registries=[])


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
    compile_timeout: float = 10.0,
) -> Guard:
    """The studio as an ASGI app, guarded; `token` is made per server unless given (tests)."""
    folder = Folder(root, data_roots)
    token = token or new_token()
    studio = Studio(folder, registry, Compilations(compile_timeout), Versions(folder, runs_dir.resolve() / ".versions"))
    runs = RunRoutes(folder, runs_dir.resolve(), registry, services, allow_online=allow_online)
    durable = DurableRoutes(runs)
    evals = EvalRoutes(folder, runs_dir.resolve())
    knowledge = KnowledgeRoutes(studio)
    source = SourceRoutes(studio, registry)
    navigation = NavigationRoutes(studio, runs, _renamed)
    layouts = LayoutCache()

    facts = format_facts()

    def writes(endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """The one guard of every route that writes a file: under --read-only, refused before anything is read."""
        async def guarded(request: Request) -> Response:
            if read_only:
                raise FolderError(403, "the studio was started with --read-only: it shows and runs diagrams, and "
                                       "writes no file")
            return await endpoint(request)

        return handle(guarded)

    async def session(_: Request) -> Response:
        return answer(Session(read_only=read_only, allow_online=allow_online, root=folder.root.name, token=token,
                              token_header=TOKEN_HEADER))

    async def format_(_: Request) -> Response:
        return answer(facts)

    async def blocks(_: Request) -> Response:
        return answer(palette(registry))

    async def diagrams(_: Request) -> Response:
        paths = await asyncio.to_thread(folder.diagrams)
        return answer(list(await asyncio.gather(*(studio.summary(path.resolve()) for path in paths))))

    async def scenarios(_: Request) -> Response:
        return answer([PathAnswer(path=folder.relative(path)) for path in await asyncio.to_thread(folder.scenarios)])

    routes: list[BaseRoute] = [
        Route("/", _index(token)),
        Route("/api/session", session),
        Route("/api/format", format_),
        Route("/api/blocks", blocks),
        Route("/api/diagrams", diagrams, methods=["GET"]),
        Route("/api/diagrams", writes(studio.create), methods=["POST"]),
        Route("/api/scenarios", scenarios, methods=["GET"]),
        Route("/api/validate", handle(studio.validate), methods=["POST"]),
        Route("/api/parse", handle(source.parse), methods=["POST"]),
        Route("/api/registries", handle(source.registries), methods=["GET"]),
        Route("/api/schema", handle(source.schema), methods=["GET"]),
        Route("/api/layouts/{key}", handle(layouts.get), methods=["GET"]),
        Route("/api/layouts/{key}", handle(layouts.put), methods=["PUT"]),
        Route("/api/diagrams/{path:path}/source", handle(source.source), methods=["GET"]),
        Route("/api/diagrams/{path:path}/source", writes(source.save), methods=["PUT"]),
        Route("/api/diagrams/{path:path}/preview", handle(source.preview), methods=["POST"]),
        Route("/api/diagrams/{path:path}/versions", handle(studio.versions.list_route), methods=["GET"]),
        Route("/api/diagrams/{path:path}/versions/{version}", handle(studio.versions.text_route), methods=["GET"]),
        Route("/api/diagrams/{path:path}/runs", handle(runs.listing), methods=["GET"]),
        Route("/api/diagrams/{path:path}/runs", handle(runs.start), methods=["POST"]),
        Route("/api/diagrams/{path:path}/evals", handle(evals.listing), methods=["GET"]),
        Route("/api/diagrams/{path:path}/evals/{eval_id}", handle(evals.get), methods=["GET"]),
        Route("/api/diagrams/{path:path}/knowledge", handle(knowledge.listing), methods=["GET"]),
        Route("/api/diagrams/{path:path}/knowledge/{name}/search", handle(knowledge.search), methods=["POST"]),
        Route("/api/diagrams/{path:path}/knowledge/{name}/index", writes(knowledge.index), methods=["POST"]),
        Route("/api/diagrams/{path:path}/chat", handle(durable.chat), methods=["POST"]),
        *navigation.routes(writes),
        *runs.pins.routes(handle, writes),
        *PublishRoutes(folder, registry).routes(handle, writes),
        Route("/api/diagrams/{path:path}/hash", handle(studio.hash), methods=["GET"]),
        Route("/api/diagrams/{path:path}/csv", handle(studio.csv), methods=["GET"]),
        Route("/api/diagrams/{path:path}/rename", writes(studio.rename), methods=["POST"]),
        Route("/api/diagrams/{path:path}", handle(studio.get), methods=["GET"]),
        Route("/api/diagrams/{path:path}", writes(studio.put), methods=["PUT"]),
        Route("/api/diagrams/{path:path}", writes(studio.delete), methods=["DELETE"]),
        Route("/api/runs/{run_id}", handle(runs.get), methods=["GET"]),
        Route("/api/runs/{run_id}/scenario", writes(runs.save_scenario), methods=["POST"]),
        Route("/api/runs/{run_id}/resume", handle(durable.resume), methods=["POST"]),
        Route("/api/runs/{run_id}/replay", handle(durable.replay), methods=["POST"]),
        Route("/api/sessions/{session}", handle(durable.session), methods=["GET"]),
        Route("/api/scenarios/run", handle(runs.run_scenarios), methods=["POST"]),
    ]
    if (STUDIO_BUILD / "assets").is_dir():
        routes.append(Mount("/ui", StaticFiles(directory=STUDIO_BUILD), name="ui"))
    app = Starlette(routes=routes)
    app.state.tasks = runs.tasks
    return Guard(app, allowed_hosts(host, port, extra_hosts), token)
