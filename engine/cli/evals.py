"""`diagrama eval`: eval files' cases run through their diagrams and scored, optionally beside a second version.

Loading, running, scoring and the reports are engine.runs.evals'; this module reads the options, prints the table or
the JSON, writes the report files, and turns the verdict into the exit status (0 at or above the threshold, 1 below,
2 for a bad file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engine.cli import PATH, blocks_registry, fail, has_module, redactor, runs_folder

if TYPE_CHECKING:
    from engine.runs.limits import VendorLimits
    from engine.runtime.context import Services


@click.command("eval")
@click.argument("files", type=PATH, nargs=-1, required=True)
@click.option("--offline", is_flag=True, help="answer request blocks (and judges) with the simulator")
@click.option("--against", help="a second version to compare: another diagram file, a git revision (HEAD~1, main), "
              "or a published version (`published`: the live one; `v3`)")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="runs at once")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="run each case N times and report the spread")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--report", type=PATH, help="write one self-contained HTML report here")
@click.option("--junit", type=PATH, help="write JUnit XML here (a testcase per case)")
@click.option("--fail-under", type=click.FloatRange(0, 1), help="exit 1 below this mean score (default: the file's "
              "threshold)")
@click.option("--cache", help="the response cache: a folder, or off (default: .diagrama/cache beside the eval file)")
@click.option("--rpm", multiple=True, help="requests per minute per vendor, claude=50 (judges' too)")
@click.option("--max-concurrent", multiple=True, help="calls in flight, groq=4")
@click.option("--store", "store_url", help="SQLAlchemy URL of the run store the eval is kept in")
@click.option("--runs-dir", type=PATH)
# Long: one command from its options to its exit code, each step a call; split, a dozen options pass on.
def evaluate(files: tuple[Path, ...], offline: bool, against: str | None, concurrency: int, repeat: int, output: str,
             report: Path | None, junit: Path | None, fail_under: float | None, cache: str | None,
             rpm: tuple[str, ...], max_concurrent: tuple[str, ...], store_url: str | None,
             runs_dir: Path | None) -> None:
    """Score a robot's answers on the cases of eval files (*.eval.yaml), optionally beside a second version."""
    import asyncio
    import tempfile

    from engine.errors import DiagramaError, UsageError
    from engine.format.jsonout import dumps_plain
    from engine.runs.evals.evaluate import diagram_at_revision, evaluate, load_for_eval
    from engine.runs.evals.reports import html_report, junit_xml, table_lines
    from engine.runs.evals.results import verdict_threshold
    from engine.runs.published import published_diagram

    registry = blocks_registry()
    folder = runs_folder(runs_dir)
    reports: list[dict[str, Any]] = []
    worst = 0
    for path in files:
        with tempfile.TemporaryDirectory(prefix="diagrama-eval-") as scratch:
            try:
                loaded, diagram = load_for_eval(path, registry, reply_problem=_reply_problem)
                other, revision, shown_against = None, None, ""
                if against is not None:
                    other_path = Path(against)
                    pinned = published_diagram(loaded.diagram, against)
                    if pinned is not None:
                        other_path, revision, shown_against = pinned[0], pinned[1], loaded.diagram.name
                    elif other_path.suffix in (".yaml", ".yml") and not other_path.is_file():
                        raise UsageError(f"--against {against}: no such diagram file (or give a git revision)")
                    elif other_path.suffix not in (".yaml", ".yml"):
                        revision = against
                        other_path = diagram_at_revision(loaded.diagram, against, Path(scratch))
                        shown_against = other_path.relative_to(scratch).as_posix()
                    other = load_for_eval(path, registry, other_path, _reply_problem)[1]
                threshold = verdict_threshold(loaded, fail_under)
                services = _services(offline, cache, path)
                services.limits = _limits(rpm, max_concurrent)
                result = asyncio.run(evaluate(loaded, diagram, services=services, runs_dir=folder, threshold=threshold,
                                              concurrency=concurrency, repeat=repeat, against=other))
            except DiagramaError as exc:
                raise fail(exc) from None
            except KeyboardInterrupt:
                sys.stderr.write("stopped: the eval was interrupted, nothing was scored or kept\n")
                raise click.exceptions.Exit(130) from None
        result = redactor().value(result)  # an answer may quote a key from the environment: never in a report
        result["eval"] = str(path)
        if revision is not None:  # the diagram as the revision has it, not where it was written out for the eval
            result["against"]["revision"] = revision
            result["against"]["summary"]["diagram"] = f"{revision}:{shown_against}"
        _keep(result, path, diagram, revision, folder, store_url)
        reports.append(result)
        title = f"eval {path.name}" + (f" against {against}" if against else "")
        if report is not None:
            html_report(result, title, _each(report, path, len(files)))
        if junit is not None:
            junit_xml(result, path.name, _each(junit, path, len(files)))
        if output == "text":
            sys.stdout.write(f"{title}\n" + "".join(f"{line}\n" for line in table_lines(result)))
        if threshold is not None and result["summary"]["score"] < threshold:
            worst = 1
            if output == "text":
                sys.stdout.write(f"score {result['summary']['score']:.3f} is below {threshold:g}\n")
    if output == "json":
        sys.stdout.write(dumps_plain(reports[0] if len(reports) == 1 else reports) + "\n")
    raise click.exceptions.Exit(worst)


def _each(target: Path, path: Path, count: int) -> Path:
    """The report file for eval `path`: `target` itself for one eval, `target`'s stem plus the eval's for several."""
    if count == 1:
        return target
    return target.with_name(f"{target.stem}-{path.name.removesuffix('.yaml').removesuffix('.eval')}{target.suffix}")


def _limits(rpm: tuple[str, ...], max_concurrent: tuple[str, ...]) -> VendorLimits:
    """`--rpm` and `--max-concurrent` as `diagrama batch` reads them: slots every request (and judge) waits for."""
    import asyncio

    from engine.errors import UsageError
    from engine.runs.limits import TokenBucket, VendorLimits, parse_limits

    try:
        per_minute = parse_limits(list(rpm), "--rpm")
        in_flight = parse_limits(list(max_concurrent), "--max-concurrent")
    except ValueError as exc:
        raise fail(UsageError(str(exc))) from None
    return VendorLimits(rpm={vendor: TokenBucket(value) for vendor, value in per_minute.items()},
                        concurrent={vendor: asyncio.Semaphore(int(value)) for vendor, value in in_flight.items()})


def _services(offline: bool, cache: str | None, eval_file: Path) -> Services:
    """The eval's services: offline or not, and the response cache (`--cache DIR`, by default one beside the eval
    file; `off`: none), where this installation has one (engine.providers.response_cache)."""
    import dataclasses
    import importlib

    from engine.runtime.context import Services

    services = Services(offline=offline)
    cached = "response_cache" in {field.name for field in dataclasses.fields(Services)}
    if offline or cache == "off" or not cached or not has_module("engine.providers.response_cache"):
        return services  # the simulator is free already, and never cached
    caching = importlib.import_module("engine.providers.response_cache")
    folder = Path(cache) if cache is not None else caching.default_folder(eval_file)
    setattr(services, "response_cache", caching.open_cache(folder))  # noqa: B010  # a field only where the cache is
    return services


def _keep(result: dict[str, Any], path: Path, diagram: Any, revision: str | None, folder: Path,
          store_url: str | None) -> None:
    """The eval handed to the run store, where the store keeps evals (`record_eval`); nothing otherwise."""
    if not has_module("sqlalchemy"):
        return
    from engine.runs.store import RunStore

    if not hasattr(RunStore, "record_eval"):
        return
    from engine.runs.evals.results import keep_eval
    from engine.runs.store import open_store
    from engine.runtime.trace import new_run_id

    store = open_store(store_url, folder)
    try:
        keep_eval(store, result, eval_id="e" + new_run_id(), eval_file=str(path.resolve()),
                  diagram=str(diagram.path.resolve()), content_hash=diagram.content_hash, revision=revision)
    finally:
        store.close()


def _reply_problem(reply: dict[str, Any]) -> str | None:
    """What is wrong with one of a case's scripted replies, read as a scenario's are (engine.testing.replies)."""
    from pydantic import ValidationError

    from engine.format.validation import dotted, validation_message
    from engine.testing.replies import Reply

    try:
        Reply.model_validate(reply)
    except ValidationError as exc:
        return "; ".join(f"{dotted(error['loc']) or 'reply'}: {validation_message(error)}"
                         for error in exc.errors(include_url=False))
    return None
