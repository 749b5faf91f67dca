"""`diagrama run` stopping at a Wait and `diagrama resume` answering it, as a user types them; of two resumes of one
waiting run started at once, one takes it and the other is refused before any block runs again; `diagrama sessions`.
Each on both kinds of store: the runs folder's SQLite file, and PostgreSQL named by $DIAGRAMA_STORE."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from engine.cli import app

DIAGRAMS = Path(__file__).resolve().parents[2] / "diagrams"


@pytest.fixture(autouse=True)
def store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """$DIAGRAMA_STORE for the commands (and the processes they start): SQLite's file in the runs folder, PostgreSQL."""
    monkeypatch.setenv("DIAGRAMA_STORE", store_url)
    return store_url


def _waiting_run(tmp_path: Path) -> tuple[Path, str]:
    shutil.copy(DIAGRAMS / "approve_reply.yaml", tmp_path / "approve_reply.yaml")
    runs = tmp_path / "runs"
    started = CliRunner().invoke(app, ["run", str(tmp_path / "approve_reply.yaml"), "--offline", "--runs-dir",
                                       str(runs), "--output", "json"])
    assert started.exit_code == 3, started.output  # 3: waiting for a person
    answer = orjson.loads(started.stdout)
    assert answer["status"] == "waiting" and answer["waiting"]["form"]["required"] == ["approved"]
    return runs, answer["run_id"]


def test_a_wrong_answer_keeps_the_run_waiting_and_a_good_one_finishes_it(tmp_path: Path) -> None:
    runs, run_id = _waiting_run(tmp_path)
    wrong = CliRunner().invoke(app, ["resume", run_id, "--runs-dir", str(runs), "--input", "approved=maybe"])
    assert wrong.exit_code == 2, wrong.output
    done = CliRunner().invoke(app, ["resume", run_id, "--runs-dir", str(runs), "--offline", "--input",
                                    "approved=true", "--output", "json"])
    assert done.exit_code == 0, done.output
    assert orjson.loads(done.stdout)["path"][-2:] == ["approve", "send"]


def test_a_resumed_run_keeps_the_cost_it_had_before_its_wait(tmp_path: Path) -> None:
    runs, run_id = _waiting_run(tmp_path)  # its ClaudeRequest (claude-sonnet-4-5, priced) ran before the Wait
    done = CliRunner().invoke(app, ["resume", run_id, "--runs-dir", str(runs), "--offline", "--input",
                                    "approved=true", "--output", "json"])
    assert done.exit_code == 0, done.output
    answer = orjson.loads(done.stdout)
    assert answer["cost"]["requests"] == 1 and answer["cost"]["unknown_steps"] == 0 and answer["cost"]["usd"] > 0
    assert answer["usage"]["input_tokens"] > 0


@pytest.mark.slow
def test_of_two_resumes_at_once_exactly_one_continues_the_run(tmp_path: Path) -> None:
    runs, run_id = _waiting_run(tmp_path)
    command = [sys.executable, "-m", "engine.cli", "resume", run_id, "--runs-dir", str(runs), "--offline", "--input",
               "approved=true", "--output", "json"]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path) for _ in range(2)]
    answers = [(process.wait(timeout=120), process.stderr.read().decode()) for process in both if process.stderr]
    codes = sorted(code for code, _ in answers)
    # The loser is refused, whether it lost the take-over, saw the run running, or came after it had finished.
    assert codes == [0, 2], answers
    assert any(word in text for _, text in answers for word in ("being resumed", "is running", "is succeeded")), answers


def test_a_session_carries_memory_between_runs_and_is_listed_and_forgotten(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    command = ["run", str(DIAGRAMS / "chat_memory.yaml"), "--offline", "--runs-dir", str(runs), "--session", "s-1",
               "--output", "json", "-q"]
    turns = [CliRunner().invoke(app, command) for _ in range(2)]
    assert [turn.exit_code for turn in turns] == [0, 0], turns[-1].output
    assert orjson.loads(turns[1].stdout)["variables"]["turns"] == 2  # the second turn started from the first's memory
    listed = CliRunner().invoke(app, ["sessions", "--runs-dir", str(runs), "--output", "json"])
    (entry,) = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert entry["session"] == "s-1" and entry["turns"] == 2 and entry["memory"]["turns"] == 2
    forgot = CliRunner().invoke(app, ["sessions", "--runs-dir", str(runs), "--forget", "s-1"])
    assert forgot.exit_code == 0 and "forgot session s-1" in forgot.stdout
    assert CliRunner().invoke(app, ["sessions", "--runs-dir", str(runs), "--output", "json"]).stdout == ""


@pytest.mark.slow
def test_an_input_past_64_bits_runs_durably_and_resumes(tmp_path: Path) -> None:
    import json
    import os

    path = tmp_path / "wide.yaml"
    path.write_text("""
diagram: wide
blocks:
  - id: start
    type: Start
    inputs: {n: 0}
    next: ask
  - id: ask
    type: Wait
    with: {prompt: "n is {{ n }}", form: {type: object}}
    set: {doubled: "{{ n * 2 }}"}
""".lstrip(), encoding="utf-8")
    runs = tmp_path / "runs"
    env = {**os.environ, "DIAGRAMA_STORE": ""}
    huge = 2**65
    first = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path), "--input", f"n={huge}", "--runs-dir",
                            str(runs), "--output", "json", "-q"], capture_output=True, text=True, env=env, check=False)
    assert first.returncode == 3 and "Traceback" not in first.stderr, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    listed = subprocess.run([sys.executable, "-m", "engine.cli", "runs", "--runs-dir", str(runs)], capture_output=True,
                            text=True, env=env, check=False)
    assert listed.returncode == 0 and run_id in listed.stdout
    done = subprocess.run([sys.executable, "-m", "engine.cli", "resume", run_id, "--input", "ok=1", "--runs-dir",
                           str(runs), "--output", "json", "-q"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["variables"] == {"n": huge, "doubled": 2 * huge}
