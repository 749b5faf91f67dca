"""The studio's side of publishing (engine.runs.published): a diagram's published versions and whether the file is a
draft of the live one, Publish (refused while the diagram has errors) and Rollback.

`diagrama api` serves a diagram's live version, so a save in the studio changes nothing it answers until Publish.
Publish and Rollback write a version folder beside the diagram, so both are refused under --read-only. The routes'
path is `published`, as `versions` already names the studio's save history (engine.web.versions). Answers' models
are here, beside the routes (engine.web.api_schema joins them into the page's types).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from engine.errors import DiagramInvalid, UsageError
from engine.runs.published import code_changes, draft_matches, publish, rollback, versions
from engine.web.files import Folder, FolderError
from engine.web.http import answer, json_body
from engine.web.models import Answer, AnswerRefused

if TYPE_CHECKING:
    from engine.compile.block import BlockRegistry

__all__ = ["PublishRoutes", "Published", "PublishedVersion"]

Guarded = Callable[[Callable[[Request], Awaitable[Response]]], Callable[[Request], Awaitable[Response]]]

_MAX_NOTE = 2000


class PublishedVersion(Answer):
    """One published version: `time` in seconds since the epoch; `live`: the one `diagrama api` serves."""

    number: int
    note: str
    author: str
    time: float
    rollback_of: int | None
    files: int
    live: bool


class Published(Answer):
    """A diagram's published versions (oldest first) and how the file stands against the live one: `published` when
    it equals it, `draft` when it differs, `never` when there is no version; `code_changes`: handler and Function
    module files changed since the live version was published (served all the same)."""

    state: Literal["never", "draft", "published"]
    live: int | None
    versions: list[PublishedVersion]
    code_changes: list[str]
    published: int | None = None
    """The version a publish or rollback just made (None for the listing)."""


def published(diagram: Path, made: int | None = None) -> Published:
    found = versions(diagram)
    if not found:
        return Published(state="never", live=None, versions=[], code_changes=[], published=made)
    live = found[-1]
    rows = [PublishedVersion(**version.row(), live=version is live) for version in reversed(found)]
    return Published(state="published" if draft_matches(diagram, live) else "draft", live=live.number,
                     versions=rows, code_changes=code_changes(live), published=made)


class PublishRoutes:
    """GET …/published, POST …/publish {note}, POST …/rollback {version}."""

    def __init__(self, folder: Folder, registry: BlockRegistry) -> None:
        self.folder = folder
        self.registry = registry

    def routes(self, handle: Guarded, writes: Guarded) -> list[Route]:
        """The routes, each behind the app's guard (`writes`: refused under --read-only)."""
        at = "/api/diagrams/{path:path}"
        return [Route(f"{at}/published", handle(self.listing), methods=["GET"]),
                Route(f"{at}/publish", writes(self.publish), methods=["POST"]),
                Route(f"{at}/rollback", writes(self.rollback), methods=["POST"])]

    async def listing(self, request: Request) -> Response:
        diagram = self.folder.diagram(request.path_params["path"])
        return answer(await asyncio.to_thread(published, diagram))

    async def publish(self, request: Request) -> Response:
        """Pin the file as it is on disk as the next version; 422 with its problems when it has errors."""
        diagram = self.folder.diagram(request.path_params["path"])
        note = (await json_body(request)).get("note", "")
        if not isinstance(note, str) or len(note) > _MAX_NOTE:
            raise FolderError(422, "note: text of at most 2,000 characters")

        def work() -> Response:
            try:
                made = publish(diagram, self.registry, note=note.strip())
            except DiagramInvalid as exc:
                lines = [_line(problem.line, problem.message) for problem in exc.problems]
                return answer(AnswerRefused(error="the diagram has problems: fix them, save, then publish",
                                            problems=lines), 422)
            return answer(published(diagram, made.number))

        return await asyncio.to_thread(work)

    async def rollback(self, request: Request) -> Response:
        """Make an earlier version live again (a new version with its files); 404 for a version there is not."""
        diagram = self.folder.diagram(request.path_params["path"])
        number = (await json_body(request)).get("version")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise FolderError(422, "send {\"version\": the number of the version to serve again}")

        def work() -> Published:
            try:
                made = rollback(diagram, number, self.registry)
            except UsageError as exc:
                raise FolderError(404, str(exc)) from None
            return published(diagram, made.number)

        return answer(await asyncio.to_thread(work))


def _line(line: int | None, message: str) -> str:
    return f"line {line}: {message}" if line else message
