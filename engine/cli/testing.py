"""`diagrama test`: robot scenario files run against the offline simulator, one PASS or FAIL line each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from engine.cli import blocks_registry, console, runs_folder


def test_scenarios(
    paths: Annotated[list[Path] | None, typer.Argument(help="scenario files or folders (default tests/scenarios)")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="only scenarios with this tag")] = None,
    keyword: Annotated[str | None, typer.Option("-k", help="only scenarios whose name contains this text")] = None,
    runs_dir: Annotated[Path | None, typer.Option("--runs-dir")] = None,
    data_root: Annotated[list[Path] | None, typer.Option(
        "--data-root", help="a folder besides each diagram's own that it may read files from (repeatable)")] = None,
) -> None:
    """Run robot scenario files (*.scenario.yaml) against the offline simulator."""
    from rich.markup import escape

    from engine.errors import DiagramaError
    from engine.testing.scenarios import load_scenarios, run_scenario, scenario_files

    registry = blocks_registry()
    err, out = console(stderr=True), console()
    passed = failed = 0
    for file in scenario_files(paths or [Path("tests/scenarios")]):
        try:
            scenarios = load_scenarios(file)
        except DiagramaError as exc:
            failed += 1
            err.print(escape(str(exc)))
            continue
        for scenario in scenarios:
            if tag and not set(tag) & set(scenario.spec.tags):
                continue
            if keyword and keyword.lower() not in scenario.name.lower():
                continue
            verdict = run_scenario(scenario, registry, runs_folder(runs_dir), tuple(data_root or ()))
            if verdict.passed:
                passed += 1
                out.print(f"PASS  {escape(scenario.name)}  [dim]{escape(str(file))}[/dim]")
            else:
                failed += 1
                out.print(f"[red]FAIL[/red]  {escape(verdict.report())}")
    sys.stdout.write(f"{passed} passed, {failed} failed\n")
    raise typer.Exit(1 if failed else 0)
