"""One eval from its file to its JSON object: the file and its diagram loaded and checked, the cases run and scored,
and, with a second version (another diagram file, or the same one at a git revision), that one run on the same cases
and set beside it."""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import DiagramInvalid, Problem, UsageError
from engine.runs.evals.results import eval_json, with_deltas
from engine.runs.evals.runner import run_eval
from engine.runs.evals.spec import LoadedEval, load_eval

if TYPE_CHECKING:
    from engine.compile.block import BlockRegistry
    from engine.compile.diagram import Diagram
    from engine.runtime.context import Services

__all__ = ["checked_cases", "diagram_at_revision", "evaluate", "load_for_eval"]


def load_for_eval(path: Path, registry: BlockRegistry, diagram: Path | None = None,
                  reply_problem: Callable[[dict[str, Any]], str | None] | None = None) -> tuple[LoadedEval, Diagram]:
    """The eval file and its diagram (or `diagram`, a second version), the cases' inputs checked against its Start
    and their scripted replies against its blocks and judges (`reply_problem`: one reply's fault, as load_eval's).

    DiagramInvalid for a bad eval file or diagram, each problem at its file and line."""
    from engine.compile.loader import load_diagram

    loaded = load_eval(path, reply_problem)
    compiled = load_diagram(diagram or loaded.diagram, registry)
    checked_cases(loaded, compiled)
    return loaded, compiled


def checked_cases(loaded: LoadedEval, diagram: Diagram) -> None:
    """Each case's inputs typed by the Start inputs' defaults (CSV cells are text) and known to the diagram."""
    from engine.compile.inputs import check_inputs, typed_input

    problems: list[Problem] = []
    for index, case in enumerate(loaded.cases):
        try:
            check_inputs(diagram, case.inputs)
            for name, value in list(case.inputs.items()):
                default = diagram.settings.inputs[name]
                if isinstance(value, str) and not isinstance(default, str):
                    case.inputs[name] = typed_input(name, value, default)
        except UsageError as exc:
            problems.append(Problem(str(loaded.path), loaded.lines.line(("cases", index, "inputs")), str(exc),
                                    field=f"cases.{index}.inputs",
                                    hint=f"the inputs of {diagram.path.name} are "
                                         f"{', '.join(diagram.settings.inputs) or 'none'}"))
        judges = {scorer.id for scorer in loaded.spec.scorers if scorer.judge is not None}
        for name in case.replies:
            if name.split("/")[0] not in diagram.blocks and name not in judges:
                problems.append(Problem(str(loaded.path), loaded.lines.line(("cases", index, "replies", name)),
                                        f"replies for '{name}', which is neither a block of {diagram.path.name} nor "
                                        "a judge's id", field=f"cases.{index}.replies.{name}",
                                        hint="name a request block (sub/ask inside a Subdiagram) or a judge scorer"))
    if problems:
        raise DiagramInvalid(problems)


def diagram_at_revision(diagram: Path, revision: str, into: Path) -> Path:
    """The diagram as git revision `revision` has it, its whole folder written under `into` (so that the files beside
    it, a subdiagram or a registry, come as they were too); the path of the diagram there. UsageError when git
    cannot say."""
    folder = diagram.resolve().parent
    top = _git(folder, "rev-parse", "--show-toplevel").decode().strip()
    inside = folder.relative_to(Path(top).resolve())
    archive = _git(Path(top), "archive", "--format=tar", revision, "--", str(inside) if str(inside) != "." else ".")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    found = into / inside / diagram.name
    if not found.is_file():
        raise UsageError(f"{diagram.name} is not in {inside} at revision {revision}")
    return found


def _git(where: Path, *arguments: str) -> bytes:
    try:
        done = subprocess.run(["git", *arguments], cwd=where, capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"git {arguments[0]} could not run: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"git {arguments[0]}: {said[-1] if said else 'failed'}")
    return done.stdout


async def evaluate(loaded: LoadedEval, diagram: Diagram, *, services: Services, runs_dir: Path | None,
                   threshold: float | None, concurrency: int = 8, repeat: int = 1,
                   against: Diagram | None = None) -> dict[str, Any]:
    """The eval's JSON object (`summary`, `cases`; with `against`, that version's object and the `deltas`)."""
    ours = eval_json(await run_eval(loaded, diagram, services=services, runs_dir=runs_dir, concurrency=concurrency,
                                    repeat=repeat), threshold)
    if against is None:
        return ours
    theirs = eval_json(await run_eval(loaded, against, services=services, runs_dir=runs_dir, concurrency=concurrency,
                                      repeat=repeat), threshold)
    return with_deltas(ours, theirs)
