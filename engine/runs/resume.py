"""Resume a durable run, answer a waiting one, or replay a past run from a block.

`resume_run` is what `diagrama resume` and the HTTP API call: an interrupted run continues
from its last checkpoint under its own id (the block that was in flight runs again); a
waiting run takes a person's answer, checked against its Wait's form first (a wrong one is
a UsageError and the run stays waiting), and continues at its Wait; `from_block` starts a
new run, linked to the old one (`replay_of`), with the scope the old run had when it first
reached that block: its last checkpoint before that point, then the blocks without effects
in between, run again in the diagram as it is now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from engine.compile.block import BlockRegistry
from engine.compile.diagram import Diagram
from engine.compile.loader import load_diagram
from engine.errors import UsageError
from engine.runs.checkpoints import CheckpointStore
from engine.runs.traces import INTERRUPTED
from engine.runtime.context import Services
from engine.runtime.durable import Answer, Resumed, resumed_from
from engine.runtime.execute import RunResult, execute
from engine.runtime.trace import Console, new_run_id

__all__ = ["Resumption", "answer_problems", "parse_answer_pairs", "prepare_resume", "resume_run", "run_resumption"]


def answer_problems(form: Mapping[str, Any] | None, answer: Any) -> list[str]:
    """What is wrong with `answer` for a Wait's `form` (a JSON Schema): one line per problem, none when it fits."""
    if not form:
        return []
    from jsonschema import Draft202012Validator

    problems = []
    for error in sorted(Draft202012Validator(dict(form)).iter_errors(answer), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(part) for part in error.absolute_path) or "answer"
        problems.append(f"{where}: {error.message}")
    return problems


def parse_answer_pairs(form: Mapping[str, Any] | None, pairs: list[str]) -> dict[str, Any]:
    """`--input approved=true note=ok` as an answer: each value read as YAML, or kept as text where the form's
    property is a string."""
    from engine.format.yamlfile import read_yaml_value

    properties = (form or {}).get("properties") or {}
    answer: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--input takes name=value, got {pair!r}")
        kind = (properties.get(name) or {}).get("type")
        answer[name] = text if kind == "string" else read_yaml_value(text, f"--input {name}")
    return answer


@dataclass
class Resumption:
    """A resume worked out and checked, ready to execute: the diagram, the state, the run's id and record."""

    diagram: Diagram
    resumed: Resumed
    run_id: str
    record: dict[str, Any]
    inputs: dict[str, Any]


def prepare_resume(store: CheckpointStore, run_id: str, *, registry: BlockRegistry, answer: Any = None,
                   from_block: str | None = None, new_id: str | None = None) -> Resumption:
    """Work out how run `run_id` continues (interrupted, or waiting with `answer`), or its replay `from_block`.

    UsageError when it cannot: no such run, one still running or finished (without `from_block`), a waiting run
    without an answer or with one its form refuses (the run stays waiting), a diagram that no longer has the block.
    """
    row = store.run(run_id)
    if row is None:
        raise UsageError(f"no durable run '{run_id}' in the store {store.where} (`diagrama runs` lists them)")
    if row.get("parent") and from_block is None:
        raise UsageError(f"run '{run_id}' is a subdiagram's run, a step of run '{row['parent']}': resume that run "
                         "(its child continues from its own last checkpoint)")
    states = store.states(run_id)
    if not states:
        # Its record is written just before checkpoint 0 (the scope Start made): killed in between, before any block ran.
        raise UsageError(f"run '{run_id}' has no checkpoint to resume from: it was stopped before its first, before "
                         f"any block ran; run the diagram again (diagrama run {row['diagram']})")
    inputs = dict(row.get("inputs") or {})
    diagram = _load(row, registry)
    if from_block is not None:
        resumed = _replay_point(run_id, [state for _, state in states], from_block)
        _check_block(diagram, resumed.next, run_id)
        return Resumption(diagram, resumed, new_id or new_run_id(),
                          {"replay_of": run_id, "session": row.get("session"), "inputs": inputs}, inputs)
    status = row["status"]
    resumed = resumed_from([state for _, state in states], seq=states[-1][0])
    if status == "waiting":
        waiting = row.get("waiting") or {}
        if answer is None:
            raise UsageError(f"run '{run_id}' is waiting at '{waiting.get('block')}': {waiting.get('prompt')}; "
                             "answer with --input name=value or --inputs answer.json")
        problems = answer_problems(waiting.get("form"), answer)
        if problems:
            raise UsageError(f"the answer does not fit the form of '{waiting.get('block')}' (the run is still "
                             "waiting): " + "; ".join(problems))
        resumed.answer = Answer(str(waiting.get("block")), answer, float(waiting.get("asked_at") or 0))
    elif status != INTERRUPTED:
        hint = " (its process is still alive)" if status == "running" else ""
        raise UsageError(f"run '{run_id}' is {status}{hint}: only an interrupted or waiting run resumes "
                         "(replay a finished one with --from BLOCK)")
    elif answer is not None:
        raise UsageError(f"run '{run_id}' is not waiting for an answer; resume it without --input")
    _check_block(diagram, resumed.next, run_id)
    return Resumption(diagram, resumed, run_id, {"session": row.get("session")}, inputs)


async def run_resumption(store: CheckpointStore, resumption: Resumption, *, services: Services | None = None,
                         runs_dir: Path | None = Path("runs"), console: Console | None = None) -> RunResult:
    """Execute a prepared resume: the run continues under its id (a replay: under its new one)."""
    services = services or Services()
    services.checkpoints = store
    return await execute(resumption.diagram, runs_dir=runs_dir, services=services, console=console,
                         run_id=resumption.run_id, resume=resumption.resumed, record=resumption.record)


async def resume_run(store: CheckpointStore, run_id: str, *, registry: BlockRegistry, answer: Any = None,
                     from_block: str | None = None, services: Services | None = None,
                     runs_dir: Path | None = Path("runs"), console: Console | None = None) -> RunResult:
    """Resume run `run_id` (`prepare_resume`, then `run_resumption`): the HTTP API's `POST /v1/runs/{id}/resume`."""
    resumption = prepare_resume(store, run_id, registry=registry, answer=answer, from_block=from_block)
    return await run_resumption(store, resumption, services=services, runs_dir=runs_dir, console=console)


def _load(row: Mapping[str, Any], registry: BlockRegistry) -> Diagram:
    path = Path(str(row["diagram"]))
    if not path.is_file():
        raise UsageError(f"run '{row['run_id']}' ran {path}, which is no longer there")
    return load_diagram(path, registry)


def _check_block(diagram: Diagram, block: str | None, run_id: str) -> None:
    if block is not None and block not in diagram.blocks:
        raise UsageError(f"run '{run_id}' continues at block '{block}', which {diagram.path.name} no longer has")


def _replay_point(run_id: str, states: list[bytes], block: str) -> Resumed:
    """The checkpoint a replay from `block` starts at: the last one written before the old run first reached it."""
    chosen = 0
    seen: list[str] = []
    for index, state in enumerate(states):
        header = orjson.loads(state)["h"]
        if block in header["segment"]:
            break  # first reached between the checkpoint before and this one
        seen.extend(header["segment"])
        chosen = index
        if header["next"] == block:
            break
    else:
        ran = ", ".join(dict.fromkeys(seen)) or "no block"
        raise UsageError(f"run '{run_id}' never reached block '{block}' (it ran {ran})")
    resumed = resumed_from(states[: chosen + 1], seq=0)
    resumed.path, resumed.steps, resumed.errors, resumed.tokens = [], 0, [], 0
    return resumed
