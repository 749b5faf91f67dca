"""A run on Celery runs once: a task handed out again while its run goes on (a run longer than the broker's
visibility timeout) finds the run's lease held and leaves it to its worker; a cancelled run stops at its next step on
its worker. Real redis-server, real workers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import AUTH, Served
from tests.batch.test_celery import broker, stop

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is absent (apt-get install redis-server)"),
              pytest.mark.slow]  # real Celery workers and a Redis server
__all__ = ["broker"]

LONG = """
diagram: long
allowed_modules: [long_steps]
blocks:
  - id: start
    type: Start
    next: first
  - id: first
    type: Function
    with: {function: "long_steps:mark", arguments: {what: first, nap: 0}}
    next: nap
  - id: nap
    type: Function
    with: {function: "long_steps:mark", arguments: {what: nap, nap: 7}, timeout: 30}
    next: last
  - id: last
    type: Function
    with: {function: "long_steps:mark", arguments: {what: last, nap: 0}}
"""
LONG_STEPS = '''
import os
import time

def mark(what: str, nap: float):
    time.sleep(nap)
    with open(os.path.join(os.path.dirname(__file__), "marks.log"), "a") as log:
        log.write(what + "\\n")
    return what
'''


def _worker(broker: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    # A visibility timeout far shorter than the run, swept for every second: the task comes back while it runs.
    env = {**os.environ, "DIAGRAMA_VISIBILITY_TIMEOUT": "2", "DIAGRAMA_RESTORE_INTERVAL": "1"}
    return subprocess.Popen([sys.executable, "-m", "engine.cli", "worker", "--broker", broker, "--concurrency", "2"],
                            env=env, cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / f"worker-{time.monotonic_ns()}.log", "wb"))


def _until_ended(url: str, run_id: str, seconds: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        found: dict[str, Any] = httpx.get(f"{url}/v1/runs/{run_id}", headers=AUTH).json()
        if found["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_run_longer_than_the_visibility_timeout_runs_once(
        make_app: Callable[..., Any], serve: Callable[..., Served], robots_dir: Path, tmp_path: Path,
        broker: str) -> None:
    (robots_dir / "long.yaml").write_text(LONG.lstrip())
    (robots_dir / "long_steps.py").write_text(LONG_STEPS)
    served = serve(make_app(backend="celery", broker=broker, store_url=f"sqlite:///{tmp_path / 'shared.db'}"))
    workers = [_worker(broker, tmp_path), _worker(broker, tmp_path)]
    try:
        run_id = httpx.post(f"{served.url}/v1/robots/long/runs", json={"wait": False}, headers=AUTH).json()["run_id"]
        found = _until_ended(served.url, run_id)
    finally:
        for worker in workers:
            stop(worker)
    assert found["status"] == "succeeded", found
    # Handed out again several times while its nap went on, it ran once: each block's effect is written once.
    assert (robots_dir / "marks.log").read_text().splitlines() == ["first", "nap", "last"]


def test_a_cancelled_run_stops_at_its_next_step_on_its_worker(
        make_app: Callable[..., Any], serve: Callable[..., Served], robots_dir: Path, tmp_path: Path,
        broker: str) -> None:
    (robots_dir / "long.yaml").write_text(LONG.lstrip())
    (robots_dir / "long_steps.py").write_text(LONG_STEPS)
    served = serve(make_app(backend="celery", broker=broker, store_url=f"sqlite:///{tmp_path / 'shared.db'}"))
    worker = _worker(broker, tmp_path)
    try:
        run_id = httpx.post(f"{served.url}/v1/robots/long/runs", json={"wait": False}, headers=AUTH).json()["run_id"]
        marks = robots_dir / "marks.log"
        deadline = time.monotonic() + 60
        while not (marks.is_file() and marks.read_text() == "first\n") and time.monotonic() < deadline:
            time.sleep(0.1)  # the run is in its nap
        cancelled = httpx.post(f"{served.url}/v1/runs/{run_id}/cancel", headers=AUTH)
        found = _until_ended(served.url, run_id)
    finally:
        stop(worker)
    assert cancelled.status_code == 202, cancelled.text
    assert found["status"] == "cancelled", found
    assert [e["type"] for e in found["errors"]] == ["run_cancelled"]
    assert marks.read_text().splitlines() == ["first", "nap"]  # `last` never ran
