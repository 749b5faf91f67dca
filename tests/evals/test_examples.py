"""The README's eval examples (issue 39, 5): both run offline above their thresholds, and the prompt variant of
order_agent helps some cases and hurts others."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from engine.cli import app

ROOT = Path(__file__).resolve().parents[2]
EVALS = ROOT / "diagrams" / "evals"


def test_the_examples_run_offline_above_their_thresholds(tmp_path: Path) -> None:
    for name in ("order_agent.eval.yaml", "triage_inbox.eval.yaml"):
        result = CliRunner().invoke(app, ["eval", str(EVALS / name), "--offline", "--output", "json",
                                          "--runs-dir", str(tmp_path)])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["summary"]["failed"] < report["summary"]["cases"]
        assert all(case["status"] == "succeeded" for case in report["cases"])


def test_the_return_prompt_helps_one_case_and_hurts_others(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", str(EVALS / "order_agent.eval.yaml"), "--offline", "--output", "json",
                                      "--against", str(ROOT / "diagrams" / "order_agent_returns.yaml"),
                                      "--runs-dir", str(tmp_path)])
    deltas = {row["id"]: row["delta"] for row in json.loads(result.output)["deltas"]}
    assert deltas["return_42"] < 0  # the variant opens the return this version does not
    assert deltas["cancel_57"] > 0 and deltas["track_parcel"] > 0  # and turns these into returns
