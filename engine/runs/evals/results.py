"""An eval's results as data: the `--output json` object, the deltas against a second version, the verdict, and the
hand-off to the run store (`keep_eval`, for a store that keeps evals)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.runs.evals.runner import CaseOutcome, EvalOutcome

if TYPE_CHECKING:
    from engine.runs.evals.spec import LoadedEval

__all__ = ["case_passed", "eval_json", "keep_eval", "percentile", "verdict_threshold", "with_deltas"]


def percentile(values: list[float], share: float) -> float | None:
    """The value at `share` of the sorted values (nearest rank), as the batch summary's p95 is; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * share))], 1)


def verdict_threshold(loaded: LoadedEval, fail_under: float | None) -> float | None:
    """The mean score below which the eval fails: `--fail-under`, else the file's `threshold`, else none."""
    return fail_under if fail_under is not None else loaded.spec.threshold


def case_passed(score: float, threshold: float | None) -> bool:
    """A case passes at or above the threshold; without one, only with every scorer met (a score of 1)."""
    return score >= (threshold if threshold is not None else 1.0)


def eval_json(outcome: EvalOutcome, threshold: float | None) -> dict[str, Any]:
    """`summary` and `cases` of one version's eval, as `--output json` prints them (README, "Evaluations")."""
    cases = [_case_json(case, threshold) for case in outcome.cases if case.runs]
    latencies = [run.latency_ms for case in outcome.cases for run in case.runs]
    passed = sum(1 for case in cases if case["passed"])
    summary = {
        "score": round(outcome.score, 4), "cases": len(cases), "passed": passed, "failed": len(cases) - passed,
        "threshold": threshold, "cost": _total_cost(outcome),
        "tokens": sum(run.result.tokens for case in outcome.cases for run in case.runs),
        "judge_tokens": sum(scored.tokens for case in outcome.cases for run in case.runs
                            for scored in run.scores.values()),
        "latency_ms": {"p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95)},
        "scorers": {scorer: round(statistics.fmean(case.scorer_mean(scorer) for case in outcome.cases if case.runs), 4)
                    if cases else None for scorer in outcome.scorer_ids},
        "repeat": outcome.repeat, "spread": round(outcome.spread, 4),
        "diagram": str(outcome.diagram.path), "content_hash": outcome.diagram.content_hash,
    }
    return {"summary": summary, "cases": cases}


def _case_json(case: CaseOutcome, threshold: float | None) -> dict[str, Any]:
    run = case.last
    last = run.result
    reasons = {scorer: scored.reason for scorer, scored in run.scores.items() if scored.reason}
    judge_reason = next((scored.reason for scored in run.scores.values() if scored.judged), None)
    return {
        "id": case.case.id, "score": round(case.score, 4), "passed": case_passed(case.score, threshold),
        "scores": {scorer: round(case.scorer_mean(scorer), 4) for scorer in run.scores},
        "status": last.status, "run_id": last.run_id, "trace": str(last.trace) if last.trace else None,
        "judges": _judges_file(last),
        "reason": judge_reason, "reasons": reasons, "tokens": sum(each.result.tokens for each in case.runs),
        "cost": _sum_known(each.result.cost.get("usd") for each in case.runs),
        "judge_tokens": sum(scored.tokens for each in case.runs for scored in each.scores.values()),
        "latency_ms": round(statistics.fmean(each.latency_ms for each in case.runs), 1),
        "inputs": last.redact(case.case.inputs), "expected": last.redact(case.case.expected),
        "output": last.redact(run.output),
    }


def _total_cost(outcome: EvalOutcome) -> float | None:
    """What the eval's runs cost in USD (its judges' requests apart); None when any run's cost is unknown."""
    return _sum_known(run.result.cost.get("usd") for case in outcome.cases for run in case.runs)


def _sum_known(costs: Iterable[float | None]) -> float | None:
    """The sum, or None (unknown) when any is: a partial sum is never shown as the whole."""
    total = 0.0
    for cost in costs:
        if cost is None:
            return None
        total += cost
    return round(total, 9)


def _judges_file(result: Any) -> str | None:
    """Where the case's judges were traced, when they were."""
    from engine.runs.evals.runner import JUDGES_FILE

    found = result.trace.with_name(JUDGES_FILE) if result.trace is not None else None
    return str(found) if found is not None and found.is_file() else None


def with_deltas(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """`ours` with `against` (the other version's object) and `deltas`: per case ours minus theirs, the cases that got
    worse first; a difference within the larger repeat spread is marked `noise`."""
    spread = max(float(ours["summary"].get("spread") or 0), float(theirs["summary"].get("spread") or 0))
    other = {case["id"]: case for case in theirs["cases"]}
    deltas = []
    for case in ours["cases"]:
        before = other.get(case["id"])
        if before is None:
            continue
        delta = round(case["score"] - before["score"], 4)
        deltas.append({"id": case["id"], "score": case["score"], "against": before["score"], "delta": delta,
                       "noise": spread > 0 and abs(delta) <= spread})
    deltas.sort(key=lambda row: (row["delta"], row["id"]))
    total = round(ours["summary"]["score"] - theirs["summary"]["score"], 4)
    summary_delta = {"score": total, "noise": spread > 0 and abs(total) <= spread, "spread": spread}
    return {**ours, "against": theirs, "deltas": deltas, "delta": summary_delta}


def keep_eval(store: Any, report: dict[str, Any], *, eval_id: str, eval_file: str, diagram: str, content_hash: str,
              revision: str | None) -> bool:
    """Hand the eval's JSON to the run store, where one keeps evals (`record_eval`); whether it was kept.

    The contract with the store is this call alone: a store without `record_eval` keeps nothing."""
    record = getattr(store, "record_eval", None) if store is not None else None
    if record is None:
        return False
    record(eval_id=eval_id, eval_file=eval_file, diagram=diagram, content_hash=content_hash, revision=revision,
           report=report)
    return True
