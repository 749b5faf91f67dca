"""Eval runs kept in the run store (issue 39, 4): `record_eval`, `evals` newest first, `eval` with its report; on
SQLite and on PostgreSQL (`store_url`), and added to a store made before the table was; `diagrama evals` lists them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, inspect, text

from engine.cli import app
from engine.runs.store import RunStore


def report(score: float, cases: dict[str, float]) -> dict[str, Any]:
    """A report as `diagrama eval --output json` prints it."""
    passed = sum(1 for value in cases.values() if value >= 0.5)
    return {
        "summary": {"score": score, "cases": len(cases), "passed": passed, "failed": len(cases) - passed,
                    "tokens": 120, "latency_ms": {"p50": 3.5, "p95": 9.0}, "scorers": {"mentions": score}},
        "cases": [{"id": case, "score": value, "scores": {"mentions": value}, "status": "succeeded",
                   "run_id": f"r-{case}"} for case, value in cases.items()],
    }


def test_an_eval_is_kept_with_its_summary_and_report(store_url: str, tmp_path: Path) -> None:
    store = RunStore(store_url)
    try:
        kept = report(0.75, {"a": 1.0, "b": 0.5, "c": 0.0, "d": 1.0})
        store.record_eval(eval_id="e1", eval_file=tmp_path / "order.eval.yaml", diagram=tmp_path / "order.yaml",
                          content_hash="h1", revision="abc123", report=kept)
        found = store.eval("e1")
        assert found is not None
        assert found["report"] == kept
        assert (found["eval_file"], found["diagram"]) == (str(tmp_path / "order.eval.yaml"), str(tmp_path / "order.yaml"))
        assert (found["score"], found["cases"], found["passed"], found["failed"]) == (0.75, 4, 3, 1)
        assert (found["content_hash"], found["revision"]) == ("h1", "abc123")
        assert store.eval("e2") is None
    finally:
        store.close()


def test_evals_are_listed_newest_first_per_diagram_without_reports(store_url: str, tmp_path: Path) -> None:
    store = RunStore(store_url)
    try:
        for created, eval_id, diagram in [(200.0, "old", "a.yaml"), (300.0, "other", "b.yaml"), (400.0, "new", "a.yaml")]:
            store.record_eval(eval_id=eval_id, eval_file=tmp_path / "a.eval.yaml", diagram=tmp_path / diagram,
                              content_hash="h", revision=None, report=report(0.5, {"x": 0.5}), created=created)
        assert [e["eval_id"] for e in store.evals()] == ["new", "other", "old"]
        assert [e["eval_id"] for e in store.evals(tmp_path / "a.yaml")] == ["new", "old"]
        assert [e["eval_id"] for e in store.evals(str(tmp_path / "a.yaml"), limit=1)] == ["new"]
        assert "report" not in store.evals()[0] and store.evals()[0]["revision"] is None
        # The same eval recorded again replaces it (and is now the newest).
        store.record_eval(eval_id="old", eval_file=tmp_path / "a.eval.yaml", diagram=tmp_path / "a.yaml",
                          content_hash="h2", revision=None, report=report(1.0, {"x": 1.0}))
        assert [(e["eval_id"], e["score"]) for e in store.evals(tmp_path / "a.yaml")] == [("old", 1.0), ("new", 0.5)]
    finally:
        store.close()


def test_a_report_without_a_summary_is_kept_with_empty_columns(tmp_path: Path) -> None:
    store = RunStore(f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}")
    try:
        store.record_eval(eval_id="e", eval_file="x.eval.yaml", diagram="x.yaml", content_hash="h", revision=None,
                          report={"cases": [], "summary": {"score": "high", "cases": True}})
        found = store.eval("e")
        assert found is not None and (found["score"], found["cases"], found["passed"]) == (None, None, None)
    finally:
        store.close()


def test_a_store_made_before_evals_gets_the_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'diagrama.db'}"
    old = create_engine(url)
    with old.begin() as connection:  # a store as an earlier diagrama made it: runs, no evals
        connection.execute(text("CREATE TABLE runs (run_id VARCHAR(80) PRIMARY KEY, diagram TEXT NOT NULL, "
                                "content_hash VARCHAR(64) NOT NULL, status VARCHAR(16) NOT NULL, started FLOAT)"))
    assert "evals" not in inspect(old).get_table_names()
    old.dispose()
    store = RunStore(url)
    try:
        store.record_eval(eval_id="e", eval_file="x.eval.yaml", diagram="x.yaml", content_hash="h", revision=None,
                          report=report(1.0, {"x": 1.0}))
        assert [e["eval_id"] for e in store.evals()] == ["e"]
        assert "evals_diagram_created" in {i["name"] for i in inspect(store.engine).get_indexes("evals")}
    finally:
        store.close()


def test_diagrama_evals_lists_the_recorded_eval_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    cli = CliRunner()
    empty = cli.invoke(app, ["evals", "--runs-dir", str(runs)])
    assert empty.exit_code == 0 and "no eval runs recorded" in empty.output
    store = RunStore(f"sqlite:///{runs / 'diagrama.db'}")
    try:
        store.record_eval(eval_id="e-old", eval_file="order.eval.yaml", diagram="order.yaml", content_hash="c" * 64,
                          revision=None, report=report(0.5, {"a": 1.0, "b": 0.0}), created=1_000.0)
        store.record_eval(eval_id="e-new", eval_file="order.eval.yaml", diagram="order.yaml", content_hash="d" * 64,
                          revision="HEAD~1", report=report(0.75, {"a": 1.0, "b": 0.5}), created=2_000.0)
        store.record_eval(eval_id="e-triage", eval_file="triage.eval.yaml", diagram="triage.yaml", content_hash="e" * 64,
                          revision=None, report=report(1.0, {"a": 1.0}), created=3_000.0)
    finally:
        store.close()
    listed = cli.invoke(app, ["evals", "order.yaml", "--runs-dir", str(runs)])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].split()[:3] == ["when", "eval", "file"]
    assert [line.split()[-1] for line in lines[1:]] == ["e-new", "e-old"]
    assert lines[1].split()[2:8] == ["order.eval.yaml", "order.yaml", "HEAD~1", "0.750", "2", "0"]
    assert lines[2].split()[4:8] == ["cccccccccccc", "0.500", "1", "1"]  # no revision: the diagram's hash
    as_json = cli.invoke(app, ["evals", "--json", "--limit", "2", "--store", f"sqlite:///{runs / 'diagrama.db'}"])
    assert as_json.exit_code == 0, as_json.output
    assert [(e["eval_id"], e["score"]) for e in json.loads(as_json.output)] == [("e-triage", 1.0), ("e-new", 0.75)]
