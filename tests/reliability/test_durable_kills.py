"""The fault test: runs of a robot with requests, tools and a loop, SIGKILLed at random moments and resumed.

Each run is `diagrama run` as a process, killed with SIGKILL after a random delay; an interrupted
run is resumed with `diagrama resume`. Every resumed run must end with the same variables as the
uninterrupted one, every checkpoint must decode (none torn), and no tool call (an effect, logged by
the handler) may run more than twice. DIAGRAMA_FAULT_KILLS sets how many kills (the issue's 100:
DIAGRAMA_FAULT_KILLS=100; the default keeps CI's two cores busy for well under a minute of CPU).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engine.runs.checkpoints import SqliteCheckpoints
from engine.runtime.durable import decode_state

ROBOT = Path(__file__).parent / "durable_robot"
KILLS = int(os.environ.get("DIAGRAMA_FAULT_KILLS", "6"))


def _diagrama(folder: Path, log: Path, *args: str) -> subprocess.Popen[str]:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DIAGRAMA_FAULT_LOG": str(log), "DIAGRAMA_STORE": ""}
    return subprocess.Popen([sys.executable, "-m", "engine.cli", *args, "--offline", "-q", "--output", "json",
                             "--runs-dir", str(folder / "runs")], cwd=folder, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _ids_aside(variables: dict[str, Any]) -> Any:
    """The variables with tool call ids blanked: ids are the vendor's, new for a call made again (the simulator
    numbers its answers per process, as a vendor would give a repeated request a new id)."""
    return json.loads(re.sub(r"toolu_sim[0-9a-f]+", "toolu_sim", json.dumps(variables)))


def _until_checkpoints(db: Path, process: subprocess.Popen[str], count: int) -> None:
    """Wait until the run has written `count` checkpoints (read-only: the poll takes no lock the run needs)."""
    while process.poll() is None:
        if db.exists():
            try:
                with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as read:
                    if read.execute("SELECT count(*) FROM checkpoints").fetchone()[0] >= count:
                        return
            except sqlite3.Error:
                pass  # the store is being made
        time.sleep(0.002)


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return dict(json.loads(out))


def test_killed_runs_resume_to_the_same_end_with_no_effect_run_more_than_twice(tmp_path: Path) -> None:
    shutil.copytree(ROBOT, tmp_path / "robot")
    folder = tmp_path / "robot"
    reference = _finish(_diagrama(folder / "reference", tmp_path / "reference.log", "run", str(folder / "robot.yaml")))
    kept = SqliteCheckpoints(folder / "reference" / "runs" / "diagrama.db")
    (done,) = kept.runs()
    checkpoints = len(kept.states(done["run_id"]))
    step = (done["updated"] - done["started"]) / checkpoints  # the run's time between two checkpoints
    kept.close()
    orders = reference["variables"]["orders"]
    rng = random.Random(int(os.environ.get("DIAGRAMA_FAULT_SEED", "27")))
    counts: collections.Counter[str] = collections.Counter()
    most_runs = 0
    for kill in range(KILLS):
        place = folder / f"kill{kill}"
        log = tmp_path / f"kill{kill}.log"
        process = _diagrama(place, log, "run", str(folder / "robot.yaml"))
        # A place in the run: after a random number of its checkpoints, then a random part of a step.
        _until_checkpoints(place / "runs" / "diagrama.db", process, rng.randint(0, checkpoints))
        time.sleep(rng.uniform(0, step))
        process.send_signal(signal.SIGKILL)
        process.communicate()
        db = place / "runs" / "diagrama.db"
        rows = SqliteCheckpoints(db).runs() if db.exists() else []
        if process.returncode == 0 or (rows and rows[0]["status"] == "succeeded"):
            counts["finished before the kill"] += 1  # (or killed while it printed its result)
            continue
        if not rows:
            counts["killed before the run began"] += 1
            continue
        (row,) = rows
        assert row["status"] == "interrupted", row
        store = SqliteCheckpoints(db)
        for _, state in store.states(row["run_id"]):
            decode_state(state)  # a torn checkpoint would not decode
        counts["checkpoints read back"] += len(store.states(row["run_id"]))
        store.close()
        resumed = _finish(_diagrama(place, log, "resume", row["run_id"]))
        counts["resumed"] += 1
        assert resumed["status"] == "succeeded" and resumed["run_id"] == row["run_id"]
        assert _ids_aside(resumed["variables"]) == _ids_aside(reference["variables"])
        calls = collections.Counter(log.read_text().split()) if log.exists() else collections.Counter()
        assert set(calls) == {str(order) for order in orders}
        assert max(calls.values()) <= 2, calls
        most_runs = max(most_runs, max(calls.values()))
        counts["tool calls run twice"] += sum(1 for n in calls.values() if n == 2)
    print(f"\n{KILLS} kills: {dict(counts)}; an effect ran at most {most_runs} times")
    assert counts["resumed"] + counts["finished before the kill"] + counts["killed before the run began"] == KILLS
