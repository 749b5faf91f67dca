"""Scorers: what an eval file's scorers make of one case's run, each a score in [0, 1] and, where it has one, a reason.

A `check` is a template rendered in the engine's sandbox (the one diagrams' templates use); `matches` is RE2, as the
templates' regex filters are; `json_schema` is the engine's validator; `similar` the default local embedder; `judge`
asks a model through the providers' request path (the simulator when offline), for a structured answer.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import DiagramaError
from engine.format.jsonout import dumps_plain

if TYPE_CHECKING:
    from engine.runs.evals.spec import JudgeSpec, Scorer
    from engine.runtime.context import Services
    from engine.runtime.result import RunResult

__all__ = ["Scored", "Scoring", "score_case", "template_problem"]


@dataclass(frozen=True, slots=True)
class Scoring:
    """What a scorer reads of one case's run."""

    result: RunResult
    inputs: dict[str, Any]
    expected: Any
    output: Any
    latency_ms: float
    cost: float | None
    """None until the run reports a cost (then `max_cost` is not met: never taken as free)."""


@dataclass(frozen=True, slots=True)
class Scored:
    score: float
    reason: str | None = None
    judged: bool = False
    """Given by a judge (its reason is the case's `reason`)."""
    tokens: int = 0
    """What the judge's request took (input and output tokens): the eval's own spend, beside its runs'."""


CHECK_NAMES = ("variables", "output", "status", "path", "expected", "inputs")
"""What a `check` template may read of its case."""


@functools.cache
def _templates() -> Any:
    """The engine's template environment (the sandbox diagrams' templates run in), made once a process."""
    from engine.compile.templating import TemplateEnv

    return TemplateEnv()


@functools.lru_cache(maxsize=256)
def _template(source: str) -> Any:
    return _templates().compile(source)


def template_problem(source: str) -> tuple[str, str | None] | None:
    """(message, hint) when a `check` template cannot compile, or reads a name a case has not; None when it can."""
    from engine.format.names import suggest

    try:
        names = _template(source).names
    except Exception as exc:  # a template is user code: any failure to compile it is the file's problem
        return f"the template cannot be compiled: {exc}", "a check is one jinja2 expression, {{ … }}"
    unknown = sorted(set(names) - set(CHECK_NAMES) - set(_templates().functions))
    if unknown:
        return (f"the template reads '{unknown[0]}', which a check does not have",
                suggest(unknown[0], CHECK_NAMES) or f"a check reads {', '.join(CHECK_NAMES)}")
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else dumps_plain(value)


def _as_score(value: Any) -> Scored:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if isinstance(value, bool):
        return Scored(1.0 if value else 0.0)
    if isinstance(value, (int, float)) and 0 <= value <= 1:
        return Scored(float(value))
    return Scored(0.0, f"the check gave {value!r}, not true/false or a number in [0, 1]")


def _check(source: str, seen: Scoring) -> Scored:
    result = seen.result
    env = _templates()
    scope = env.new_scope({"variables": result.variables, "output": seen.output, "status": result.status,
                           "path": result.path, "expected": seen.expected, "inputs": seen.inputs})
    try:
        value = _template(source).evaluate(scope)
    except Exception as exc:  # the template fails on this case's values: the case scores 0, saying why
        return Scored(0.0, f"the check failed: {type(exc).__name__}: {exc}")
    return _as_score(value)


def _similar(threshold: float | None, seen: Scoring) -> Scored:
    import numpy as np

    from engine.tools.embeddings import make_embedder

    vectors = _embedder(make_embedder).embed([_text(seen.output), _text(seen.expected)])
    cosine = max(0.0, float(np.dot(vectors[0], vectors[1])))
    if threshold is None:
        return Scored(round(cosine, 4))
    return Scored(1.0 if cosine >= threshold else 0.0, f"cosine {cosine:.3f}")


@functools.cache
def _embedder(make: Any) -> Any:
    return make(None)


def _matches(pattern: str, seen: Scoring) -> Scored:
    from engine.compile.regex import REGEX_FILTERS

    found = REGEX_FILTERS["regex_search"](_text(seen.output), pattern)
    return Scored(1.0 if found else 0.0)


def _json_schema(schema: dict[str, Any], seen: Scoring) -> Scored:
    from engine.format.schemas import schema_problems

    problems = schema_problems(schema, seen.output, root="output")
    return Scored(0.0, "; ".join(problems[:3])) if problems else Scored(1.0)


def _plain_score(scorer: Scorer, seen: Scoring) -> Scored:
    """Every scorer but the judge: no I/O, microseconds."""
    kind = scorer.kind
    if kind == "check":
        return _check(str(scorer.check), seen)
    if kind == "equals":
        wanted = seen.expected if scorer.equals is None else scorer.equals
        return Scored(1.0 if seen.output == wanted else 0.0)
    if kind == "contains":
        wanted = seen.expected if scorer.contains is None else scorer.contains
        return Scored(1.0 if _text(wanted) in _text(seen.output) else 0.0)
    if kind == "matches":
        return _matches(str(scorer.matches), seen)
    if kind == "json_schema":
        return _json_schema(scorer.json_schema or {}, seen)
    if kind == "similar":
        return _similar(scorer.similar.threshold if scorer.similar else None, seen)
    if kind == "path_includes":
        return Scored(1.0 if scorer.path_includes in seen.result.path else 0.0)
    if kind == "max_latency_ms":
        limit = float(scorer.max_latency_ms or 0)
        return Scored(1.0 if seen.latency_ms <= limit else 0.0, f"{seen.latency_ms:.0f} ms")
    if seen.cost is None:  # max_cost: a run that reports no cost has not met a cost limit
        return Scored(0.0, "cost unknown")
    return Scored(1.0 if seen.cost <= float(scorer.max_cost or 0) else 0.0, f"cost {seen.cost:g}")


async def score_case(scorers: list[Scorer], seen: Scoring, services: Services, seed_key: str,
                     trace: list[dict[str, Any]] | None = None, scripted: Collection[str] = ()) -> dict[str, Scored]:
    """Each scorer's score of one case, by scorer id. A judge that cannot answer scores 0 with its error as reason;
    `trace` hears what each judge was asked and said. A judge whose id the case scripts replies for (`scripted`) asks
    under that id, so its answers are the scripted ones; else under `seed_key`, which seeds the simulator's."""
    scores: dict[str, Scored] = {}
    for scorer in scorers:
        if scorer.judge is not None:
            from engine.runs.evals.judge import ask_judge

            try:
                block = scorer.id if scorer.id in scripted else f"{seed_key}/{scorer.id}"
                scores[scorer.id] = await ask_judge(scorer.judge, seen, services, block, trace)
            except DiagramaError as exc:
                scores[scorer.id] = Scored(0.0, f"the judge failed: {exc}", judged=True)
        else:
            scores[scorer.id] = _plain_score(scorer, seen)
    return scores


def judge_prompt(judge: JudgeSpec, seen: Scoring) -> str:
    """What the judge reads: the rubric, the case's inputs, its expected answer and the robot's answer."""
    return (f"Rubric: {judge.rubric}\n\nInputs: {_text(seen.inputs)}\n\nExpected: {_text(seen.expected)}\n\n"
            f"Answer: {_text(seen.output)}")
