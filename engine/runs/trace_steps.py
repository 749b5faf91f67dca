"""A run's trace read as steps (`diagrama trace`'s table, the studio's run view) and as the path it drew (`graph --run`).

Events are grouped into the steps they belong to (block_started … block_finished, with what happened in between: a
model's call, tools, HTTP calls, errors), nested runs' steps marked with their lane and depth; `keep_event` filters
events by block, level and errors. Only reads events (engine.runs.traces finds the file).
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from engine.compile.graph import RunPath
from engine.format.levels import MessageLevel
from engine.runtime.trace import EVENT_LEVELS, Event, read_events

__all__ = ["RetrievedPassage", "Step", "event_level", "keep_event", "run_path", "steps"]


@dataclass
class RetrievedPassage:
    """A passage a Retrieve step (or a knowledge tool) found, as its `passages_retrieved` event traced it."""

    knowledge: str
    query: str
    source: str
    line: int | None
    page: int | None
    score: float | None
    lexical: float | None
    embedding: float | None
    text: str
    """The passage's first words (traces older than the snippet have none: '')."""


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
    cost: dict[str, Any] | None = None
    """Its request's cost as the trace says it: `{"usd": x}`, `{"usd": None}` when the price is unknown; None when
    the step made no request or its trace predates costs."""
    usage: dict[str, int] | None = None
    """Its request's tokens per kind as the trace says them (`input_tokens`, `output_tokens`, and where the reply
    reported them `cache_write_tokens`, `cache_read_tokens`, `thinking_tokens`); None when it made no request."""
    cached: bool = False
    """Its request was answered from the response cache: nothing was spent."""
    called_tools: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    scores: dict[str, float | None] = field(default_factory=dict)
    score_parts: dict[str, tuple[float, float]] = field(default_factory=dict)
    """A ranked tool's (lexical, embedding) parts of its score, when the trace has them."""
    failed_tools: list[str] = field(default_factory=list)
    http_calls: list[str] = field(default_factory=list)
    """An HttpRequest's calls, each as `GET 200` (with its attempts when it was retried)."""
    passages: list[RetrievedPassage] = field(default_factory=list)
    """What a Retrieve step or a knowledge tool found, best first (traced at Debug)."""
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


# Long: one pass over the events, its cases side by side; split, each would need all of the pass's state.
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
        if event.get("requested_model"):  # a fallback answered: which, for which
            step.model = f"{step.model} (fallback for {event['requested_model']})"
        step.tokens = (int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))
        step.usage = {str(kind): int(count) for kind, count in usage.items() if isinstance(count, int)}
        step.cached = bool(event.get("cached"))
        if "cost" in event:
            step.cost = event["cost"] if isinstance(event["cost"], dict) else {"usd": None}
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
    elif name == Event.PASSAGES_RETRIEVED:
        for passage in event.get("passages") or []:
            page, line = passage.get("page"), passage.get("line")
            step.passages.append(_passage(event, passage))
            label = f"{passage.get('source')}" + (f" p.{page}" if page else f":{line}" if line else "")
            step.scores[label] = passage.get("score")
            parts = passage.get("lexical"), passage.get("embedding")
            if all(isinstance(part, (int, float)) for part in parts):
                step.score_parts[label] = (float(parts[0]), float(parts[1]))
    elif name == Event.TOOL_CALLED and event.get("ok") is False:
        step.failed_tools.append(f"{event.get('tool')}: {event.get('error')}")


def _passage(event: dict[str, Any], passage: dict[str, Any]) -> RetrievedPassage:
    def number(name: str) -> float | None:
        value = passage.get(name)
        return float(value) if isinstance(value, int | float) else None

    line, page = passage.get("line"), passage.get("page")
    return RetrievedPassage(str(event.get("knowledge", "")), str(event.get("query", "")), str(passage.get("source")),
                            line if isinstance(line, int) else None, page if isinstance(page, int) else None,
                            number("score"), number("lexical"), number("embedding"), str(passage.get("text") or ""))


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
        elif event.get("event") == Event.BLOCK_FINISHED and "/" not in str(event.get("block")):
            _note_way_out(drawn, event, str(event.get("block")), event.get("next"))
    return drawn


def _note_way_out(drawn: RunPath, event: dict[str, Any], block: str, following: Any) -> None:
    """How a block that succeeded left for the next (its port, or the index of its `next` link where two go to one
    block): what tells the links between one pair apart (engine.compile.graph._taken)."""
    if event.get("status") != "succeeded" or not isinstance(following, str):
        return
    via = str(event.get("via") or "next")
    link = event.get("link")
    drawn.went.setdefault((block, following), set()).add((via, link if isinstance(link, int) else None))


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
        elif name == Event.BLOCK_FINISHED and block.startswith(prefix) and "/" not in block[len(prefix):]:
            following = event.get("next")
            _note_way_out(drawn, event, block[len(prefix):],
                          following[len(prefix):] if isinstance(following, str) and following.startswith(prefix)
                          else following)
    return drawn
