"""Version history of the diagrams the studio saves: each text it wrote (and the text a save replaced), per file,
listed newest first and readable again so the page can show what changed and restore an older one.

Versions live in the run store's folder (`<runs>/.versions/<file>/`), not beside the diagrams: the served folder
holds only what its owner wrote. A version is the file's whole text, named `<ns since the epoch>-<hash>.yaml`;
the same text twice in a row is kept once, and the oldest go past `KEPT` per file. A version that cannot be kept
(a full disk, a read-only store) never fails the save that made it: history is a convenience, the file is the
truth. Only texts the studio itself saw are kept; an edit made outside it shows up as the text a later studio save
replaced.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engine.web.files import Folder, FolderError
from engine.web.http import answer
from engine.web.models import Version, VersionText
from engine.web.yaml_edit import content_hash

__all__ = ["KEPT", "Versions"]

KEPT = 50
_NAME = re.compile(r"^(\d{1,20})-([0-9a-f]{8,64})\.yaml$")


class Versions:
    """The saved versions of each diagram of `folder`, kept under `store`."""

    def __init__(self, folder: Folder, store: Path, kept: int = KEPT) -> None:
        self.folder = folder
        self.store = store
        self.kept = kept
        self._lock = threading.Lock()  # saves of two files may record at once; names come from one clock

    def _dir(self, relative: str) -> Path:
        # one flat folder name per file: a path cannot climb out of the store, and `a/b.yaml` is not `a_b.yaml`
        return self.store / quote(relative, safe="")

    def saved(self, path: Path, before: str | None, after: str) -> None:
        """A save of `path` replaced `before` (None: it is a new file) with `after`: both are kept as versions."""
        relative = self.folder.relative(path)
        try:
            with self._lock:
                if before is not None:
                    self._keep(relative, before)
                self._keep(relative, after)
        except OSError:
            pass  # see the module's docstring: history never fails a save

    def _keep(self, relative: str, text: str) -> None:
        folder = self._dir(relative)
        digest = content_hash(text)
        listed = self._names(folder)
        if listed and listed[0][1] == digest:
            return
        folder.mkdir(parents=True, exist_ok=True)
        stamp = max(time.time_ns(), listed[0][0] + 1 if listed else 0)  # strictly after the newest, whatever the clock
        (folder / f"{stamp}-{digest}.yaml").write_text(text, encoding="utf-8")
        for _, _, old in listed[self.kept - 1:]:
            old.unlink(missing_ok=True)

    @staticmethod
    def _names(folder: Path) -> list[tuple[int, str, Path]]:
        """(stamp, hash, file) of each version in `folder`, newest first."""
        if not folder.is_dir():
            return []
        found = []
        for entry in folder.iterdir():
            match = _NAME.match(entry.name)
            if match:
                found.append((int(match.group(1)), match.group(2), entry))
        return sorted(found, reverse=True)

    def listing(self, relative: str) -> list[Version]:
        versions = []
        for stamp, digest, file in self._names(self._dir(relative)):
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            versions.append(Version(id=f"{stamp}-{digest}", saved=stamp / 1e9, hash=digest,
                                    lines=text.count("\n") + (not text.endswith("\n") and text != "")))
        return versions

    def text(self, relative: str, version: str) -> str:
        if not _NAME.match(f"{version}.yaml"):
            raise FolderError(404, "no such version")
        file = self._dir(relative) / f"{version}.yaml"
        try:
            return file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            raise FolderError(404, "the studio keeps no such version of the file") from None

    # -- routes ------------------------------------------------------------------------------------------------------

    async def list_route(self, request: Request) -> Response:
        """`GET /api/diagrams/{path}/versions`: the file's kept versions, newest first."""
        path = self.folder.diagram(request.path_params["path"])
        return answer(await run_in_threadpool(self.listing, self.folder.relative(path)))

    async def text_route(self, request: Request) -> Response:
        """`GET /api/diagrams/{path}/versions/{version}`: one version's text."""
        relative = self.folder.relative(self.folder.diagram(request.path_params["path"]))
        version = request.path_params["version"]
        text = await run_in_threadpool(self.text, relative, version)
        return answer(VersionText(id=version, hash=content_hash(text), text=text))
