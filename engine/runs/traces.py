"""Reading runs back: find a trace, list runs, turn events into steps and a drawn path.

`diagrama trace`, `diagrama runs` and `diagrama graph --run` are built on this; it
only reads the JSON Lines traces that engine.runtime.trace writes. A trace without its
`run_finished` is a run still going, or one whose process died (SIGKILL, a crash): the
pid and host in `run_started` tell which, and the second shows as `interrupted`.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import socket
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import orjson
from pydantic import Field

from engine.compile.graph import RunPath
from engine.errors import UsageError
from engine.format.levels import MessageLevel
from engine.runtime.trace import EVENT_LEVELS, Event, read_events

__all__ = ["INTERRUPTED", "SCENARIO_SUFFIX", "RunSummary", "Step", "find_trace", "is_scenario_run", "keep_event",
           "latest_start", "list_runs", "resolved_path", "run_path", "run_status", "steps", "trace_status", "unfinished_runs"]

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


@dataclass
class Step:
    """One block step as the trace recorded it."""

    number: int
    block: str
    block_type: str
    offset_ms: float | None = None
    duration_ms: float | None = None
    status: str = "running"
    next: str | None = None
    via: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    set: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    model: str | None = None
    tokens: tuple[int, int] | None = None
    called_tools: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    scores: dict[str, float | None] = field(default_factory=dict)
    score_parts: dict[str, tuple[float, float]] = field(default_factory=dict)
    """A ranked tool's (lexical, embedding) parts of its score, when the trace has them."""
    failed_tools: list[str] = field(default_factory=list)
    http_calls: list[str] = field(default_factory=list)
    """An HttpRequest's calls, each as `GET 200` (with its attempts when it was retried)."""
    # What `diagrama trace` lays out by; the studio's answers leave them out (its page reads `block`: `sub/ask`).
    lane: Annotated[str | None, Field(exclude=True)] = None
    """The lane of a nested run's step (TraceLane): `sub`, `each[3]`; None for the top run's own."""
    depth: Annotated[int, Field(exclude=True)] = 0
    """How many Subdiagram calls deep the step ran."""

    @property
    def pass_index(self) -> int | None:
        """The concurrent Loop pass the step ran in (the innermost), if any."""
        found = _PASS.search(self.lane) if self.lane else None
        return int(found.group(1)) if found else None


_PASS = re.compile(r"\[(\d+)\]$")
"""The end of a pass's lane (`each[3]`); a lane that ends with a child's name is the child's."""


def steps(events: Iterable[dict[str, Any]]) -> Iterator[Step]:
    """Group events into steps (block_started … block_finished), in the order the steps started.

    A nested run's events (a Subdiagram's child, a concurrent Loop's passes) carry their lane and interleave
    with their caller's: each lane keeps its own step under way.
    """
    # Steps wait here in start order until they and all before them have ended: most traces have one lane, where
    # each step is handed on as it ends (a caller reading a long trace keeps only the steps it wants).
    waiting: deque[Step] = deque()
    ended: set[int] = set()
    current: dict[str | None, Step] = {}
    number = 0
    for event in events:
        name = event.get("event")
        lane = event.get("lane")  # None for the top run's own steps, most of a trace
        step = current.get(lane)
        if name == Event.BLOCK_STARTED:
            number += 1
            step = current[lane] = Step(event.get("step", number), event["block"], event.get("block_type", "?"),
                                        event.get("offset_ms"))
            if lane is not None:
                _place(step, event)
            waiting.append(step)
        elif name == Event.BLOCK_FINISHED:
            if step is None or step.block != event["block"]:
                number += 1
                step = Step(number, event["block"], event.get("block_type", "?"))
                if lane is not None:
                    _place(step, event)
                waiting.append(step)
            step.duration_ms = event.get("duration_ms")
            step.status = event.get("status", "?")
            step.next, step.via = event.get("next"), event.get("via")
            step.inputs, step.outputs = event.get("inputs") or {}, event.get("outputs") or {}
            step.set = event.get("set") or {}
            current.pop(lane, None)
            if len(waiting) == 1 and waiting[0] is step:  # nothing else under way: the usual case, at once
                waiting.clear()
                yield step
                continue
            ended.add(id(step))
        elif name == Event.BLOCK_FAILED:
            error = f"{event.get('error_type')}: {event.get('message')}"
            if step is not None and step.block == event.get("block"):
                step.error = error
                step.status = "failed"
            else:
                number += 1
                failed = Step(number, str(event.get("block")), str(event.get("block_type", "?")), status="failed",
                              error=error)
                if lane is not None:
                    _place(failed, event)
                waiting.append(failed)
                ended.add(id(failed))
        elif step is not None:
            _detail(step, name, event)
            continue
        while waiting and id(waiting[0]) in ended:
            first = waiting.popleft()
            ended.discard(id(first))
            yield first
    yield from waiting  # steps still under way (a run not finished, or one that died)


def _place(step: Step, event: dict[str, Any]) -> None:
    """A nested run's step: its lane and Subdiagram depth."""
    step.lane = str(event["lane"])
    step.depth = int(event.get("depth") or 0)


def _detail(step: Step, name: Any, event: dict[str, Any]) -> None:
    """What a step's other events add to it: its model and tokens, payloads, ranked tools, failed calls."""
    if name == Event.PROVIDER_CALLED:
        usage = event.get("usage") or {}
        step.model = event.get("model")
        step.tokens = (int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))
        step.called_tools = list(event.get("called_tools") or [])
    elif name == Event.HTTP_CALLED:
        attempts = int(event.get("attempts") or 1)
        step.http_calls.append(f"{event.get('method')} {event.get('status')}"
                               + (f" after {attempts} attempts" if attempts > 1 else ""))
    elif name in (Event.HTTP_REQUEST, Event.HTTP_RESPONSE):
        step.payloads.append(event)
    elif name == Event.TOOLS_SELECTED:
        for chosen in event.get("tools") or []:
            step.scores[str(chosen.get("name"))] = chosen.get("score")
            parts = chosen.get("lexical"), chosen.get("embedding")
            if all(isinstance(part, (int, float)) for part in parts):
                step.score_parts[str(chosen.get("name"))] = (float(parts[0]), float(parts[1]))
    elif name == Event.TOOL_CALLED and event.get("ok") is False:
        step.failed_tools.append(f"{event.get('tool')}: {event.get('error')}")


def event_level(event: dict[str, Any]) -> MessageLevel:
    return EVENT_LEVELS.get(str(event.get("event")), MessageLevel.DEBUG)


def keep_event(event: dict[str, Any], *, block: str | None = None, level: MessageLevel | None = None,
               errors: bool = False) -> bool:
    """Whether `diagrama trace` shows an event: of `block` (and the run's start and end; for a Subdiagram, its
    child's steps too: `sub/…`), kept at `level`, and with `errors` only failures and the run's start and end."""
    named = event.get("block")
    if block and named is not None and named != block and not (
            isinstance(named, str) and "/" in named and named.startswith(f"{block}/")):
        return False
    if block and event.get("block") is None and event.get("event") not in (Event.RUN_STARTED, Event.RUN_FINISHED):
        return False
    if level is not None and event_level(event) > level:
        return False
    if not errors:
        return True
    # A failed tool call is an error of the run's story even when ToolDispatch turned it into a row for the model.
    return event.get("event") in (Event.BLOCK_FAILED, Event.RUN_FINISHED, Event.RUN_STARTED) or \
        event.get("status") in ("failed", "ignored") or (event.get("event") == Event.TOOL_CALLED and event.get("ok") is False)


def run_path(trace: Path, subdiagram: str | None = None) -> RunPath:
    """Blocks and links a run took, its failing block and each Loop's passes; with `subdiagram` (a Subdiagram
    block's address, `sub` or `sub/inner`), those of its child's runs instead, by the child's own block ids."""
    events = read_events(trace)
    if subdiagram is not None:
        return _child_path(events, subdiagram)
    path: list[str] = []
    finished = next((e for e in reversed(events) if e.get("event") == Event.RUN_FINISHED), None)
    if finished is not None:
        path = list(finished.get("path") or [])
    else:
        path = [e["block"] for e in events if e.get("event") == Event.BLOCK_STARTED and "/" not in str(e["block"])]
    drawn = RunPath(blocks=set(path), links=set(itertools.pairwise(path)))
    if finished is not None:
        errors = [e for e in finished.get("errors") or [] if "/" not in str(e.get("block"))]  # not a child's
        # A block whose failure on_error handled failed all the same: drawn failed, its error link taken.
        drawn.handled = {str(e.get("block")) for e in errors if e.get("handled_by")}
        unhandled = [e for e in errors if not e.get("ignored") and not e.get("handled_by")]
        if finished.get("status") == "failed" and unhandled:
            drawn.failed = unhandled[-1].get("block")
    else:
        drawn.handled = {str(e.get("block")) for e in events if e.get("event") == Event.BLOCK_FINISHED
                         and e.get("status") == "failed" and "/" not in str(e.get("block"))}
    for event in events:
        if event.get("event") == Event.LOOP_PASS_STARTED and "/" not in str(event.get("block")):
            drawn.passes[event["block"]] = drawn.passes.get(event["block"], 0) + 1
    return drawn


def _child_path(events: list[dict[str, Any]], address: str) -> RunPath:
    """What the child runs of the Subdiagram at `address` did, all its calls together, by the child's block ids."""
    prefix = f"{address}/"
    drawn = RunPath()
    for event in events:
        name = event.get("event")
        block = str(event.get("block"))
        if name == Event.SUBDIAGRAM_FINISHED and block == address:
            path = [str(step) for step in event.get("path") or []]
            drawn.blocks |= set(path)
            drawn.links |= set(itertools.pairwise(path))
            errors = [e for e in event.get("errors") or [] if str(e.get("block")).startswith(prefix)]
            own = [{**e, "block": str(e["block"])[len(prefix):]} for e in errors
                   if "/" not in str(e["block"])[len(prefix):]]
            drawn.handled |= {str(e["block"]) for e in own if e.get("handled_by")}
            unhandled = [e for e in own if not e.get("ignored") and not e.get("handled_by")]
            if event.get("status") == "failed" and unhandled:
                drawn.failed = str(unhandled[-1]["block"])
        elif name == Event.LOOP_PASS_STARTED and block.startswith(prefix) and "/" not in block[len(prefix):]:
            own_block = block[len(prefix):]
            drawn.passes[own_block] = drawn.passes.get(own_block, 0) + 1
    return drawn
