"""The `diagrama` command: the typer app, exit codes, consoles, and the helpers its command groups share.

Exit status: 0 success, 1 a run failed, 2 a bad diagram or bad usage, 3 a run waiting for an answer (a Wait). Only DiagramaErrors
become one-line messages; anything else is our bug and shows as such. Each command group is
a module here that imports the engine when a command runs, so `diagrama --help` loads none of it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from engine.format.levels import DEFAULT, MESSAGE_LEVELS

if TYPE_CHECKING:
    from rich.console import Console

    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram
    from engine.errors import DiagramaError
    from engine.format.redact import Redactor

__all__ = ["app", "main"]

app = typer.Typer(
    name="diagrama",
    help="Run, check and inspect diagrama diagrams (YAML workflows of LLM blocks).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


if TYPE_CHECKING:  # an enum made of names at run time is one mypy cannot read: to it, any StrEnum
    Level = StrEnum
else:  # --message-level's and --level's choices: the engine's message level names (engine.format.levels, no pydantic)
    Level = StrEnum("Level", {name: name for name in MESSAGE_LEVELS if name != DEFAULT})


@functools.cache
def console(*, stderr: bool = False) -> Console:
    """The console for stdout (results) or stderr (progress, problems); made on first use, as rich costs start-up time."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def redactor() -> Redactor:
    """Scrubs the keys in this process's environment (and any vendor key) from text the CLI prints or writes.

    Made per call, not cached: tests change the environment between commands of one process.
    """
    from engine.format.redact import Redactor
    from engine.runtime.context import Services

    return Redactor(Services().secrets())


def blocks_registry() -> BlockRegistry:
    from blocks.registry import registry

    return registry()


def fail(error: DiagramaError) -> typer.Exit:
    """Print a DiagramaError for a person; the Exit to raise: 2 for a bad diagram or usage, 1 for a failed run."""
    from rich.markup import escape

    from engine.errors import DiagramInvalid, RunError

    err = console(stderr=True)
    scrub = redactor().text  # a message may quote an input, and an input may be a key
    if isinstance(error, DiagramInvalid):
        for problem in error.problems:
            err.print(escape(scrub(str(problem))))
        count = len(error.problems)
        err.print(f"{count} problem{'s' if count != 1 else ''} found; nothing ran.")
        return typer.Exit(2)
    err.print(f"error: {escape(scrub(str(error)))}")
    return typer.Exit(1 if isinstance(error, RunError) else 2)


def load(path: Path) -> Diagram:
    """The diagram at `path` with the installed blocks, or exit 2 listing its problems."""
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramaError

    try:
        return load_diagram(path, blocks_registry())
    except DiagramaError as exc:
        raise fail(exc) from None


def runs_folder(option: Path | None) -> Path:
    """--runs-dir, else $DIAGRAMA_RUNS_DIR, else ./runs."""
    if option is not None:
        return option
    return Path(os.environ.get("DIAGRAMA_RUNS_DIR", "runs"))


def has_module(module: str) -> bool:
    """Whether `module` (a top-level or dotted name) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False  # a missing parent package, or a module entry set to None


def require_extra(module: str, extra: str, command: str) -> None:
    """Exit 2, naming the extra to install, when `command` needs `module` and it is not installed."""
    if not has_module(module):
        console(stderr=True).print(f"diagrama {command} needs the {extra} extra: pip install 'diagrama[{extra}]'",
                                   markup=False)
        raise typer.Exit(2)


def main() -> None:
    app()


# The command groups import the helpers above; the commands are listed here, in the order `--help` shows them.
from engine.cli import api, batch, durable, run, serve, testing, traces  # noqa: E402  (after the helpers they import)

app.command()(run.run)
app.command()(durable.resume)
app.command()(batch.batch)
app.command()(run.validate)
app.command()(run.schema)
app.command("test")(testing.test_scenarios)
app.command()(run.graph)
app.command()(traces.trace)
app.command()(traces.runs)
app.command()(durable.sessions)
app.command()(serve.serve)
app.command()(api.api)
app.command("api-key")(api.api_key)
app.command()(batch.worker)
