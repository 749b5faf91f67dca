"""Published versions of a diagram: `diagrama publish` pins the diagram and every file its load reads as a numbered
version beside it, and `diagrama api` serves the newest one (the live version) until the next publish or rollback.

A version is a folder, `<diagram's folder>/.diagrama/versions/<stem>/<N>/`: the files copied with their paths relative
to the diagram's folder (the diagram, its Subdiagram children, tool registries and their embedding caches, knowledge
folders' documents, `{csv: …}` tables, `response_schema` files: whatever a DataFolder resolved while it loaded), plus
`manifest.json` (number, note, author, time, each file's SHA-256, the handler and Function modules' hashes). Python
code is not copied: a process imports a module once, whichever version names it, so each top-level folder and `.py`
file of the diagram's folder that holds no pinned file is a relative symlink to the live one (handler packages, an
MCP server's script), and the modules' hashes say when the code changed since publishing (`code_changes`). A file
unchanged since the previous version is hard-linked to it, so an unchanged knowledge folder costs its space once.
Knowledge indexes are not copied: a version indexes its own copy on first use. A rollback is a new version holding
the files of the one it rolls back to. Nothing here runs a diagram.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.compile.loader import load_diagram
from engine.errors import DiagramInvalid, Problem, UsageError
from engine.format.paths import recorded_paths

if TYPE_CHECKING:
    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram

__all__ = ["MANIFEST", "VERSIONS", "Version", "code_changes", "draft_matches", "live_version", "publish",
           "published_diagram", "published_number", "robot_folder", "rollback", "versions"]

VERSIONS = Path(".diagrama") / "versions"
"""Where a folder's published versions live, under the diagrams' own folder."""
MANIFEST = "manifest.json"
_NOT_PINNED = {"__pycache__", "node_modules"}
_INDEX_PREFIX = ".diagrama-index.sqlite"  # a knowledge index (engine.tools.knowledge.store): a cache, rebuilt per copy


@dataclass(frozen=True)
class Version:
    """One published version of a diagram: its folder and what its manifest says."""

    number: int
    folder: Path
    diagram_file: str
    note: str = ""
    author: str = ""
    time: float = 0.0
    rollback_of: int | None = None
    files: dict[str, str] = field(default_factory=dict)
    """Path relative to the diagram's folder → SHA-256 of each pinned file."""
    modules: dict[str, str] = field(default_factory=dict)
    """Handler and Function modules' files (relative to the diagram's folder, or absolute) → SHA-256 when published."""

    @property
    def diagram(self) -> Path:
        """The pinned diagram file, loaded as any diagram is: its paths resolve inside the version's folder."""
        return self.folder / self.diagram_file

    def row(self) -> dict[str, Any]:
        """The version as JSON (`diagrama versions --json`, the studio)."""
        return {"number": self.number, "note": self.note, "author": self.author, "time": self.time,
                "rollback_of": self.rollback_of, "files": len(self.files)}


def _versions_of(diagram: Path) -> Path:
    return diagram.parent / VERSIONS / diagram.stem


def _digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def _read(folder: Path) -> Version | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return Version(int(data["number"]), folder, str(data["diagram"]), str(data.get("note") or ""),
                       str(data.get("author") or ""), float(data.get("time") or 0.0), data.get("rollback_of"),
                       dict(data.get("files") or {}), dict(data.get("modules") or {}))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a half-written or hand-damaged version is no version


def versions(diagram: Path) -> list[Version]:
    """The diagram's published versions, oldest first."""
    where = _versions_of(diagram)
    if not where.is_dir():
        return []
    found = [_read(entry) for entry in where.iterdir() if entry.name.isdigit() and entry.is_dir()]
    return sorted((version for version in found if version is not None), key=lambda version: version.number)


def live_version(diagram: Path) -> Version | None:
    """The version `diagrama api` serves: the newest (a rollback is a newer version); None when never published."""
    found = versions(diagram)
    return found[-1] if found else None


def robot_folder(path: Path) -> Path:
    """The folder whose robot a (resolved) diagram file is: its own folder, or the folder a published version of it
    lies under (`<folder>/.diagrama/versions/<stem>/<N>/<stem>.yaml`)."""
    parts = path.parts
    if len(parts) >= 6 and parts[-2].isdigit() and parts[-3] == path.stem and parts[-5:-3] == VERSIONS.parts:
        return Path(*parts[:-5])
    return path.parent


def published_number(path: Path) -> int | None:
    """The version number a diagram file belongs to (None: a draft, the file as it is)."""
    return int(path.parts[-2]) if robot_folder(path) != path.parent else None


def published_diagram(diagram: Path, which: str) -> tuple[Path, str] | None:
    """`published` (the live version) or `vN` as the version's pinned diagram file and how to name it ("published v3");
    None when `which` is neither form, or `vN` names no version (a git tag, then); UsageError for `published` when
    the diagram was never published."""
    found = versions(diagram)
    if which == "published":
        if not found:
            raise UsageError(f"--against published: {diagram.name} was never published (diagrama publish {diagram})")
        return found[-1].diagram, f"published v{found[-1].number}"
    wanted = which[1:] if which.startswith("v") else ""
    chosen = next((version for version in found if wanted.isdigit() and version.number == int(wanted)), None)
    return (chosen.diagram, f"published v{chosen.number}") if chosen is not None else None


def draft_matches(diagram: Path, version: Version) -> bool:
    """Whether the diagram's files as they are now equal those `version` pinned (the studio: "published v3")."""
    base = diagram.parent
    for relative, digest in version.files.items():
        try:
            if _digest(base / relative) != digest:
                return False
        except OSError:
            return False
    return True


def code_changes(version: Version) -> list[str]:
    """The handler and Function module files whose content changed (or went) since `version` was published."""
    base = robot_folder(version.diagram)
    changed = []
    for name, digest in version.modules.items():
        try:
            now = _digest(base / name)
        except OSError:
            now = ""
        if now != digest:
            changed.append(name)
    return changed


# One publish: load (refusing a diagram with errors), collect what the load read, copy it into a fresh folder beside
# the others, link the rest, write the manifest, check the copy loads on its own, then rename it to its number.
def publish(diagram: Path, registry: BlockRegistry, *, note: str = "", author: str | None = None) -> Version:
    """Pin `diagram` and every file it loads as its next version; DiagramInvalid (nothing published) when it has
    errors, or when its copy would not load on its own."""
    diagram = diagram.absolute()
    with recorded_paths() as read:
        loaded = load_diagram(diagram, registry)
    base = diagram.parent.resolve()
    pinned = _pinned_files(read | {diagram.resolve()}, base)
    modules = _module_files(loaded, pinned, base)
    return _write(diagram, registry, pinned, modules, note=note, author=author, rollback_of=None)


def rollback(diagram: Path, number: int, registry: BlockRegistry, *, author: str | None = None) -> Version:
    """Make version `number` live again: a new version holding its files (UsageError when there is no such version)."""
    diagram = diagram.absolute()
    found = {version.number: version for version in versions(diagram)}
    if number not in found:
        listed = ", ".join(f"v{known}" for known in found) or "none: publish it first"
        raise UsageError(f"{diagram.name} has no version {number} (versions: {listed})")
    old = found[number]
    pinned = {old.folder / relative: relative for relative in old.files}
    return _write(diagram, registry, pinned, dict(old.modules), note=f"rollback to v{number}", author=author,
                  rollback_of=number)


def _pinned_files(read: Iterable[Path], base: Path) -> dict[Path, str]:
    """Each file to copy (its path now → its path relative to the diagram's folder): the files read, the files of
    the folders read (a registry folder, a knowledge folder), and a registry's embedding cache beside it."""
    pinned: dict[Path, str] = {}

    def add(path: Path) -> None:
        if path.is_file() and path.is_relative_to(base) and VERSIONS.parts[0] not in path.relative_to(base).parts:
            pinned[path] = path.relative_to(base).as_posix()

    for path in read:
        if path.is_dir():
            for root, folders, files in os.walk(path):
                folders[:] = [name for name in folders if name not in _NOT_PINNED and name != VERSIONS.parts[0]]
                for name in files:
                    if not name.startswith(_INDEX_PREFIX):
                        add(Path(root) / name)
        else:
            add(path)
            if path.suffix in (".yaml", ".yml"):
                add(path.with_suffix(".embeddings.json"))
    return pinned


def _module_files(loaded: Diagram, pinned: dict[Path, str], base: Path) -> dict[str, str]:
    """The `.py` files of the modules the diagram's and its registries' `allowed_modules` name → SHA-256."""
    import yaml

    names: set[str] = set(loaded.spec.allowed_modules)
    for path in pinned:
        if path.suffix in (".yaml", ".yml"):
            with contextlib.suppress(OSError, yaml.YAMLError):
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
                listed = data.get("allowed_modules") if isinstance(data, dict) else None
                names.update(name for name in listed or [] if isinstance(name, str))
    found: dict[str, str] = {}
    for name in sorted(names):
        for file in _module_sources(name, base):
            key = file.relative_to(base).as_posix() if file.is_relative_to(base) else str(file)
            found[key] = _digest(file)
    return found


def _module_sources(name: str, base: Path) -> list[Path]:
    """A module's source files: the diagram's folder first (a package: every `.py` under it), else where Python
    would import it from; none when it cannot be found."""
    relative = Path(*name.split("."))
    for candidate in (base / relative.with_suffix(".py"), base / relative):
        if candidate.is_file():
            return [candidate.resolve()]
        if candidate.is_dir():
            return sorted(path.resolve() for path in candidate.rglob("*.py") if "__pycache__" not in path.parts)
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    origin = spec.origin if spec is not None else None
    return [Path(origin).resolve()] if origin and origin.endswith(".py") and Path(origin).is_file() else []


def _write(diagram: Path, registry: BlockRegistry, pinned: dict[Path, str], modules: dict[str, str], *, note: str,
           author: str | None, rollback_of: int | None) -> Version:
    where = _versions_of(diagram)
    where.mkdir(parents=True, exist_ok=True)
    previous = live_version(diagram)
    # Written beside the numbered folders (the same depth: its links resolve alike), renamed once it loads.
    draft = where / f".new-{uuid.uuid4().hex[:12]}"
    draft.mkdir()
    try:
        files: dict[str, str] = {}
        for source, relative in sorted(pinned.items(), key=lambda item: item[1]):
            files[relative] = _copy(source, draft / relative, previous, relative)
        _link_the_rest(diagram.parent, draft, set(files))
        manifest = {"number": 0, "diagram": diagram.name, "note": note, "author": author or _author(),
                    "time": round(time.time(), 3), "rollback_of": rollback_of, "files": files, "modules": modules}
        try:
            load_diagram(draft / diagram.name, registry)
        except DiagramInvalid as exc:
            raise DiagramInvalid([*exc.problems, Problem(str(diagram), None, "its published copy does not load on "
                                  "its own (a file it reads at run time, such as a templated Subdiagram path, is "
                                  "not pinned)", code="publish_incomplete")]) from None
        return _number(where, draft, manifest)
    finally:
        if draft.exists():
            shutil.rmtree(draft, ignore_errors=True)


def _number(where: Path, draft: Path, manifest: dict[str, Any]) -> Version:
    """Give the draft the next free number (two publishing at once each get their own)."""
    for _ in range(100):
        taken = [int(entry.name) for entry in where.iterdir() if entry.name.isdigit()]
        number = max(taken, default=0) + 1
        manifest["number"] = number
        (draft / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        try:
            draft.rename(where / str(number))  # refused over a folder that exists and holds files
        except OSError:
            continue
        found = _read(where / str(number))
        assert found is not None  # just written
        return found
    raise UsageError(f"could not number a new version in {where} (too many publishing at once)")


def _copy(source: Path, target: Path, previous: Version | None, relative: str) -> str:
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = _digest(source)
    if previous is not None and previous.files.get(relative) == digest:
        try:
            os.link(previous.folder / relative, target)  # versions are never written again: sharing is safe
            return digest
        except OSError:
            pass  # another file system, or no hard links: a copy
    shutil.copy2(source, target)
    return digest


def _link_the_rest(base: Path, draft: Path, pinned: set[str]) -> None:
    """A relative symlink to each top-level folder and `.py` file of `base` that holds no pinned file: code and
    whatever a run reaches outside the loader (an MCP server's script) stay live, as Python would see them."""
    tops = {relative.split("/", 1)[0] for relative in pinned}
    for entry in sorted(base.iterdir()):
        name = entry.name
        if name in tops or name.startswith(".") or name in _NOT_PINNED:
            continue
        if entry.is_dir() or entry.suffix == ".py":
            with contextlib.suppress(OSError):  # a file system without symlinks: that code is found on sys.path or not
                (draft / name).symlink_to(os.path.relpath(entry, draft))


def _author() -> str:
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (OSError, KeyError):
        return ""
