"""`diagrama schedules [DIR]`: each robot's schedules (a diagram's `schedules:`) with the next time `diagrama api DIR`
fires each, in the schedule's timezone; a diagram that does not load is named (`diagrama validate` says why)."""

from __future__ import annotations

import datetime as dt
import time
import zoneinfo
from pathlib import Path
from typing import Any

import click
import orjson

from engine.cli import PATH, blocks_registry


def _in(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    return f"in {days}d {hours}h {minutes:02d}m" if days else f"in {hours}h {minutes:02d}m" if hours \
        else f"in {minutes}m {int(seconds % 60):02d}s"


@click.command()
@click.argument("folder", type=PATH, default=Path("diagrams"), required=False)
@click.option("--json", "as_json", is_flag=True, help="one JSON object per schedule, one a line")
def schedules(folder: Path, as_json: bool) -> None:
    """List each robot's schedules with the next time `diagrama api` fires each, in its timezone."""
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramInvalid
    from engine.format.triggers import next_tick

    registry = blocks_registry()
    now = time.time()
    listed = 0
    for path in sorted(folder.glob("*.yaml")):
        if path.name.endswith(".scenario.yaml") or not path.is_file():
            continue
        try:
            diagram = load_diagram(path, registry)
        except DiagramInvalid as exc:
            click.echo(f"{path.stem}: not loaded ({len(exc.problems)} problems; diagrama validate {path})", err=True)
            continue
        for index, schedule in enumerate(diagram.spec.schedules):
            fires = next_tick(schedule, now)
            local = dt.datetime.fromtimestamp(fires, zoneinfo.ZoneInfo(schedule.timezone))
            listed += 1
            if as_json:
                shown: dict[str, Any] = {"robot": path.stem, "schedule": index, "cron": schedule.cron,
                                         "timezone": schedule.timezone, "next": local.isoformat(),
                                         "next_unix": fires, "inputs": schedule.inputs}
                click.echo(orjson.dumps(shown).decode())
            else:
                click.echo(f"{path.stem}  schedule {index}  {schedule.cron!r}  {schedule.timezone}  next "
                           f"{local:%Y-%m-%d %H:%M:%S %Z}  ({_in(fires - now)})")
    if not listed and not as_json:
        click.echo(f"no schedules in {folder} (a diagram's top-level `schedules:`)")
