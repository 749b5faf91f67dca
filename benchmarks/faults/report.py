"""The fault script's table: one row per figure, what was measured, the figure, issue 38's target, met or not
(`info` rows carry no target: what a reader needs to judge the others, such as the client's CPU)."""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
from typing import Any


@dataclasses.dataclass
class Row:
    scenario: str
    measured: str
    figure: str
    target: str = "info"
    met: bool | None = None


@dataclasses.dataclass
class Outcome:
    """A scenario's rows, and its details for --json (run ids, statuses, log lines: what a finding needs)."""

    rows: list[Row] = dataclasses.field(default_factory=list)
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def row(self, scenario: str, measured: str, figure: Any, target: str = "info", met: bool | None = None) -> None:
        self.rows.append(Row(scenario, measured, str(figure), target, met))


def verdict(met: bool | None) -> str:
    return "—" if met is None else "met" if met else "NOT MET"


def table(rows: list[Row]) -> str:
    header = ("scenario", "measured", "figure", "target", "met")
    cells = [header, *((r.scenario, r.measured, r.figure, r.target, verdict(r.met)) for r in rows)]
    widths = [max(len(cell[i]) for cell in cells) for i in range(len(header))]
    lines = ["  ".join(cell[i].ljust(widths[i]) for i in range(len(header))).rstrip() for cell in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2)}


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} s"


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
