"""The studio's eval endpoints (issue 39, 4): a diagram's recorded eval runs, newest first, and one with its report;
only the folder's own diagrams' evals, answers as the committed schema says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.runs.store import RunStore
from tests.web.test_api_models import conforms


def report(score: float, cases: dict[str, float], **extra: Any) -> dict[str, Any]:
    passed = sum(1 for value in cases.values() if value >= 0.5)
    return {
        "summary": {"score": score, "cases": len(cases), "passed": passed, "failed": len(cases) - passed,
                    "tokens": 40, "cost": 0.0, "latency_ms": {"p50": 2.0, "p95": 5.0}, "scorers": {"mentions": score}},
        "cases": [{"id": case, "score": value, "scores": {"mentions": value}, "status": "succeeded",
                   "run_id": f"run-{case}"} for case, value in cases.items()],
        **extra,
    }


@pytest.fixture
def recorded(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three evals in the studio's run store: two of order_agent.yaml, one of a diagram outside the folder."""
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    store = RunStore(f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}")
    try:
        store.record_eval(eval_id="first", eval_file=folder / "order.eval.yaml", diagram=folder / "order_agent.yaml",
                          content_hash="a" * 64, revision=None, report=report(0.5, {"a": 1.0, "b": 0.0}), created=10.0)
        store.record_eval(eval_id="second", eval_file=folder / "order.eval.yaml", diagram=folder / "order_agent.yaml",
                          content_hash="b" * 64, revision="HEAD~1", created=20.0,
                          report=report(0.75, {"a": 0.5, "b": 1.0}, against={"summary": {"score": 0.5}}))
        store.record_eval(eval_id="elsewhere", eval_file=tmp_path / "x.eval.yaml", diagram=tmp_path / "x.yaml",
                          content_hash="c" * 64, revision=None, report=report(1.0, {"a": 1.0}), created=30.0)
    finally:
        store.close()
    return folder


def test_a_diagrams_evals_are_listed_newest_first(client, recorded: Path) -> None:
    listed = conforms("GET /api/diagrams/{path}/evals", client("GET", "/api/diagrams/order_agent.yaml/evals"))
    assert [(e["eval_id"], e["score"], e["passed"], e["failed"], e["revision"]) for e in listed] == \
        [("second", 0.75, 2, 0, "HEAD~1"), ("first", 0.5, 1, 1, None)]
    assert {(e["eval_file"], e["diagram"]) for e in listed} == {("order.eval.yaml", "order_agent.yaml")}
    assert conforms("GET /api/diagrams/{path}/evals", client("GET", "/api/diagrams/claude_qa.yaml/evals")) == []


def test_one_eval_answers_with_its_report(client, recorded: Path) -> None:
    found = conforms("GET /api/diagrams/{path}/evals/{eval_id}",
                     client("GET", "/api/diagrams/order_agent.yaml/evals/second"))
    assert found["eval_id"] == "second" and found["created"] == 20.0
    assert found["report"]["summary"]["score"] == 0.75 and found["report"]["summary"]["scorers"] == {"mentions": 0.75}
    assert [(c["id"], c["score"], c["scores"], c["run_id"]) for c in found["report"]["cases"]] == \
        [("a", 0.5, {"mentions": 0.5}, "run-a"), ("b", 1.0, {"mentions": 1.0}, "run-b")]
    assert "cost" not in found["report"]["summary"] and "against" not in found["report"]  # what the page reads


def test_an_eval_of_another_diagram_or_outside_the_folder_is_not_found(client, recorded: Path) -> None:
    assert client("GET", "/api/diagrams/claude_qa.yaml/evals/second").status_code == 404
    assert client("GET", "/api/diagrams/order_agent.yaml/evals/elsewhere").status_code == 404
    assert client("GET", "/api/diagrams/order_agent.yaml/evals/nothing").status_code == 404
    assert client("GET", "/api/diagrams/missing.yaml/evals").status_code == 404


def test_without_a_run_store_there_are_no_evals(client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    assert client("GET", "/api/diagrams/order_agent.yaml/evals").json() == []
    assert client("GET", "/api/diagrams/order_agent.yaml/evals/any").status_code == 404
