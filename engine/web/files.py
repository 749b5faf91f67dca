"""The served folder: every path the studio touches is checked to stay inside it, and to be a diagram.

Paths are resolved (symlinks followed) before the check, so a link inside the folder that
points outside is neither listed nor read. The diagram routes act on diagram files only: a
tool registry, a scenario file or a YAML data file beside them is neither listed as a diagram
nor written through those routes. Writes are atomic (temporary file + rename), so an
interrupted save never leaves half a diagram; a write that fails (a full disk) is a
FolderError naming the file and the cause.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import re
import tempfile
from pathlib import Path
from typing import Literal

__all__ = ["Folder", "FolderError", "file_kind", "os_failure", "write_failure"]

# Matched whole (fullmatch): `$` would also match before a trailing newline. \w is Unicode letters and digits,
# which leaves out control characters and the Unicode line and paragraph separators.
_NAME = re.compile(r"[\w][\w .-]{0,120}\.ya?ml")
_MAX_TEXT = 8 * 1024 * 1024
_SCENARIO_SUFFIXES = (".scenario.yaml", ".scenario.yml")
_EVAL_SUFFIXES = (".eval.yaml", ".eval.yml")
# A key at the start of a line: the top-level keys of a block-style YAML mapping (quoted or not).
_TOP_KEY = re.compile(r"""^["']?([A-Za-z_][\w-]*)["']?[ \t]*:(?=[ \t]|$)""", re.MULTILINE)
_ANY_KEY = re.compile(r"""["']?\b(registry|diagram|blocks)\b["']?[ \t]*:""")
_MAX_LISTED = 1000
_SKIPPED = frozenset({"node_modules", "venv", "runs", "site-packages"})

FileKind = Literal["diagram", "registry", "scenario", "eval", "data"]


def file_kind(name: str, text: str) -> FileKind:
    """What a YAML file of the folder is, from its name and its top-level keys (read without parsing, so a
    diagram with a syntax error is still a diagram to fix): a scenario file (`*.scenario.yaml`), an eval file
    (`*.eval.yaml`, which names its diagram with `diagram:` too), a tool registry (`registry:`), a diagram (`diagram:`
    or `blocks:`, or nothing written yet), or data."""
    if name.endswith(_SCENARIO_SUFFIXES):
        return "scenario"
    if name.endswith(_EVAL_SUFFIXES):
        return "eval"
    keys = set(_TOP_KEY.findall(text))
    if not keys and text.lstrip().startswith("{"):  # a flow-style mapping on one line, JSON-like
        keys = set(_ANY_KEY.findall(text))
    if "registry" in keys:
        return "registry"
    if keys & {"diagram", "blocks"}:
        return "diagram"
    content = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return "diagram" if not content else "data"


_KIND_NAMES = {"registry": "a tool registry", "scenario": "a scenario file", "eval": "an eval file",
               "data": "a data file"}


def os_failure(exc: OSError) -> tuple[int, str]:
    """An operating system's refusal as an HTTP status and words: 507 for a full disk or quota, else 500."""
    reason = (exc.strerror or type(exc).__name__).lower()
    code = errno.errorcode.get(exc.errno or 0)
    return 507 if exc.errno in (errno.ENOSPC, errno.EDQUOT) else 500, f"{reason} ({code})" if code else reason


def write_failure(name: str, exc: OSError) -> FolderError:
    """A failed write as an answer naming the file and the cause (507 for a full disk)."""
    status, cause = os_failure(exc)
    return FolderError(status, f"cannot write {name}: {cause}; the file on disk is unchanged")

def _read_umask() -> int:
    mask = os.umask(0o022)  # the only way to read it sets it: read once, at import, before any thread writes
    os.umask(mask)
    return mask


_UMASK = _read_umask()


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
        """The diagram file at `relative`; 404 for anything else (outside, missing, a registry, a scenario, data)."""
        path = self.inside(relative)
        if path is None or path.suffix not in (".yaml", ".yml") or not path.is_file():
            raise FolderError(404, "not found")
        kind = self.kind(path)
        if kind != "diagram":
            raise FolderError(404, f"{self.relative(path)} is {_KIND_NAMES[kind]}, not a diagram")
        return path

    def kind(self, path: Path) -> FileKind:
        try:
            text = self.read(path)
        except (FolderError, OSError):
            return "diagram"  # unreadable or too large: shown as a diagram that does not load, so it can be deleted
        return file_kind(path.name, text)

    def _yaml_files(self) -> list[Path]:
        """The YAML files of the folder and its subfolders (hidden folders, virtual environments and node_modules
        left out), folders' files after the folder's own, at most a thousand."""
        found: list[Path] = []
        for folder, subfolders, files in os.walk(self.root):
            subfolders[:] = sorted(name for name in subfolders if not name.startswith((".", "__")) and name not in _SKIPPED)
            for name in sorted(files):
                if not name.endswith((".yaml", ".yml")) or name.startswith("."):
                    continue
                path = Path(folder) / name
                resolved = self.inside(path.relative_to(self.root).as_posix())
                if resolved is not None and resolved.is_file():
                    found.append(path)
                if len(found) >= _MAX_LISTED:
                    return found
        return found

    def diagrams(self) -> list[Path]:
        """The diagram files of the folder and its subfolders."""
        return [path for path in self._yaml_files() if self.kind(path) == "diagram"]

    def registries(self) -> list[Path]:
        """The tool registry files of the folder and its subfolders."""
        return [path for path in self._yaml_files() if self.kind(path) == "registry"]

    def scenarios(self) -> list[Path]:
        """The scenario files inside the folder, at any depth (at most a thousand)."""
        found: list[Path] = []
        for suffix in _SCENARIO_SUFFIXES:
            for path in self.root.rglob(f"*{suffix}"):
                if len(found) >= _MAX_LISTED:
                    break
                resolved = self.inside(path.relative_to(self.root).as_posix())
                if resolved is not None and resolved.is_file():
                    found.append(path)
        return sorted(found)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path.name

    def new_name(self, relative: object) -> Path:
        """A path for a new diagram: a plain file name in the folder, not taken yet."""
        if not isinstance(relative, str) or not _NAME.fullmatch(relative) or "/" in relative or "\\" in relative:
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
        """Replace `path` with `text` atomically; FolderError (507 when the disk is full) if it cannot be written."""
        try:
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".diagrama-", suffix=".tmp")
        except OSError as exc:
            raise write_failure(path.name, exc) from None
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as file:
                file.write(text)
            # mkstemp makes the file 0600: a replaced file keeps its mode, a new one gets what the umask allows
            os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_UMASK)
            os.replace(temporary, path)
        except OSError as exc:
            Path(temporary).unlink(missing_ok=True)
            raise write_failure(path.name, exc) from None
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
