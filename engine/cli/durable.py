"""`diagrama resume` and `diagrama sessions`, and what `diagrama run` does around a durable run or a session.

Starting, resuming, answering, replaying, cancelling and holding sessions are the one turn's (engine.runs.turn);
this module reads argv and prints.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli import PATH, blocks_registry, console, fail, runs_folder

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.runs.turn import Turn


def open_turn(diagram: Diagram, folder: Path, session: str | None, inputs: dict[str, Any]) -> Turn:
    """`diagrama run`'s turn (engine.runs.turn): with the checkpoint store for a durable diagram or a session, exit 2
    when it cannot be opened (`durable: false` on Start runs without it) or the turn is refused. The caller closes
    its store."""
    from engine.errors import DiagramaError
    from engine.runs.turn import new_turn

    store = None
    if diagram.settings.durable or session is not None:
        from engine.runs.checkpoints import open_checkpoints

        try:
            store = open_checkpoints(None, folder)
        except OSError as exc:
            if session is not None:
                raise click.exceptions.Exit(_usage(f"--session needs the checkpoint store: {exc}")) from None
            raise click.exceptions.Exit(_usage(f"{exc} (a diagram with `durable: false` on Start runs without checkpoints)")) \
                from None
    try:
        turn = new_turn(diagram, inputs, store=store, session=session)
    except DiagramaError as exc:
        if store is not None:
            store.close()
        raise fail(exc) from None
    if session is not None and not diagram.settings.memory:
        console(stderr=True).print("warning: the diagram keeps no memory (Start's `memory`); the session stores nothing")
    return turn


def _usage(message: str) -> int:
    console(stderr=True).print(f"error: {message}", markup=False)
    return 2


@click.command()
@click.argument("run_id")
@click.option("--input", "-i", "input", multiple=True, help="the answer to a Wait, as name=value")
@click.option("--inputs", type=PATH, help="the answer to a Wait, a YAML or JSON file")
@click.option("--from", "from_block", help="replay: a new run from this block, with the scope the old run had there")
@click.option("--offline", is_flag=True, help="answer request blocks with the built-in simulator")
@click.option("--runs-dir", type=PATH)
@click.option("--output", type=click.Choice(["text", "json"]), default="text", help="text, or one JSON object on stdout")
@click.option("--quiet", "-q", is_flag=True, help="no per-block lines on stderr")
@click.option("--cancel", is_flag=True, help="give up a waiting or interrupted run instead; its session goes on without it")
def resume(run_id: str, input: tuple[str, ...], inputs: Path | None, from_block: str | None, offline: bool,
           runs_dir: Path | None, output: str, quiet: bool, cancel: bool) -> None:
    """Continue an interrupted run from its last checkpoint, answer a waiting one, or replay one from a block.

    The block that was in flight when the run stopped runs again (README, "Durable runs"). Exit status as
    `diagrama run`'s: 0, 1, 2 (a bad answer: the run stays waiting), 3 (waiting again).
    """
    import asyncio

    from engine.cli.run import _print_result, _store_run, console_printer, exit_code
    from engine.errors import DiagramaError
    from engine.format.jsonout import dumps_plain
    from engine.runs.checkpoints import open_checkpoints
    from engine.runs.resume import parse_answer_pairs
    from engine.runs.turn import cancel_turn, resume_turn, run_turn
    from engine.runtime.context import Services

    folder = runs_folder(runs_dir)
    try:
        store = open_checkpoints(None, folder)
    except OSError as exc:
        raise click.exceptions.Exit(_usage(str(exc))) from None

    def answer_to(form: Any) -> Any:
        """The answer --inputs and --input give, each value typed by the Wait's form (None: none given)."""
        if not (input or inputs):
            return None
        given = _read_answer(inputs) if inputs else {}
        given.update(parse_answer_pairs(form, list(input)))
        return given

    try:
        if cancel:
            cancel_turn(store, run_id)
            console().print(f"cancelled run {run_id}", markup=False)
            return
        # Of two resumes of one run (two terminals, the studio, the API), one takes it; the other is refused here,
        # before any block runs again.
        turn = resume_turn(store, run_id, registry=blocks_registry(), read_answer=answer_to, from_block=from_block)
        result = asyncio.run(run_turn(turn, services=Services(offline=offline, inline_calls=True), runs_dir=folder,
                                      console=None if quiet else console_printer(sys.stderr)))
        _store_run(turn.diagram, turn.inputs, result, folder)
    except DiagramaError as exc:
        raise fail(exc) from None
    finally:
        store.close()
    if output == "json":
        sys.stdout.write(dumps_plain(result.as_json()) + "\n")
    else:
        _print_result(result)
    raise click.exceptions.Exit(exit_code(result))


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


@click.command()
@click.option("--forget", help="delete this session and its memory")
@click.option("--runs-dir", type=PATH)
@click.option("--output", type=click.Choice(["text", "json"]), default="text", help="text, or JSON lines")
def sessions(forget: str | None, runs_dir: Path | None, output: str) -> None:
    """List conversations (sessions) with their turns and memory, or forget one."""
    from engine.format.jsonout import dumps_plain
    from engine.runs.checkpoints import open_checkpoints
    from engine.runs.sessions import forget_session, list_sessions

    try:
        store = open_checkpoints(None, runs_folder(runs_dir))
    except OSError as exc:
        raise click.exceptions.Exit(_usage(str(exc))) from None
    try:
        if forget is not None:
            if not forget_session(store, forget):
                raise click.exceptions.Exit(_usage(f"no session '{forget}'"))
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
