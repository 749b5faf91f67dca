"""The YAML source beside the canvas: a file's text, a typed text read and checked, the text a save would write, a
text saved as typed, the registries of the folder and the diagram format's JSON Schema.

The page never parses YAML itself: what the YAML pane shows of a text (its data, its problems with lines and
columns, where each block is written) comes from the run's reader (engine.format.yamlfile) and the same
compilation `diagrama validate` runs (Studio.document). Canvas → pane goes through the save's own writer
(engine.web.yaml_edit.apply_edit), so the pane shows exactly the change a save will make.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.compile.block import BlockRegistry
from engine.errors import DiagramInvalid
from engine.web.files import Folder, FolderError
from engine.web.http import answer, json_body
from engine.web.models import (
    BlockLines,
    Checked,
    Compiled,
    DiagramSchemaAnswer,
    Parsed,
    Preview,
    RegistryFile,
    Saved,
    SourceText,
)
from engine.web.view import studio_document
from engine.web.yaml_edit import MAX_TEXT_BYTES, EditError, apply_edit, content_hash
from engine.web.yaml_edit.tree import compose

if TYPE_CHECKING:
    from engine.web.app import Studio

__all__ = ["SourceRoutes", "block_lines"]


def block_lines(text: str) -> dict[str, BlockLines]:
    """Each block's first and last line in `text`, by id (from the same libyaml parse the reader makes); empty
    when the text is not YAML or its blocks are not a list of mappings with ids."""
    try:
        root = compose(text)
    except EditError:
        return {}
    blocks = _value(root, "blocks")
    if not isinstance(blocks, SequenceNode):
        return {}
    found: dict[str, BlockLines] = {}
    for item in blocks.value:
        ident = _value(item, "id")
        if not isinstance(ident, ScalarNode) or ident.value in found:
            continue
        found[ident.value] = BlockLines(first=item.start_mark.line + 1, last=max(_last_line(item), item.start_mark.line + 1))
    return found


def _last_line(node: Node) -> int:
    """The last line of a node's own text: libyaml ends a block-style collection where what follows it starts, so
    that is its last value's last line."""
    if isinstance(node, MappingNode | SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _last_line(last[1] if isinstance(node, MappingNode) else last)
    end = node.end_mark
    return int(end.line + 1 if end.column > 0 else end.line)


def _value(node: Node | None, key: str) -> Node | None:
    if not isinstance(node, MappingNode):
        return None
    for name, value in node.value:
        if isinstance(name, ScalarNode) and name.value == key:
            return value
    return None


def _text(payload: dict[str, Any], key: str = "text") -> str:
    text = payload.get(key)
    if not isinstance(text, str):
        raise FolderError(422, f"send {{\"{key}\": the file's text}}")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise FolderError(413, "the text is larger than the studio edits")
    return text


class SourceRoutes:
    """The YAML pane's endpoints over the studio's diagram routes (their folder, locks and recent texts)."""

    def __init__(self, studio: Studio, registry: BlockRegistry) -> None:
        self.studio = studio
        self.folder: Folder = studio.folder
        self.registry = registry
        self._schema: dict[str, Any] | None = None

    async def source(self, request: Request) -> Response:
        """The file's text now, or the text it had at `?hash=` (a conflict's base) while the studio remembers it."""
        path = self.folder.diagram(request.path_params["path"])
        wanted = request.query_params.get("hash")
        if wanted:
            text = self.studio.texts.get(wanted)
            if text is None:
                raise FolderError(404, "the studio no longer remembers that version of the file")
        else:
            text = self.folder.read(path)
        digest = self.studio.texts.remember(text)
        return answer(SourceText(path=self.folder.relative(path), hash=digest, text=text, blocks=block_lines(text)))

    async def parse(self, request: Request) -> Response:
        """A text typed in the pane, read and checked as the file at `path` would be, problems with their lines."""
        from engine.web.app import read_for_page  # the page's reading of a file, shared with GET

        payload = await json_body(request)
        text = _text(payload)
        relative = payload.get("path")
        path = self.folder.inside(relative) if isinstance(relative, str) else None
        path = path if path is not None else self.folder.root / "draft.yaml"
        check = payload.get("check", True) is not False
        data, unread = read_for_page(text, path)
        if unread:
            checked = self.studio.unreadable(path, unread)
        elif check:
            checked = await self.studio.checked(path, text, data)
        else:  # the reading alone, for the canvas to follow the typing at once; the check comes with the next call
            checked = Checked(problems=[], compiled=Compiled.model_validate(studio_document(data, None, {}, self.registry)),
                              valid=False, registries=[])
        blocks = data.get("blocks")
        drawable = isinstance(blocks, list) and all(isinstance(block, dict) for block in blocks)
        return answer(Parsed(diagram=data if drawable else None, blocks=block_lines(text), checked=check or bool(unread),
                             **dict(checked)))

    async def preview(self, request: Request) -> Response:
        """The text a save of `diagram` over the file as it was at `base_hash` would write (or over `text`, the pane's
        own text with what was typed in it); nothing is written."""
        path = self.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        base, diagram = payload.get("base_hash"), payload.get("diagram")
        if not isinstance(base, str) or not isinstance(diagram, dict):
            raise FolderError(422, "send {\"base_hash\": the hash you loaded, \"diagram\": the diagram as JSON}")
        current = _text(payload) if "text" in payload else self.studio.texts.get(base)
        if current is None:
            current = self.folder.read(path)
            if content_hash(current) != base:
                raise FolderError(409, "the studio no longer remembers the file you loaded: reload it")
        try:
            text = await run_in_threadpool(apply_edit, current, diagram)
        except EditError as exc:
            raise FolderError(422, str(exc)) from exc
        return answer(Preview(text=text, blocks=block_lines(text)))

    async def save(self, request: Request) -> Response:
        """The pane's text written as typed (comments and all) when the file is still the one loaded; a text that is
        not a readable diagram is written too (the file is the user's), and its problems come back."""
        from engine.web.app import read_for_page

        path = self.folder.diagram(request.path_params["path"])
        payload = await json_body(request)
        base = payload.get("base_hash")
        text = _text(payload)
        if not isinstance(base, str):
            raise FolderError(422, "send {\"base_hash\": the hash you loaded, \"text\": the file's new text}")
        async with self.studio.locks.hold(path):
            current = self.folder.read(path)
            if self.studio.texts.remember(current) != base:
                return self.studio.conflict(base, current)
            if text != current:
                self.folder.write(path, text)
                self.studio.versions.saved(path, current, text)
        digest = self.studio.texts.remember(text)
        data, unread = read_for_page(text, path)
        checked = self.studio.unreadable(path, unread) if unread else await self.studio.checked(path, text, data)
        return answer(Saved(hash=digest, **dict(checked)))

    async def registries(self, _: Request) -> Response:
        """The folder's tool registry files (at any depth), with their names and groups."""
        return answer(await run_in_threadpool(self._registry_files))

    def _registry_files(self) -> list[RegistryFile]:
        from engine.format.yamlfile import read_yaml_text

        found = []
        for path in self.folder.registries():
            try:
                data, _ = read_yaml_text(self.folder.read(path), str(path))
            except (DiagramInvalid, FolderError, OSError, RecursionError):  # listed by its name alone
                data = {}
            data = data if isinstance(data, dict) else {}
            groups = data.get("groups")
            found.append(RegistryFile(
                path=self.folder.relative(path), registry=str(data.get("registry", path.stem)),
                groups={str(k): str(v) for k, v in groups.items()} if isinstance(groups, dict) else {}))
        return found

    async def schema(self, _: Request) -> Response:
        if self._schema is None:
            from engine.compile.schema import diagram_schema

            self._schema = diagram_schema(self.registry)
        return answer(DiagramSchemaAnswer.model_validate({"schema": self._schema}))

