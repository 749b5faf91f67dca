"""Where a diagram may read files: its own folder, and the data roots the user allows (`--data-root`).

Every path a diagram names (a `{csv: …}` table, a tool registry) is resolved, symlinks first, and
refused when it leaves those folders. A refusal names the path as written, never the file's content.
Reads nothing; only resolves names. `recorded_paths` collects every path resolved within it (what a load reads:
`diagrama publish` pins those files).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DataFolder", "PathRefused", "recorded_paths", "shown_path"]

_RECORDED: ContextVar[set[Path] | None] = ContextVar("diagrama_recorded_paths", default=None)


@contextlib.contextmanager
def recorded_paths() -> Iterator[set[Path]]:
    """The set of every path a DataFolder resolves (allowed ones, symlinks resolved) while the block runs."""
    found: set[Path] = set()
    token = _RECORDED.set(found)
    try:
        yield found
    finally:
        _RECORDED.reset(token)

_SHOWN = 80


class PathRefused(ValueError):
    """A path a diagram names leaves its folder and the data roots (`leaves`), or cannot be a path at all."""

    def __init__(self, message: str, *, leaves: bool = False) -> None:
        super().__init__(message)
        self.leaves = leaves


def shown_path(written: str) -> str:
    """A path as a message quotes it: cut at 80 characters."""
    return written if len(written) <= _SHOWN else written[: _SHOWN - 1] + "…"


@dataclass(frozen=True, slots=True)
class DataFolder:
    """A diagram's folder and the data roots beside it: the only places the diagram's paths may reach."""

    folder: Path
    roots: tuple[Path, ...] = ()

    def resolve(self, written: str) -> Path:
        """`written` (relative to the folder, or absolute), symlinks resolved; PathRefused when it leaves them."""
        try:
            target = (self.folder / written).resolve()
            allowed = [place.resolve() for place in (self.folder, *self.roots)]
        except (OSError, RuntimeError) as exc:  # a name too long, a symlink loop
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it cannot be resolved"
            raise PathRefused(f"the path '{shown_path(written)}' cannot be used ({reason.lower()})") from None
        except ValueError:  # an embedded NUL
            raise PathRefused(f"the path {shown_path(written)!r} is not a file name") from None
        if not any(target.is_relative_to(place) for place in allowed):
            where = "the diagram's folder" + (" and the data roots" if self.roots else "")
            raise PathRefused(f"the path '{shown_path(written)}' leaves {where}", leaves=True)
        recording = _RECORDED.get()
        if recording is not None:
            recording.add(target)
        return target
