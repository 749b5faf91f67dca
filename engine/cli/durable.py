"""`diagrama resume` and `diagrama sessions`, and what `diagrama run` does around a durable run or a session.

Resuming, answering, replaying and keeping sessions are engine.runs.resume's and engine.runs.sessions';
this module reads argv and prints.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.cli import blocks_registry, console, fail, runs_folder

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.runs.checkpoints import CheckpointStore
    from engine.runtime.context import Services
    from engine.runtime.execute import RunResult


@dataclass
class Turn:
    """One `diagrama run`'s durable part: its run id, its session's memory, what its store record adds."""

    run_id: str
    store: CheckpointStore | None = None
    session: str | None = None
    memory: tuple[str, ...] = ()
    remembered: dict[str, Any] | None = None
    record: dict[str, Any] = field(default_factory=dict)

    def ended(self, result: RunResult) -> None:
        """Store the session's memory when the turn succeeded; let go of it in any case."""
        if self.store is None or self.session is None:
            return
        from engine.runs.sessions import release_session

        values = ({name: result.variables.get(name) for name in self.memory}
                  if result.succeeded else None)
        release_session(self.store, self.session, self.run_id, values)


@contextlib.contextmanager
def durable_turn(diagram: Diagram, folder: Path, services: Services, session: str | None,
                 inputs: dict[str, Any]) -> Iterator[Turn]:
    """Open the checkpoint store for a durable diagram (or a session), and take the session for this run: exit 2
    when the store cannot be opened (`durable: false` on Start runs without it)."""
    from engine.runtime.trace import new_run_id

    turn = Turn(new_run_id())
    settings = diagram.settings
    if not settings.durable and session is None:
        yield turn
        return
    from engine.runs.checkpoints import open_checkpoints

    try:
        store = open_checkpoints(None, folder)
    except OSError as exc:
        if session is not None:
            raise typer.Exit(_usage(f"--session needs the checkpoint store: {exc}")) from None
        raise typer.Exit(_usage(f"{exc} (a diagram with `durable: false` on Start runs without checkpoints)")) \
            from None
    turn.store = store
    if settings.durable:
        services.checkpoints = store
    turn.record["inputs"] = inputs
    try:
        if session is not None:
            from engine.runs.sessions import claim_session

            turn.session, turn.memory = session, tuple(settings.memory)
            turn.record["session"] = session
            if not settings.memory:
                console(stderr=True).print("warning: the diagram keeps no memory (Start's `memory`); the session "
                                           "stores nothing")
            stored = claim_session(store, session, str(diagram.path.resolve()), turn.run_id)
            if stored is not None:
                turn.remembered = {name: stored[name] for name in turn.memory if name in stored}
        yield turn
    finally:
        store.close()


def _usage(message: str) -> int:
    console(stderr=True).print(f"error: {message}", markup=False)
    return 2


# Long by its options (one line each, as typer reads them); the body is short.
def resume(
    run_id: Annotated[str, typer.Argument(help="the run to continue (`diagrama runs` lists them)")],
    input: Annotated[list[str] | None, typer.Option("--input", "-i", help="the answer to a Wait, as name=value")] = None,
    inputs: Annotated[Path | None, typer.Option("--inputs", help="the answer to a Wait, a YAML or JSON file")] = None,
    from_block: Annotated[str | None, typer.Option(
        "--from", help="replay: a new run from this block, with the scope the old run had there")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="answer request blocks with the built-in simulator")] = False,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
    output: Annotated[str, typer.Option("--output", help="text, or one JSON object on stdout")] = "text",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no per-block lines on stderr")] = False,
) -> None:
    """Continue an interrupted run from its last checkpoint, answer a waiting one, or replay one from a block.

    The block that was in flight when the run stopped runs again (README, "Durable runs"). Exit status as
    `diagrama run`'s: 0, 1, 2 (a bad answer: the run stays waiting), 3 (waiting again).
    """
    import asyncio

    from engine.cli.run import _print_result, _store_run, console_printer, exit_code
    from engine.errors import DiagramaError
    from engine.format.jsonout import dumps_plain
    from engine.runs.checkpoints import open_checkpoints
    from engine.runs.resume import parse_answer_pairs, prepare_resume, run_resumption
    from engine.runtime.context import Services

    folder = runs_folder(runs_dir)
    try:
        store = open_checkpoints(None, folder)
    except OSError as exc:
        raise typer.Exit(_usage(str(exc))) from None
    try:
        row = store.run(run_id)
        answer: Any = None
        if input or inputs:
            form = ((row or {}).get("waiting") or {}).get("form")  # None once the run goes on (another resume)
            answer = _read_answer(inputs) if inputs else {}
            answer.update(parse_answer_pairs(form, input or []))
        resumption = prepare_resume(store, run_id, registry=blocks_registry(), answer=answer, from_block=from_block)
        if from_block is None:
            from engine.runs.api_durable import take_over

            # Of two resumes of one run (two terminals, the studio, the API), one takes it; the other is refused
            # here, before any block runs again.
            if not take_over(store, run_id):
                raise typer.Exit(_usage(f"run '{run_id}' is already being resumed elsewhere"))
        session = resumption.record.get("session") if from_block is None else None
        if session:
            from engine.runs.sessions import claim_session

            claim_session(store, session, str(resumption.diagram.path.resolve()), run_id)
        result: RunResult | None = None
        try:
            result = asyncio.run(run_resumption(store, resumption, services=Services(offline=offline),
                                                runs_dir=folder, console=None if quiet else console_printer(sys.stderr)))
        finally:
            if session:
                from engine.runs.sessions import release_session

                memory = resumption.diagram.settings.memory
                kept = ({name: result.variables.get(name) for name in memory}
                        if result is not None and result.succeeded else None)
                release_session(store, session, run_id, kept)
        _store_run(resumption.diagram, resumption.inputs, result, folder)
    except DiagramaError as exc:
        raise fail(exc) from None
    finally:
        store.close()
    if output == "json":
        sys.stdout.write(dumps_plain(result.as_json()) + "\n")
    else:
        _print_result(result)
    raise typer.Exit(exit_code(result))


def _read_answer(path: Path) -> dict[str, Any]:
    import orjson

    from engine.errors import UsageError
    from engine.format.yamlfile import read_yaml_value

    try:
        text = path.read_text(encoding="utf-8")
        data = orjson.loads(text) if path.suffix == ".json" else read_yaml_value(text, str(path))
    except (OSError, orjson.JSONDecodeError) as exc:
        raise fail(UsageError(f"cannot read the answer in {path}: {exc}")) from None
    if not isinstance(data, dict):
        raise fail(UsageError(f"the answer in {path} must be a mapping of names to values"))
    return data


def sessions(
    forget: Annotated[str | None, typer.Option("--forget", help="delete this session and its memory")] = None,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
    output: Annotated[str, typer.Option("--output", help="text, or JSON lines")] = "text",
) -> None:
    """List conversations (sessions) with their turns and memory, or forget one."""
    from engine.format.jsonout import dumps_plain
    from engine.runs.checkpoints import open_checkpoints
    from engine.runs.sessions import forget_session, list_sessions

    try:
        store = open_checkpoints(None, runs_folder(runs_dir))
    except OSError as exc:
        raise typer.Exit(_usage(str(exc))) from None
    try:
        if forget is not None:
            if not forget_session(store, forget):
                raise typer.Exit(_usage(f"no session '{forget}'"))
            console().print(f"forgot session {forget}", markup=False)
            return
        found = list_sessions(store)
    finally:
        store.close()
    if output == "json":
        sys.stdout.write("".join(dumps_plain(entry) + "\n" for entry in found))
        return
    if not found:
        console(stderr=True).print("no sessions", markup=False)
        return
    for entry in found:
        memory = dumps_plain(entry["memory"])
        memory = memory if len(memory) <= 100 else memory[:99] + "…"
        console().print(f"{entry['session']:<24} {entry['turns']:>4} turns  {Path(str(entry['diagram'])).name}  "
                        f"{memory}", markup=False)
