"""`diagrama index DIAGRAM|REGISTRY`: build or refresh the knowledge bases' indexes a diagram or registry file declares.

Console output only (a line per base; a progress bar on stderr for a large folder); reading, chunking,
embedding and storing are engine.tools.knowledge's. `diagrama run` uses `indexed` to build what is missing
with the same bar before the run starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli import PATH, blocks_registry, console, fail

if TYPE_CHECKING:
    from engine.tools.knowledge.index import IndexReport, KnowledgeBase

_BAR_FROM = 20
"""Files a base holds before its refresh shows a bar: a small folder is done before a bar could be read."""


class _Bar:
    """rich's progress bar on stderr, as `diagrama batch` draws it; shown only for a large folder on a terminal."""

    def __init__(self) -> None:
        self.bar: Any = None

    def start(self, name: str, total: int) -> None:
        err = console(stderr=True)
        if total < _BAR_FROM or not err.is_terminal:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn(f"[bold]index {name}"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
                            TimeRemainingColumn(), console=err, transient=True)
        self.bar.start()
        self.task = self.bar.add_task(name, total=total)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def report_line(report: IndexReport, where: str) -> str:
    """`policies: 5 files (2 added, 1 changed, 0 removed, 2 unchanged) · 14 chunks (6 embedded now) · 0.21 s → …`"""
    line = (f"{report.name}: {report.files} files ({report.added} added, {report.changed} changed, {report.removed} "
            f"removed, {report.unchanged} unchanged) · {report.chunks} chunks ({report.embedded} embedded now) · "
            f"{report.seconds:.2f} s → {where}")
    for source, why in report.failed:
        line += f"\n  not read: {source}: {why}"
    return line


def indexed(bases: dict[str, KnowledgeBase]) -> None:
    """Make ready the bases a run will search, with the bar for a large folder (a run's first retrieval would
    otherwise build them silently)."""
    for base in bases.values():
        if not base.ready:
            base.loaded(_Bar())


def _bases(target: Path, data_roots: tuple[Path, ...]) -> dict[str, KnowledgeBase]:
    """The bases of a diagram (its own and its registries'), or of a registry file; exit 2 with the problems."""
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramaError, DiagramInvalid, Problem
    from engine.format.paths import DataFolder
    from engine.format.yamlfile import read_yaml

    try:
        data, lines = read_yaml(target)
        if isinstance(data, dict) and "diagram" in data:
            return load_diagram(target, blocks_registry(), data_roots=data_roots).knowledge
        from engine.tools.knowledge.bases import declared_bases

        found: dict[str, KnowledgeBase] = {}
        problems: list[Problem] = []
        raw = data.get("knowledge") if isinstance(data, dict) else None
        declared_bases(raw, target, lines, DataFolder(target.parent, data_roots), found, problems, report_shape=True)
        if problems:
            raise DiagramInvalid(problems)
        return found
    except DiagramaError as exc:
        raise fail(exc) from None


@click.command()
@click.argument("target", type=PATH)
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides the file's own that its knowledge folders may lie in (repeatable)")
def index(target: Path, data_root: tuple[Path, ...]) -> None:
    """Build or refresh the knowledge indexes of a diagram or registry file; only changed files are read again."""
    from engine.tools.knowledge.store import index_url

    bases = _bases(target, data_root)
    if not bases:
        console(stderr=True).print(f"{target} declares no knowledge bases (knowledge: {{name: {{folder: …}}}})",
                                   markup=False)
        raise click.exceptions.Exit(2)
    for base in bases.values():
        report = base.refresh(_Bar())
        url, _ = index_url(base.folder, base.environ)
        where = url.removeprefix("sqlite:///") if url.startswith("sqlite") else "the run store's database"
        click.echo(report_line(report, _shown(where)))


def _shown(where: str) -> str:
    try:
        return str(Path(where).relative_to(Path.cwd()))
    except ValueError:
        return where
