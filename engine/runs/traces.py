"""Reading runs back: find a trace, list runs, tell a live run from an interrupted one.

`diagrama trace`, `diagrama runs` and `diagrama graph --run` are built on this and on
engine.runs.trace_steps (a trace's events as steps, and the path a run drew); both only read
the JSON Lines traces that engine.runtime.trace writes. A trace without its
`run_finished` is a run still going, or one whose process died (SIGKILL, a crash): the
pid and host in `run_started` tell which, and the second shows as `interrupted`.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from engine.errors import UsageError
from engine.runtime.trace import Event

__all__ = ["INTERRUPTED", "SCENARIO_SUFFIX", "RunSummary", "find_trace", "is_scenario_run", "latest_start", "list_runs",
           "resolved_path", "run_status", "trace_status", "unfinished_runs"]

INTERRUPTED = "interrupted"
"""The status of a run that never finished and whose process is gone."""


def find_trace(reference: str, runs_dir: Path) -> Path:
    """A run id, a run folder, a trace file, or `last` for the newest run."""
    if reference == "last":
        runs = list_runs(runs_dir, limit=1)
        if not runs:
            raise UsageError(f"there are no runs in {runs_dir}")
        return runs[0].trace
    candidate = Path(reference)
    if candidate.is_file():
        return candidate
    if (candidate / "trace.jsonl").is_file():
        return candidate / "trace.jsonl"
    if (runs_dir / reference / "trace.jsonl").is_file():
        return runs_dir / reference / "trace.jsonl"
    raise UsageError(f"no run '{reference}' (looked for a trace file, a run folder, and {runs_dir / reference})")


def _last_event(path: Path) -> dict[str, Any]:
    """The trace's last whole event; a line torn by a crash mid-write is passed over."""
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        end = handle.tell()
        handle.seek(max(0, end - 65536))
        lines = handle.read().splitlines()
    for line in reversed(lines):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            return event
    raise orjson.JSONDecodeError("no whole event at the end of the trace", "", 0)


def trace_status(trace: Path) -> str | None:
    """The status a trace's `run_finished` gives; None while it has none (or cannot be read)."""
    try:
        last = _last_event(trace)
    except (OSError, orjson.JSONDecodeError):
        return None
    return str(last.get("status")) if last.get("event") == Event.RUN_FINISHED else None


SCENARIO_SUFFIX = "-scenario"
"""The end of a scenario run's id: `diagrama runs` lists those runs, marked as such."""


def is_scenario_run(run_id: str) -> bool:
    return run_id.endswith(SCENARIO_SUFFIX)


@functools.cache
def _this_host() -> str:
    return socket.gethostname()


def _process_started(pid: int) -> float | None:
    """When process `pid` began (seconds since the epoch), on Linux; None where that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":  # a zombie: dead, not yet reaped by its parent
            return float("inf")
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _process_gone(pid: Any, host: Any, started: float) -> bool:
    """Whether the process that wrote a run is known to be gone: same host, and no such pid (or a newer one)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or host != _this_host() or os.name != "posix":
        return False  # another machine's run, or an old trace: nothing is known, so nothing is claimed
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process exists
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, as another user
    except OSError:
        return False
    began = _process_started(pid)
    # A pid the system gave to a process that began after the run did is another process.
    return began is not None and began > started + 1.0


process_gone = _process_gone


def latest_start(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The last `run_started` of a run's events (a resumed run has one per process that ran it); else the first
    event."""
    started: dict[str, Any] = next((event for event in reversed(events) if event.get("event") == Event.RUN_STARTED),
                                   events[0] if events else {})
    return started


_STARTED = b'"event":"run_started"'
"""How `run_started` reads in a trace line (a quote inside a value is escaped, so only the key matches)."""


def _latest_start_in(trace: Path, first: dict[str, Any]) -> dict[str, Any]:
    """The trace's last `run_started` line, found from the end (a resumed run's); `first` when there is no other."""
    import mmap

    try:
        with trace.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            at = data.rfind(_STARTED)
            if at <= 0:
                return first
            begins = data.rfind(b"\n", 0, at) + 1
            ends = data.find(b"\n", at)
            found = orjson.loads(data[begins: ends if ends >= 0 else len(data)])
    except (OSError, ValueError, orjson.JSONDecodeError):
        return first
    return found if isinstance(found, dict) else first
"""Public name for the run store's statuses (engine.runs.checkpoints)."""


def run_status(first: Mapping[str, Any], last: Mapping[str, Any]) -> str:
    """A run's status from its trace's latest `run_started` (`latest_start`) and last event: the finished status,
    `running`, or `interrupted`.

    A resumed run appends to its trace: each process that ran it wrote a `run_started` with its pid, so only the
    latest one says whether the run is still going (the first names a process that is gone).
    """
    if last.get("event") == Event.RUN_FINISHED:
        return str(last.get("status"))
    if first.get("event") == Event.RUN_STARTED and _process_gone(first.get("pid"), first.get("host"),
                                                                  float(first.get("timestamp") or 0)):
        return INTERRUPTED
    return "running"


@dataclass
class RunSummary:
    run_id: str
    diagram: str
    path: str
    status: str
    started: float
    duration_ms: float | None
    steps: int | None
    trace: Path


def list_runs(runs_dir: Path, limit: int = 20, *, diagram: Path | None = None) -> list[RunSummary]:
    """The newest runs first, read from each trace's first and last line; with `diagram`, only its runs.

    A trace written with a relative path (by an older version) is matched from the current
    folder and from the runs folder's parent, where `./runs` puts it.
    """
    if not runs_dir.is_dir():
        return []
    folders = sorted((p for p in runs_dir.iterdir() if (p / "trace.jsonl").is_file()), key=lambda p: p.name, reverse=True)
    wanted = diagram.resolve() if diagram is not None else None
    bases = (Path.cwd(), runs_dir.resolve().parent)
    summaries: list[RunSummary] = []
    for folder in folders:
        if len(summaries) >= limit:
            break
        if wanted is not None and not _names_diagram(folder / "trace.jsonl", wanted, bases):
            continue
        summary = _summary(folder / "trace.jsonl")
        if summary is not None:
            summaries.append(summary)
    return summaries


def _names_diagram(trace: Path, wanted: Path, bases: tuple[Path, ...]) -> bool:
    """Whether the trace's run_started names the diagram `wanted` (a resolved path); reads one line."""
    try:
        with trace.open("rb") as handle:
            first = orjson.loads(handle.readline())
    except (OSError, orjson.JSONDecodeError):
        return False
    return resolved_path(str(first.get("path") or ""), bases) == wanted if isinstance(first, dict) else False


def resolved_path(written: str, bases: tuple[Path, ...]) -> Path | None:
    """A diagram path as a trace wrote it, resolved: as it is when absolute, else the first base it exists under."""
    if not written:
        return None
    path = Path(written)
    if path.is_absolute():
        return path.resolve()
    for base in bases:
        if (base / path).is_file():
            return (base / path).resolve()
    return None


def unfinished_runs(runs_dir: Path, limit: int = 20) -> list[RunSummary]:
    """Runs among the `limit` newest traces (by last write) that have no `run_finished`: running or interrupted.

    `diagrama runs` shows them beside the run store, which hears of a run only when it ends.
    """
    if not runs_dir.is_dir():
        return []
    written = []
    with os.scandir(runs_dir) as entries:
        for entry in entries:
            try:
                written.append((os.stat(os.path.join(entry.path, "trace.jsonl")).st_mtime, entry.path))
            except OSError:
                continue  # not a run folder
    written.sort(reverse=True)
    summaries = [_summary(Path(folder) / "trace.jsonl") for _, folder in written[:limit]]
    return [s for s in summaries if s is not None and s.status in ("running", INTERRUPTED)]


def _summary(trace: Path) -> RunSummary | None:
    try:
        with trace.open("rb") as handle:
            first = orjson.loads(handle.readline())
        last = _last_event(trace)
    except (orjson.JSONDecodeError, OSError):
        return None
    finished = last.get("event") == Event.RUN_FINISHED
    # Only a run that looks interrupted may have been resumed since: then its latest run_started decides.
    started = first if finished or run_status(first, last) != INTERRUPTED else _latest_start_in(trace, first)
    return RunSummary(
        run_id=str(first.get("run_id", trace.parent.name)), diagram=str(first.get("diagram", "?")),
        path=str(first.get("path", "")), status=run_status(started, last), started=float(first.get("timestamp", 0)),
        duration_ms=last.get("duration_ms") if finished else None, steps=last.get("steps") if finished else None,
        trace=trace)
