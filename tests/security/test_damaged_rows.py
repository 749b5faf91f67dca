"""A store row cut short or tampered with never crashes a resume: `diagrama resume` exits 2 and the API answers 409,
each naming the run and what is wrong; `diagrama runs` still lists the run and `--cancel` still ends it; a session
whose stored memory is damaged refuses its next turn and is not left held.

The rows are damaged as a disk, a partial restore or a person with sqlite3 would: a checkpoint cut in half, one
replaced by bytes that are not UTF-8, one whose tagged value is wrong, one whose header is of the wrong shape, and a
`waiting` row that is not JSON.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.api.test_durable_api import APPROVE, CHAT

ROOT = Path(__file__).resolve().parents[2]


def damage(database: Path, run_id: str, how: str) -> None:
    with sqlite3.connect(database) as db:
        seq, state = db.execute("SELECT seq, state FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
                                (run_id,)).fetchone()
        if how == "cut short":
            db.execute("UPDATE checkpoints SET state = ? WHERE run_id = ? AND seq = ?", (state[: len(state) // 2],
                                                                                           run_id, seq))
        elif how == "not UTF-8":
            db.execute("UPDATE checkpoints SET state = ? WHERE run_id = ?", (b"\x00\xff\xfe garbage", run_id))
        elif how == "a wrong tag":
            db.execute("UPDATE checkpoints SET state = ? WHERE run_id = ? AND seq = ?", (
                b'{"h":{"segment":[],"next":"ask","from":null,"steps":2,"tokens":0,"errors":[]},'
                b'"v":{"x":{"\\u0000":"int","v":"zz"}},"l":{}}', run_id, seq))
        elif how == "a wrong header":
            db.execute("UPDATE checkpoints SET state = ? WHERE run_id = ? AND seq = ?",
                       (b'{"h":{"segment":"ask","next":5},"v":{},"l":{}}', run_id, seq))
        elif how == "waiting not JSON":
            db.execute("UPDATE run_states SET waiting = 'not json{' WHERE run_id = ?", (run_id,))


HOW = ["cut short", "not UTF-8", "a wrong tag", "a wrong header", "waiting not JSON"]
CLI_HOW = [HOW[0], *(pytest.param(how, marks=pytest.mark.slow) for how in HOW[1:])]  # processes: one in the core


def _diagrama(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "DIAGRAMA_STORE"}
    return subprocess.run([sys.executable, "-m", "engine.cli", *args, "--runs-dir", "runs"], capture_output=True,
                          text=True, timeout=120, cwd=folder, env={**env, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
@pytest.mark.parametrize("how", CLI_HOW)
def test_diagrama_resume_of_a_damaged_run_exits_2_naming_it(write: Callable[..., Path], tmp_path: Path,
                                                            how: str) -> None:
    write(APPROVE, "approve.yaml")
    asked = _diagrama(tmp_path, "run", "approve.yaml", "-q", "--output", "json")
    assert asked.returncode == 3, asked
    run_id = json.loads(asked.stdout)["run_id"]
    damage(tmp_path / "runs" / "diagrama.db", run_id, how)

    for args in (("--input", "approved=true"), ("--from", "ask")):  # goes on; replays from the damaged one
        refused = _diagrama(tmp_path, "resume", run_id, *args)
        assert refused.returncode == 2, refused
        assert "Traceback" not in refused.stderr, refused.stderr
        assert f"run '{run_id}' cannot go on" in refused.stderr and "damaged" in refused.stderr, refused.stderr
        assert f"diagrama resume {run_id} --cancel" in refused.stderr
    listed = _diagrama(tmp_path, "runs")
    assert listed.returncode == 0 and run_id in listed.stdout, listed
    cancelled = _diagrama(tmp_path, "resume", run_id, "--cancel")
    assert cancelled.returncode == 0, cancelled


@pytest.mark.slow
def test_a_session_whose_memory_is_damaged_refuses_its_turn_and_is_let_go(write: Callable[..., Path],
                                                                          tmp_path: Path) -> None:
    write(CHAT, "chat.yaml")
    assert _diagrama(tmp_path, "run", "chat.yaml", "--session", "ana", "-q").returncode == 0
    with sqlite3.connect(tmp_path / "runs" / "diagrama.db") as db:
        db.execute("UPDATE sessions SET state = ? WHERE session = 'ana'", (b'{"said": [',))
    refused = _diagrama(tmp_path, "run", "chat.yaml", "--session", "ana", "-q")
    assert refused.returncode == 2, refused
    assert "session 'ana' cannot go on: its stored memory is damaged" in refused.stderr, refused.stderr
    assert "diagrama sessions --forget ana" in refused.stderr and "Traceback" not in refused.stderr
    listed = _diagrama(tmp_path, "sessions")
    assert listed.returncode == 0 and "ana" in listed.stdout, listed
    with sqlite3.connect(tmp_path / "runs" / "diagrama.db") as db:
        assert db.execute("SELECT holder FROM sessions WHERE session = 'ana'").fetchone() == (None,)
    assert _diagrama(tmp_path, "sessions", "--forget", "ana").returncode == 0
    again = _diagrama(tmp_path, "run", "chat.yaml", "--session", "ana", "-q", "--output", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["variables"]["turns"] == 1, again
