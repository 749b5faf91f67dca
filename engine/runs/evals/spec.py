"""Eval files (`*.eval.yaml`) as data: the models, their JSON Schema, and reading one with file:line problems.

An eval file names a diagram (relative to the file), its cases (a list, or a CSV / JSON Lines file of them), its
scorers and a threshold. Each scorer is a mapping with an `id` and exactly one kind key (`check`, `equals`, …); the
kind is the key written, as a block's `type` is, so an unknown or missing kind is one clear problem.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engine.errors import DiagramInvalid, Problem
from engine.format.validation import validation_message
from engine.format.yamlfile import LineMap, read_yaml

__all__ = ["SCORER_KINDS", "Case", "EvalFile", "JudgeSpec", "LoadedEval", "Scorer", "eval_schema", "load_eval"]

SCORER_KINDS = ("check", "equals", "contains", "matches", "json_schema", "similar", "path_includes",
                "max_latency_ms", "max_cost", "judge")
"""The key that says what a scorer does; a scorer writes exactly one."""


class JudgeSpec(BaseModel):
    """An LLM judge: the model (its vendor is told by its name), the rubric, and the scale it scores on."""

    model_config = ConfigDict(extra="forbid")
    model: str = Field(min_length=1, description="claude-…, gemini-…, or a Groq model id")
    rubric: str = Field(min_length=1, description="the question the judge answers about the case's answer")
    scale: list[float] | Literal["pass/fail", "1-5"] = Field(
        default_factory=lambda: [0.0, 1.0], description="[0, 1], pass/fail, or 1-5 (normalised to [0, 1])")
    max_tokens: int = Field(default=300, gt=0)

    @field_validator("scale", mode="before")
    @classmethod
    def _known_scale(cls, value: Any) -> Any:
        fits = value in ("pass/fail", "1-5") or (
            isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)
            and value[0] < value[1])
        if not fits:
            raise ValueError(f"the scale is [low, high] (e.g. [0, 1]), pass/fail or 1-5, not {value!r}")
        return value


class SimilarSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float | None = Field(default=None, ge=0, le=1,
                                    description="cosine at or above which the score is 1 (else 0); unset: the cosine")


class Scorer(BaseModel):
    """One scorer: an `id` and one kind key. `equals`, `contains` and `similar` left empty compare with `expected`."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$", description="the scorer's name in tables and JSON")
    check: str | None = Field(default=None, description="a template over variables, output, status, path, "
                                                        "expected: true/false or a number in [0, 1]")
    equals: Any = Field(default=None, description="output equals this (empty: the case's expected)")
    contains: str | None = Field(default=None, description="output's text contains this (empty: expected)")
    matches: str | None = Field(default=None, description="an RE2 pattern output's text matches")
    json_schema: dict[str, Any] | None = Field(default=None, description="a JSON Schema output must fit")
    similar: SimilarSpec | None = Field(default=None, description="embedding cosine of output against expected")
    path_includes: str | None = Field(default=None, description="a block id the run reached")
    max_latency_ms: float | None = Field(default=None, gt=0, description="the run took at most this long")
    max_cost: float | None = Field(default=None, ge=0, description="the run cost at most this (unknown: not met)")
    judge: JudgeSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        kinds = [key for key in SCORER_KINDS if key in data]
        if len(kinds) != 1:
            from engine.format.names import suggest

            found = ", ".join(kinds) if kinds else "none"
            strays = [str(key) for key in data if key not in cls.model_fields]
            guess = suggest(strays[0], SCORER_KINDS) if strays else None
            said = f"; '{strays[0]}' is not one ({guess})" if guess else ""
            raise ValueError(f"a scorer has exactly one of {', '.join(SCORER_KINDS)} (found {found}{said})")
        if kinds[0] in ("equals", "contains", "similar") and data[kinds[0]] is None:
            data = {**data, kinds[0]: {} if kinds[0] == "similar" else None}
        return data

    @property
    def kind(self) -> str:
        written = self.model_fields_set
        return next(key for key in SCORER_KINDS if key in written)


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, description="the case's name in tables, JSON and JUnit")
    inputs: dict[str, Any] = Field(default_factory=dict, description="the diagram's inputs for this case")
    expected: Any = Field(default=None, description="any value; scorers read it as `expected`")
    replies: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict, description="scripted replies, as a scenario's: a request block's id (or a judge "
                                          "scorer's id) → its replies in order; the case then runs on them, offline")
    clock: AwareDatetime | None = Field(default=None, description="this case's run clock (now(), today()), over the "
                                                                   "file's")


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    csv: str | None = Field(default=None, description="a CSV file, one case a row: id, expected, the rest inputs")
    jsonl: str | None = Field(default=None, description="a JSON Lines file, one {id, inputs, expected} a line")

    @model_validator(mode="after")
    def _one_file(self) -> CaseFile:
        if (self.csv is None) == (self.jsonl is None):
            raise ValueError("name one file: {csv: cases.csv} or {jsonl: cases.jsonl}")
        return self


class EvalFile(BaseModel):
    """An eval file: a diagram, its cases, their scorers, the threshold."""

    model_config = ConfigDict(extra="forbid")
    diagram: str = Field(description="the diagram file, relative to this file")
    output: str = Field(default="answer", description="the variable scorers read as `output`")
    cases: list[Case] | CaseFile
    scorers: list[Scorer] = Field(min_length=1)
    threshold: float | None = Field(default=None, ge=0, le=1,
                                    description="the mean score below which `diagrama eval` exits 1")
    clock: AwareDatetime | None = Field(default=None, description="the cases' run clock, as now() and today() read "
                                                                   "it (an ISO instant with its offset); none: the "
                                                                   "time each run starts")

    @field_validator("cases", mode="before")
    @classmethod
    def _list_or_file(cls, value: Any) -> Any:
        if not isinstance(value, (list, dict)):
            raise ValueError("cases are a list of {id, inputs, expected}, or {csv: cases.csv} / {jsonl: cases.jsonl}")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> EvalFile:
        seen: set[str] = set()
        for scorer in self.scorers:
            if scorer.id in seen:
                raise ValueError(f"scorer id '{scorer.id}' appears twice")
            seen.add(scorer.id)
        return self


class LoadedEval:
    """An eval file read and checked: its spec, its path, the diagram's path and its cases."""

    def __init__(self, spec: EvalFile, path: Path, cases: list[Case], lines: LineMap) -> None:
        self.spec = spec
        self.path = path
        self.lines = lines
        self.diagram = (path.parent / spec.diagram).resolve()
        self.cases = cases


def eval_schema() -> dict[str, Any]:
    """JSON Schema of an eval file (for editors: `diagrama schema --kind eval`)."""
    schema = EvalFile.model_json_schema(ref_template="#/$defs/{model}")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": "diagrama eval file"}


def load_eval(path: Path, reply_problem: Callable[[dict[str, Any]], str | None] | None = None) -> LoadedEval:
    """Read an eval file; every problem names the file, the line and the field (DiagramInvalid), as diagrams' do.
    `reply_problem`: what is wrong with one scripted reply (the scenarios' reply model, engine.testing.replies, which
    this layer does not import), None when it fits."""
    data, lines = read_yaml(path)
    try:
        spec = EvalFile.model_validate(data)
    except ValidationError as exc:
        errors = [error for error in exc.errors(include_url=False) if _branch_fits(error)]
        raise DiagramInvalid([_problem(path, lines, error) for error in errors]) from None
    problems: list[Problem] = []
    seen: set[str] = set()
    cases = spec.cases if isinstance(spec.cases, list) else _case_file(path, spec.cases, lines, problems)
    for index, case in enumerate(cases):
        if case.id in seen:
            problems.append(Problem(str(path), lines.line(("cases", index, "id")), f"case id '{case.id}' appears twice",
                                    field=f"cases.{index}.id", hint="give each case its own id"))
        seen.add(case.id)
        if reply_problem is not None:
            _check_replies(path, lines, index, case, reply_problem, problems)
    if not (path.parent / spec.diagram).is_file():
        problems.append(Problem(str(path), lines.line(("diagram",)), f"no diagram file {spec.diagram} beside this file",
                                field="diagram", hint="the path is relative to the eval file"))
    _check_templates(path, spec, lines, problems)
    if problems:
        raise DiagramInvalid(problems)
    return LoadedEval(spec, path, cases, lines)


def _check_replies(path: Path, lines: LineMap, index: int, case: Case,
                   reply_problem: Callable[[dict[str, Any]], str | None], problems: list[Problem]) -> None:
    for name, replies in case.replies.items():
        for number, reply in enumerate(replies):
            said = reply_problem(reply)
            if said is not None:
                where = ("cases", index, "replies", name, number)
                problems.append(Problem(str(path), lines.line(where), f"reply {number + 1} for '{name}': {said}",
                                        field=".".join(map(str, where)),
                                        hint="a reply is a scenario's: text, tool_calls, output, error, …"))


def _is_branch(part: Any) -> bool:
    """A union member's tag pydantic puts in an error's `loc` (`list[Case]`, `literal['pass/fail','1-5']`)."""
    return isinstance(part, str) and ("[" in part or part == "CaseFile")


def _branch_fits(error: Any) -> bool:
    """Whether an error of a union's member is of the member the value was written as (a list for `cases: [...]`, a
    mapping for `cases: {csv: ...}`): the other member's complaint would only say it is not that."""
    branch = next((part for part in error["loc"] if _is_branch(part)), None)
    if branch is None:
        return True
    value = error.get("input")
    if error["type"] in ("list_type", "dict_type", "model_type", "literal_error"):
        return False  # "not a list" beside the list's own problems, or "not one of …" beside a list's
    return not (branch.startswith("list") and isinstance(value, dict) and "csv" in value)


def _problem(path: Path, lines: LineMap, error: Any) -> Problem:
    loc = tuple(part for part in error["loc"] if not _is_branch(part))
    if error["type"] == "extra_forbidden":
        message, hint = "unknown key", f"the keys are {', '.join(_keys_at(loc))}" if _keys_at(loc) else None
    elif error["type"] == "value_error":  # our validators' own words, which name what they got
        message, hint = str(error["msg"]).removeprefix("Value error, "), None
    else:
        message, hint = validation_message(error), None
    return Problem(str(path), lines.line(loc), message, field=".".join(map(str, loc)) or None, hint=hint,
                   code=error["type"])


def _keys_at(loc: tuple[Any, ...]) -> list[str]:
    models = {0: EvalFile}
    head = loc[:-1]
    model: type[BaseModel] = models[0]
    if head[:1] == ("scorers",):
        model = JudgeSpec if "judge" in head else SimilarSpec if "similar" in head else Scorer
    elif head[:1] == ("cases",):
        model = Case if len(head) > 1 else CaseFile
    return list(model.model_fields)


def _check_templates(path: Path, spec: EvalFile, lines: LineMap, problems: list[Problem]) -> None:
    """A `check` template that cannot compile, a `matches` pattern RE2 refuses, a judge whose model cannot answer
    with structured output, a `json_schema` that is none: each a problem at its line."""
    from engine.compile.regex import check_pattern
    from engine.runs.evals.scorers import template_problem

    for index, scorer in enumerate(spec.scorers):
        where: tuple[str | int, ...] = ("scorers", index, scorer.kind)
        refusal: tuple[str, str | None] | None = None
        if scorer.check is not None:
            refusal = template_problem(scorer.check)
        elif scorer.matches is not None:
            refusal = check_pattern(scorer.matches)
        elif scorer.judge is not None:
            from engine.runs.evals.judge import judge_refusal

            said = judge_refusal(scorer.judge)
            where = ("scorers", index, "judge", "model")
            refusal = (said, "pick a model of the vendor's that takes a response schema") if said else None
        elif scorer.json_schema is not None:
            from engine.format.schemas import schema_refusal

            said = schema_refusal(scorer.json_schema)
            refusal = (said, None) if said else None
        if refusal is not None:
            problems.append(Problem(str(path), lines.line(where), refusal[0], field=".".join(map(str, where)),
                                    hint=refusal[1]))


def _case_file(path: Path, spec: CaseFile, lines: LineMap, problems: list[Problem]) -> list[Case]:
    """The cases of a CSV file (columns `id`, `expected`, the rest inputs) or a JSON Lines file."""
    name = spec.csv or spec.jsonl or ""
    source = path.parent / name
    field = "cases.csv" if spec.csv else "cases.jsonl"
    try:
        text = source.read_text(encoding="utf-8-sig")
    except OSError as exc:
        problems.append(Problem(str(path), lines.line(("cases",)), f"cannot read {name}: {exc.strerror}", field=field,
                                hint="the path is relative to the eval file"))
        return []
    found: list[Case] = []
    if spec.csv:
        reader = csv.DictReader(io.StringIO(text))
        for number, row in enumerate(reader, start=1):
            inputs = {key: value for key, value in row.items() if key not in ("id", "expected") and key}
            found.append(Case(id=row.get("id") or f"row{number}", inputs=inputs, expected=row.get("expected")))
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append(Case.model_validate(orjson.loads(line)))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            problems.append(Problem(str(source), number, f"not a case ({{id, inputs, expected}}): "
                                    f"{str(exc).splitlines()[0]}", field=f"line {number}"))
    return found
