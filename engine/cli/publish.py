"""`diagrama publish`, `diagrama versions`, `diagrama rollback`: a diagram's published versions, which `diagrama api`
serves (engine.runs.published does the work; this module is argv, console lines and exit codes)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from engine.cli import PATH, blocks_registry, console, fail


@click.command()
@click.argument("diagram", type=PATH)
@click.option("-m", "--message", "note", default="", help="a note kept with the version (what changed)")
def publish(diagram: Path, note: str) -> None:
    """Pin a diagram and every file it loads as its next version, the one `diagrama api` serves."""
    from engine.errors import DiagramaError
    from engine.runs.published import publish as publish_diagram

    try:
        version = publish_diagram(diagram, blocks_registry(), note=note)
    except DiagramaError as exc:
        raise fail(exc) from None
    out = console()
    out.print(f"published {diagram.name} v{version.number}: {len(version.files)} file"
              f"{'s' if len(version.files) != 1 else ''} pinned, {len(version.modules)} module"
              f"{'s' if len(version.modules) != 1 else ''} hashed → {version.folder}", markup=False)


@click.command()
@click.argument("diagram", type=PATH)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per version, oldest first")
def versions(diagram: Path, as_json: bool) -> None:
    """List a diagram's published versions: number, time, author, note, and which is live."""
    from engine.runs.published import code_changes, draft_matches
    from engine.runs.published import versions as listed

    found = listed(diagram)
    out = console()
    if as_json:
        for version in found:
            out.print(json.dumps({**version.row(), "live": version is found[-1]}), markup=False, soft_wrap=True)
        return
    if not found:
        out.print(f"{diagram.name} was never published (`diagrama publish {diagram}`): `diagrama api` serves the file "
                  "as it is", markup=False)
        return
    for version in found:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(version.time))
        live = "  live" if version is found[-1] else ""
        back = f" (rollback to v{version.rollback_of})" if version.rollback_of is not None and not version.note else ""
        out.print(f"v{version.number}  {when}  {version.author or '-'}  {version.note or '-'}{back}{live}", markup=False)
    draft = "the file equals the live version" if draft_matches(diagram, found[-1]) else \
        "the file has changes not published (a draft)"
    out.print(draft, markup=False)
    changed = code_changes(found[-1])
    if changed:
        out.print(f"code changed since v{found[-1].number} was published: {', '.join(changed)}", markup=False)


@click.command()
@click.argument("diagram", type=PATH)
@click.argument("number", type=click.IntRange(min=1))
def rollback(diagram: Path, number: int) -> None:
    """Serve an earlier version again: a new version holding version N's files."""
    from engine.errors import DiagramaError
    from engine.runs.published import rollback as roll_back

    try:
        version = roll_back(diagram, number, blocks_registry())
    except DiagramaError as exc:
        raise fail(exc) from None
    console().print(f"{diagram.name} v{version.number} is live: the files of v{number}", markup=False)
