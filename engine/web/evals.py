"""The studio's eval endpoints: a diagram's recorded eval runs (`diagrama eval`, kept in the run store) and one of
them with its report, for the page's Evaluations tab (its score history, and any two side by side).

Their answers' models are here, beside the routes (engine.web.api_schema joins them into the page's types with
engine.web.models'). A report is read leniently: the keys the page shows are taken, any others are left out. Only
evals of the folder's own diagrams are shown, as with runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from engine.web.files import Folder, FolderError
from engine.web.http import answer
from engine.web.models import Answer

__all__ = ["EvalCase", "EvalListed", "EvalRecord", "EvalReport", "EvalRoutes", "EvalSummary"]

_LIMIT = 200


class _Read(BaseModel):
    """A part of a recorded report: the keys the page reads, others ignored (the report is `diagrama eval`'s)."""

    model_config = ConfigDict(extra="ignore")


class EvalSummary(_Read):
    score: float | None = Field(default=None, description="the mean score over the cases, 0 to 1")
    cases: int | None = None
    passed: int | None = None
    failed: int | None = None
    tokens: int | None = None
    latency_ms: dict[str, float | None] = Field(default_factory=dict, description="`p50`, `p95`")
    scorers: dict[str, float | None] = Field(default_factory=dict, description="scorer id → its mean score")


class EvalCase(_Read):
    id: str
    score: float | None = None
    scores: dict[str, float | None] = Field(default_factory=dict, description="scorer id → this case's score")
    status: str | None = None
    run_id: str | None = Field(default=None, description="the case's run (GET /api/runs/{run_id})")
    reason: str | None = Field(default=None, description="a judge's one-line reason")


class EvalReport(_Read):
    summary: EvalSummary = Field(default_factory=EvalSummary)
    cases: list[EvalCase] = Field(default_factory=list)


class EvalListed(Answer):
    """An eval run as the Evaluations tab lists it: `created` in seconds since the epoch; `eval_file` relative to
    the folder (its name alone when it lies outside)."""

    eval_id: str
    eval_file: str
    diagram: str
    content_hash: str
    revision: str | None
    created: float
    score: float | None
    cases: int | None
    passed: int | None
    failed: int | None


class EvalRecord(EvalListed):
    """`GET /api/diagrams/{path}/evals/{eval_id}`: the eval run and its report (summary and per-case scores)."""

    report: EvalReport


class EvalRoutes:
    def __init__(self, folder: Folder, runs_dir: Path) -> None:
        self.folder = folder
        self.runs_dir = runs_dir

    def _ask(self, question: Any) -> Any:
        """What the run store answers (`question(store)`); None when there is none (nothing recorded, or SQLAlchemy
        not installed: the batch extra)."""
        try:
            from engine.runs.store import open_recorded_store
        except ImportError:
            return None
        store = open_recorded_store(self.runs_dir)
        if store is None:
            return None
        try:
            return question(store)
        finally:
            store.close()

    def _listed(self, row: dict[str, Any]) -> dict[str, Any]:
        names = EvalListed.model_fields
        return {**{name: row[name] for name in names},
                "eval_file": self.folder.relative(Path(row["eval_file"])),
                "diagram": self.folder.relative(Path(row["diagram"]))}

    async def listing(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        found = await asyncio.to_thread(self._ask, lambda store: store.evals(path, limit=_LIMIT)) or []
        return answer([EvalListed.model_validate(self._listed(row)) for row in found])

    async def get(self, request: Request) -> Response:
        path = self.folder.diagram(request.path_params["path"])
        row = await asyncio.to_thread(self._ask, lambda store: store.eval(request.path_params["eval_id"]))
        if row is None or Path(row["diagram"]) != path:  # only this diagram's evals, so only the folder's
            raise FolderError(404, "not found")
        try:
            report = EvalReport.model_validate(row["report"] if isinstance(row["report"], dict) else {})
        except ValidationError as exc:
            raise FolderError(422, f"the recorded report cannot be read: {exc.errors()[0]['msg']}") from None
        return answer(EvalRecord.model_validate({**self._listed(row), "report": report}))
