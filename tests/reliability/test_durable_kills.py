"""The fault test: runs of a robot with requests, tools, a loop and subdiagrams, SIGKILLed at random moments.

The robot looks each order up in a Subdiagram's child (a request, then its tool calls), so most kills land inside a
child: the resume continues the child from its own checkpoint. Each run is `diagrama run` as a process, killed with
SIGKILL after a random delay; an interrupted run is resumed with `diagrama resume`. Every resumed run must end with
the same variables as the uninterrupted one, every checkpoint must decode (none torn), and no tool call (an effect,
logged by the handler) may run more than twice. DIAGRAMA_FAULT_KILLS sets how many kills (the issue's 100:
DIAGRAMA_FAULT_KILLS=100; the default keeps CI's two cores busy for well under a minute of CPU). It runs again with
the checkpoints in PostgreSQL ($DIAGRAMA_STORE, a database per kill), DIAGRAMA_FAULT_KILLS_PG times (3).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runtime.durable import decode_state

pytestmark = pytest.mark.slow  # runs killed with SIGKILL at random moments

ROBOT = Path(__file__).parent / "durable_robot"
KILLS = int(os.environ.get("DIAGRAMA_FAULT_KILLS", "6"))
KILLS_PG = int(os.environ.get("DIAGRAMA_FAULT_KILLS_PG", "3"))


def _diagrama(folder: Path, log: Path, store: str, *args: str) -> subprocess.Popen[str]:
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DIAGRAMA_FAULT_LOG": str(log), "DIAGRAMA_STORE": store}
    return subprocess.Popen([sys.executable, "-m", "engine.cli", *args, "--offline", "-q", "--output", "json",
                             "--runs-dir", str(folder / "runs")], cwd=folder, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _ids_aside(variables: dict[str, Any]) -> Any:
    """The variables with tool call ids blanked: ids are the vendor's, new for a call made again (the simulator
    numbers its answers per process, as a vendor would give a repeated request a new id)."""
    return json.loads(re.sub(r"toolu_sim[0-9a-f]+", "toolu_sim", json.dumps(variables)))


def _until_checkpoints(store: str, db: Path, process: subprocess.Popen[str], count: int) -> None:
    """Wait until the run has written `count` checkpoints (read-only: the poll takes no lock the run needs)."""
    if store:
        _until_postgres_checkpoints(store, process, count)
        return
    while process.poll() is None:
        if db.exists():
            try:
                with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as read:
                    if read.execute("SELECT count(*) FROM checkpoints").fetchone()[0] >= count:
                        return
            except sqlite3.Error:
                pass  # the store is being made
        time.sleep(0.002)


def _until_postgres_checkpoints(url: str, process: subprocess.Popen[str], count: int) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    parts = make_url(url)
    with psycopg.connect(host=parts.host, port=parts.port, user=parts.username, dbname=parts.database,
                         autocommit=True) as read:
        while process.poll() is None:
            try:
                found = read.execute("SELECT count(*) FROM checkpoints").fetchone()
                if found is not None and found[0] >= count:
                    return
            except psycopg.Error:
                pass  # the store is being made
            time.sleep(0.002)


def _all_states(store: CheckpointStore, run_id: str, calls: int) -> list[bytes]:
    """Every checkpoint of the run and of its children (`RUN-lookup-N`, one call an order)."""
    ids = [run_id, *(f"{run_id}-lookup-{n}" for n in range(1, calls + 1))]
    return [state for one in ids for _, state in store.states(one)]


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return dict(json.loads(out))


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest) -> tuple[int, Callable[[], str]]:
    """How many kills, and where each kill's run keeps its checkpoints: "" (the runs folder's SQLite file, as
    `diagrama run` has by default) or a fresh PostgreSQL database's URL ($DIAGRAMA_STORE)."""
    if request.param == "sqlite":
        return KILLS, str
    cluster = request.getfixturevalue("postgres_cluster")
    stack = contextlib.ExitStack()
    request.addfinalizer(stack.close)
    return KILLS_PG, lambda: stack.enter_context(cluster.database())


def _open(store: str, place: Path) -> CheckpointStore | None:
    db = place / "runs" / "diagrama.db"
    return open_checkpoints(store or None, place / "runs") if store or db.exists() else None


def test_killed_runs_resume_to_the_same_end_with_no_effect_run_more_than_twice(
        tmp_path: Path, stores: tuple[int, Callable[[], str]]) -> None:
    kills, new_store = stores
    shutil.copytree(ROBOT, tmp_path / "robot")
    folder = tmp_path / "robot"
    first = new_store()
    reference = _finish(_diagrama(folder / "reference", tmp_path / "reference.log", first, "run",
                                  str(folder / "robot.yaml")))
    kept = _open(first, folder / "reference")
    assert kept is not None
    (done,) = kept.runs()  # its children are its steps, not runs of their own in the list
    checkpoints = len(_all_states(kept, done["run_id"], len(reference["variables"]["orders"])))
    step = (done["updated"] - done["started"]) / checkpoints  # the run's time between two checkpoints
    kept.close()
    orders = reference["variables"]["orders"]
    rng = random.Random(int(os.environ.get("DIAGRAMA_FAULT_SEED", "27")))
    counts: collections.Counter[str] = collections.Counter()
    most_runs = 0
    for kill in range(kills):
        place = folder / f"kill{kill}"
        log = tmp_path / f"kill{kill}.log"
        store = new_store()
        process = _diagrama(place, log, store, "run", str(folder / "robot.yaml"))
        # A place in the run: after a random number of its checkpoints, then a random part of a step.
        _until_checkpoints(store, place / "runs" / "diagrama.db", process, rng.randint(0, checkpoints))
        time.sleep(rng.uniform(0, step))
        process.send_signal(signal.SIGKILL)
        process.communicate()
        found = _open(store, place)
        rows = found.runs() if found is not None else []
        if process.returncode == 0 or (rows and rows[0]["status"] == "succeeded"):
            counts["finished before the kill"] += 1  # (or killed while it printed its result)
            continue
        if not rows:
            counts["killed before the run began"] += 1
            continue
        (row,) = rows
        assert row["status"] == "interrupted", row
        assert found is not None
        states = _all_states(found, row["run_id"], len(orders))
        if not states:  # killed between its record and checkpoint 0: no block ran, and resume says to run it again
            found.close()
            refused = _diagrama(place, log, store, "resume", row["run_id"])
            _, err = refused.communicate(timeout=300)
            assert refused.returncode != 0 and "stopped before its first, before any block ran" in err, err
            assert not log.exists() or not log.read_text().split()  # no effect ran
            counts["killed before its first checkpoint"] += 1
            continue
        for state in states:
            decode_state(state)  # a torn checkpoint would not decode
        counts["checkpoints read back"] += len(states)
        found.close()
        resumed = _finish(_diagrama(place, log, store, "resume", row["run_id"]))
        counts["resumed"] += 1
        assert resumed["status"] == "succeeded" and resumed["run_id"] == row["run_id"]
        assert _ids_aside(resumed["variables"]) == _ids_aside(reference["variables"])
        calls = collections.Counter(log.read_text().split()) if log.exists() else collections.Counter()
        assert set(calls) == {str(order) for order in orders}
        assert max(calls.values()) <= 2, calls
        most_runs = max(most_runs, max(calls.values()))
        counts["tool calls run twice"] += sum(1 for n in calls.values() if n == 2)
    print(f"\n{kills} kills: {dict(counts)}; an effect ran at most {most_runs} times")
    assert counts["resumed"] + counts["finished before the kill"] + counts["killed before the run began"] + \
        counts["killed before its first checkpoint"] == kills
