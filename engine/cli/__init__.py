"""The `diagrama` command: its command table, exit codes, consoles, and the helpers its command groups share.

Exit status: 0 success, 1 a run failed, 2 a bad diagram or bad usage, 3 a run waiting for an answer (a Wait). Only
DiagramaErrors become one-line messages; anything else is our bug and shows as such. The commands are click's; each
command group is a module here that is imported only when one of its commands runs (click's documented lazy group),
and imports the engine only inside the command: `diagrama --help` loads click and this module, nothing else.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram
    from engine.errors import DiagramaError
    from engine.format.redact import Redactor

__all__ = ["COMMANDS", "LEVELS", "PATH", "app", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("engine.cli.run:run", "Run a diagram once."),
    "resume": ("engine.cli.durable:resume", "Continue an interrupted run from its last checkpoint, answer a "
               "waiting one, or replay one from a block."),
    "batch": ("engine.cli.batch:batch", "Run a diagram over many inputs, N at a time, recorded in the run store; "
              "resumable."),
    "eval": ("engine.cli.evals:evaluate", "Score a robot's answers on the cases of eval files (*.eval.yaml), "
             "optionally beside a second version."),
    "validate": ("engine.cli.diagrams:validate", "Check diagrams without running them; every problem of each file is "
                 "listed."),
    "index": ("engine.cli.index:index", "Build or refresh the knowledge indexes of a diagram or registry file; only "
              "changed files are read again."),
    "schema": ("engine.cli.diagrams:schema", "Print the JSON Schema of diagram files (for editors: diagrama schema > "
               "diagram.schema.json)."),
    "test": ("engine.cli.testing:test_scenarios", "Run robot scenario files (*.scenario.yaml) against the offline "
             "simulator."),
    "graph": ("engine.cli.diagrams:graph", "Draw a diagram as Mermaid or Graphviz DOT text, optionally with a run's path."),
    "trace": ("engine.cli.traces:trace", "Show a run's steps: block, type, start offset, duration, status, link taken, "
              "short inputs/outputs."),
    "runs": ("engine.cli.traces:runs", "List recent runs: id, diagram, status, start, duration, steps, cost, and the "
             "batch row or `scenario`."),
    "evals": ("engine.cli.traces:evals", "List recorded eval runs: when, eval file, diagram, revision, score, "
              "passed/failed."),
    "sessions": ("engine.cli.durable:sessions", "List conversations (sessions) with their turns and memory, or forget "
                 "one."),
    "serve": ("engine.cli.serve:serve", "The studio: build, edit, run and debug the folder's diagrams in the "
              "browser; the YAML files stay the source."),
    "publish": ("engine.cli.publish:publish", "Pin a diagram and every file it loads as its next version, the one "
                "`diagrama api` serves."),
    "versions": ("engine.cli.publish:versions", "List a diagram's published versions: number, time, author, note, and "
                 "which is live."),
    "rollback": ("engine.cli.publish:rollback", "Serve an earlier version again: a new version holding version N's "
                 "files."),
    "api": ("engine.cli.api:api", "Serve the folder's robots over HTTP: list them, run them, follow their events "
            "(SSE); bearer keys required."),
    "schedules": ("engine.cli.schedules:schedules", "List each robot's schedules with the next time `diagrama api` "
                  "fires each, in its timezone."),
    "mcp": ("engine.cli.mcp:mcp", "Serve the folder's robots as MCP tools over stdio (Claude Desktop, IDEs, agents): "
            "each robot a tool."),
    "api-key": ("engine.cli.api:api_key", "Make an API key: prints the key (give it to the caller; it is not kept) "
                "and its keys-file line."),
    "worker": ("engine.cli.batch:worker", "A Celery worker that runs batch rows (`diagrama batch --backend celery`) "
               "and `diagrama api`'s runs."),
}
"""Command name → (module:attribute of its click command, its one-line help), in the order `--help` lists them. The
help is written here so that `--help` imports no command; a test holds each to its command's own docstring."""


class LazyCommands(click.Group):
    """The commands of COMMANDS, each imported when it is asked for (click's "lazily loading subcommands")."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        found = COMMANDS.get(name)
        if found is None:
            return None
        module, _, attribute = found[0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        if os.environ.get("DIAGRAMA_PRICES"):  # a user's price file is checked before a command can send a request
            from engine.errors import DiagramInvalid
            from engine.providers.prices import check_prices

            try:
                check_prices()
            except DiagramInvalid as exc:
                raise fail(exc) from None
        return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])


app = LazyCommands(name="diagrama", help="Run, check and inspect diagrama diagrams (YAML workflows of LLM blocks).",
                   no_args_is_help=True, context_settings={"help_option_names": ["--help", "-h"]})

PATH = click.Path(path_type=Path)
"""A path option or argument, given to the command as a Path (not checked here: the command says what is wrong)."""

LEVELS = ("Release", "Debug", "Detailed")
"""--message-level's and --level's choices: the message level names (engine.format.levels; a test holds them equal)."""


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


def fail(error: DiagramaError) -> click.exceptions.Exit:
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
        return click.exceptions.Exit(2)
    err.print(f"error: {escape(scrub(str(error)))}")
    return click.exceptions.Exit(1 if isinstance(error, RunError) else 2)


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
        raise click.exceptions.Exit(2)


def main() -> None:
    code: object = 0
    try:
        app()
    except SystemExit as exc:
        code = exc.code
        raise
    finally:
        _end_without_finalizing(code)


def _end_without_finalizing(code: object) -> None:
    """End the process at once when an abandoned async handler went on when closed (a bare `except:` around an
    await): the interpreter's exit would finalize it where no event loop runs, and it would loop for ever
    (engine.tools.coroutines). Everything the command wrote is flushed first; exporters were shut down by the
    command."""
    coroutines = sys.modules.get("engine.tools.coroutines")
    if coroutines is None or not coroutines.ignored_close():
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
