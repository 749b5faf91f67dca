"""The service around runs on the Celery backend, end to end (a real redis-server, a real worker process, two API
processes sharing the broker and the store): readiness follows the broker, the queue's depth and the runs a process
saw end are in its metrics, an Idempotency-Key holds across API processes, the listing shows a queued run, and the
process that accepted a run with a callback_url calls it back when the worker ends it."""

from __future__ import annotations

import hashlib
import hmac
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.api.conftest import AUTH, Served
from tests.api.test_callbacks import SECRET, Receiver, receiver
from tests.api.test_celery_api import QA, celery_app
from tests.api.test_health_metrics import samples
from tests.batch.test_celery import broker, start_worker, stop

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is absent (apt-get install redis-server)"),
              pytest.mark.slow]  # real Celery workers and a Redis server
__all__ = ["QA", "broker", "celery_app", "receiver"]  # fixtures, imported for this module's tests


def test_around_runs_on_celery(celery_app: Callable[..., Any], serve: Callable[..., Served], broker: str,
                               receiver: Receiver, tmp_path: Path) -> None:
    options = {"callback_secret": SECRET, "callback_hosts": (f"127.0.0.1:{receiver.port}",)}
    one, two = serve(celery_app(**options)), serve(celery_app(**options))
    ready = httpx.get(f"{one.url}/ready")
    assert ready.json() == {"status": "ready", "checked": ["run store", "checkpoint store", "broker"]}
    key = {**AUTH, "Idempotency-Key": "celery-once"}
    body = {"wait": False, "callback_url": f"http://127.0.0.1:{receiver.port}/done"}
    # No worker yet: the run waits in the queue, known to both API processes.
    queued = httpx.post(f"{one.url}/v1/robots/qa/runs", json=body, headers=key)
    again = httpx.post(f"{two.url}/v1/robots/qa/runs", json=body, headers=key)
    run_id = queued.json()["run_id"]
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    assert again.status_code == 202 and again.json()["run_id"] == run_id
    assert again.headers["idempotent-replayed"] == "true"
    listed = httpx.get(f"{two.url}/v1/runs", headers=AUTH).json()["runs"]
    assert [(run["run_id"], run["status"]) for run in listed] == [(run_id, "queued")]
    metrics = samples(httpx.get(f"{one.url}/metrics", headers=AUTH).text)
    assert metrics[("diagrama_queue_depth", ())] == 1
    worker = start_worker(broker, tmp_path)
    try:
        [delivery] = receiver.wait_for(1, "/done")
    finally:
        stop(worker)
    answered = httpx.get(f"{two.url}/v1/runs/{run_id}", headers=AUTH)
    assert answered.json()["status"] == "succeeded" and delivery.body == answered.content
    timestamp = delivery.headers["x-diagrama-timestamp"]
    signed = hmac.new(SECRET.encode(), timestamp.encode() + b"." + delivery.body, hashlib.sha256).hexdigest()
    assert delivery.headers["x-diagrama-signature"] == f"sha256={signed}"
    # The process that accepted it followed it to its end (for the callback): it counted it; the other saw no end.
    counted = samples(httpx.get(f"{one.url}/metrics", headers=AUTH).text)
    assert counted[("diagrama_runs_total", (("robot", "qa"), ("status", "succeeded")))] == 1
    assert not any(name == "diagrama_runs_total" for name, _ in samples(httpx.get(f"{two.url}/metrics",
                                                                                  headers=AUTH).text))
    listed = httpx.get(f"{one.url}/v1/runs", headers=AUTH).json()["runs"]
    assert [(run["run_id"], run["status"]) for run in listed] == [(run_id, "succeeded")]
    # The broker stops: neither process is ready, each naming it.
    redis.Redis.from_url(broker).shutdown(nosave=True)
    for served in (one, two):
        down = httpx.get(f"{served.url}/ready", timeout=30)
        assert down.status_code == 503 and down.json()["error"] == "not ready"
        assert [problem.split(":")[0] for problem in down.json()["problems"]] == ["broker"]
