"""An eval's run: every case through its diagram, N at a time, each as one turn (engine.runs.turn), then scored.

The cases go to a pool of workers over one queue, as a batch's rows do (engine.runs.batch): each case's run is
`new_turn` + `run_turn`, the one way every door starts a run, with the batch's services (limits, the simulator, the
client pool) shared by all. `repeat` runs each case that many times: its score is their mean, and the spread of the
eval's score over the repeats says how much of a difference is noise.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.runs.evals.scorers import Scored, Scoring, score_case
from engine.runs.turn import new_turn, run_turn

if TYPE_CHECKING:
    from engine.compile.diagram import Diagram
    from engine.runs.evals.spec import Case, LoadedEval
    from engine.runtime.context import Services
    from engine.runtime.result import RunResult

__all__ = ["JUDGES_FILE", "CaseOutcome", "CaseRun", "EvalOutcome", "run_eval"]


@dataclass(frozen=True, slots=True)
class CaseRun:
    """One run of a case and what its scorers made of it."""

    result: RunResult
    scores: dict[str, Scored]
    latency_ms: float
    output: Any


@dataclass
class CaseOutcome:
    """One case's runs, one per repeat in repeat order (None: not run yet), and their scores."""

    case: Case
    slots: list[CaseRun | None] = field(default_factory=list)

    @property
    def runs(self) -> list[CaseRun]:
        return [run for run in self.slots if run is not None]

    @property
    def last(self) -> CaseRun:
        return self.runs[-1]

    def scorer_mean(self, scorer: str) -> float:
        return statistics.fmean(run.scores[scorer].score for run in self.runs)

    @property
    def score(self) -> float:
        """The mean of its scorers' scores, over its repeats."""
        return statistics.fmean(self.repeat_score(run) for run in self.runs)

    @staticmethod
    def repeat_score(run: CaseRun) -> float:
        return statistics.fmean(scored.score for scored in run.scores.values())


@dataclass
class EvalOutcome:
    """Every case's outcome, in the file's order, and what was run."""

    diagram: Diagram
    cases: list[CaseOutcome]
    repeat: int
    scorer_ids: list[str]

    @property
    def score(self) -> float:
        scored = [case.score for case in self.cases if case.runs]
        return statistics.fmean(scored) if scored else 0.0

    @property
    def spread(self) -> float:
        """How far the eval's score moved between repeats (0 with one run a case)."""
        if self.repeat < 2 or not self.cases:
            return 0.0
        means = [statistics.fmean(case.repeat_score(run) for case in self.cases if (run := case.slots[index]))
                 for index in range(self.repeat)]
        return max(means) - min(means)


Progress = Callable[[CaseOutcome, int], None]
"""progress(case, repeat index): one run scored."""


JUDGES_FILE = "judges.jsonl"
"""Beside a case's run trace: what its judges were asked and answered, one JSON object a line."""


def _write_judges(result: RunResult, judged: list[dict[str, Any]]) -> None:
    """The judges' requests, replies and verdicts beside the run's trace, scrubbed of keys as the trace is."""
    import orjson

    from engine.format.values import json_default

    assert result.trace is not None
    lines = [orjson.dumps(result.redact(line), default=json_default) + b"\n" for line in judged]
    result.trace.with_name(JUDGES_FILE).write_bytes(b"".join(lines))


def _scripted(services: Services, case: Case) -> Services:
    """The services of a case that scripts its replies: the shared ones, offline, with a simulator of its own that
    answers each request block (and each judge) named in `replies` with its replies in order, as a scenario does."""
    from engine.providers.simulator import Simulator
    from engine.runtime.context import Services

    own = Services(offline=True, environ=services.environ)
    own.share(services)
    own.offline = True
    own.simulator = Simulator({name: [dict(reply) for reply in replies] for name, replies in case.replies.items()})
    own.response_cache = None  # scripted answers are the case's own: never kept, never read back
    return own


# One pool over one queue, as run_batch's: the case, the services and the results share its state on purpose.
async def run_eval(loaded: LoadedEval, diagram: Diagram, *, services: Services, runs_dir: Path | None,
                   concurrency: int = 8, repeat: int = 1, progress: Progress | None = None) -> EvalOutcome:
    """Run each case `repeat` times, `concurrency` at a time, and score every run."""
    outcomes = [CaseOutcome(case, [None] * repeat) for case in loaded.cases]
    queue: asyncio.Queue[tuple[CaseOutcome, int]] = asyncio.Queue()
    for index in range(repeat):
        for outcome in outcomes:
            queue.put_nowait((outcome, index))
    scorers = loaded.spec.scorers
    output_name = loaded.spec.output

    async def worker() -> None:
        while True:
            try:
                outcome, index = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            case = outcome.case
            ran_on = _scripted(services, case) if case.replies else services
            clock = case.clock or loaded.spec.clock
            if clock is not None:  # the case's runs read this instant as now(): its answers do not drift by the day
                ran_on = dataclasses.replace(ran_on, run_clock=clock)
            turn = new_turn(diagram, case.inputs, store=None)
            result = await run_turn(turn, services=ran_on, runs_dir=runs_dir)
            output = result.variables.get(output_name)
            # The run's cost in USD; None when a request's price is unknown, which `max_cost` takes as not met.
            cost = result.cost.get("usd")
            seen = Scoring(result, result.redact(case.inputs), case.expected, output, result.duration * 1000, cost)
            judged: list[dict[str, Any]] = []
            scores = await score_case(scorers, seen, ran_on, f"eval/{case.id}", judged, scripted=case.replies)
            if judged and result.trace is not None:
                _write_judges(result, judged)
            outcome.slots[index] = CaseRun(result, scores, seen.latency_ms, output)
            if progress is not None:
                progress(outcome, index)

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return EvalOutcome(diagram, outcomes, repeat, [scorer.id for scorer in scorers])
