"""The served folder: every path the studio touches is checked to stay inside it.

Paths are resolved (symlinks followed) before the check, so a link inside the folder that
points outside is neither listed nor read. Writes are atomic (temporary file + rename), so an
interrupted save never leaves half a diagram.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from pathlib import Path

__all__ = ["Folder", "FolderError"]

_NAME = re.compile(r"^[\w][\w .-]{0,120}\.ya?ml$")
_MAX_TEXT = 8 * 1024 * 1024


class FolderError(Exception):
    """A path the studio refuses, with the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Folder:
    """Diagrams (`*.yaml`, `*.yml`) directly inside one folder."""

    def __init__(self, root: Path, data_roots: tuple[Path, ...] = ()) -> None:
        self.root = root.resolve()
        self.data_roots = tuple(place.resolve() for place in data_roots)
        """Folders besides a diagram's own that its CSV tables and registries may come from (`serve --data-root`)."""

    def inside(self, relative: str, base: Path | None = None) -> Path | None:
        """The resolved path if it stays inside the folder, else None."""
        if "\x00" in relative or len(relative) > 1024:
            return None
        try:
            candidate = ((base or self.root) / relative).resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        return candidate if candidate.is_relative_to(self.root) else None

    def diagram(self, relative: str) -> Path:
        path = self.inside(relative)
        if path is None or path.suffix not in (".yaml", ".yml") or not path.is_file():
            raise FolderError(404, "not found")
        return path

    def diagrams(self) -> list[Path]:
        found = []
        for path in sorted([*self.root.glob("*.yaml"), *self.root.glob("*.yml")]):
            resolved = self.inside(path.name)
            if resolved is not None and resolved.is_file():
                found.append(path)
        return found

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path.name

    def new_name(self, relative: object) -> Path:
        """A path for a new diagram: a plain file name in the folder, not taken yet."""
        if not isinstance(relative, str) or not _NAME.match(relative) or "/" in relative or "\\" in relative:
            raise FolderError(422, "a diagram name is a plain file name ending in .yaml (letters, digits, '_', '-', '.')")
        path = self.root / relative
        if path.exists() or path.is_symlink():
            raise FolderError(409, f"{relative} already exists")
        return path

    @staticmethod
    def read(path: Path) -> str:
        if path.stat().st_size > _MAX_TEXT:
            raise FolderError(413, "the file is larger than 8 MB")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise FolderError(422, "the file is not UTF-8 text") from None

    @staticmethod
    def write(path: Path, text: str) -> None:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".diagrama-", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
                file.write(text)
            if path.exists():
                os.chmod(temporary, path.stat().st_mode & 0o777)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def csv_preview(self, diagram: Path, relative: str, rows: int = 20) -> dict[str, object]:
        """The first rows of a CSV file a diagram names (relative to the diagram), for the table editor."""
        path = self.inside(relative, diagram.parent)
        if path is None or path.suffix.lower() != ".csv" or not path.is_file():
            raise FolderError(404, "no such CSV file inside the served folder")
        text = self.read(path)
        try:
            dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
        except csv.Error:
            dialect = csv.excel
        reader = csv.reader(io.StringIO(text), dialect)
        try:
            table = list(reader)
        except csv.Error as exc:
            raise FolderError(422, f"{relative}: not readable as CSV ({exc})") from exc
        columns, body = (table[0], table[1:]) if table else ([], [])
        return {"columns": columns, "rows": body[:rows], "total": len(body)}
