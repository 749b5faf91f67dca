"""`diagrama test`: robot scenario files run against the offline simulator, one PASS or FAIL line each."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from engine.cli import PATH, blocks_registry, console, runs_folder


@click.command("test")
@click.argument("paths", type=PATH, nargs=-1)
@click.option("--tag", multiple=True, help="only scenarios with this tag")
@click.option("-k", "keyword", help="only scenarios whose name contains this text")
@click.option("--runs-dir", type=PATH)
@click.option("--data-root", type=PATH, multiple=True,
              help="a folder besides each diagram's own that it may read files from (repeatable)")
def test_scenarios(paths: tuple[Path, ...], tag: tuple[str, ...], keyword: str | None, runs_dir: Path | None,
                   data_root: tuple[Path, ...]) -> None:
    """Run robot scenario files (*.scenario.yaml) against the offline simulator."""
    from rich.markup import escape

    from engine.errors import DiagramaError
    from engine.testing.scenarios import load_scenarios, run_scenario, scenario_files

    registry = blocks_registry()
    err, out = console(stderr=True), console()
    passed = failed = 0
    for file in scenario_files(list(paths) or [Path("tests/scenarios")]):
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
    raise click.exceptions.Exit(1 if failed else 0)
