"""`diagrama api`'s triggers: how late a schedule fires after its tick (target: within 1 s), and how fast a signed
webhook is answered 202 (target: 10 ms p50).

The API runs under uvicorn in another process on 127.0.0.1 (its own interpreter), `--offline`, the local backend,
the run store in SQLite (each tick and each delivery is a claim row there), logs as JSON lines to a file. Two
robots: `ticker` has a schedule every second (`* * * * * *`); `hooked` a GitHub webhook whose input template reads
the issue's title. The webhook figures: on one kept-alive connection, after a warm-up, each call a new GitHub
delivery (its X-Hub-Signature-256 computed here), timed from the request to the 202. The schedule figures: each
`schedule_fired` line's `lag_ms` (the run started, through the backend's start, that long after its tick), over
`--seconds` ticks, measured while nothing else is sent.

    python -m benchmarks.triggers [--calls 300] [--seconds 20]
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from benchmarks.serving import free_port, percentile, wait_for_server

SECRET = "benchmark-webhook-secret"
TICKER = """
diagram: ticker
schedules:
  - {cron: "* * * * * *", inputs: {word: tick}}
blocks:
  - {id: start, type: Start, inputs: {word: none}, next: keep}
  - {id: keep, type: Set, set: {kept: "{{ word }}"}}
"""
HOOKED = """
diagram: hooked
webhook: {secret_env: HOOK_SECRET, scheme: github, inputs: {title: "{{ body.issue.title }}"}}
blocks:
  - {id: start, type: Start, inputs: {title: none}, next: keep}
  - {id: keep, type: Set, set: {kept: "{{ title }}"}}
"""
SERVER = """
import sys
from pathlib import Path
import uvicorn
from engine.runtime.context import Services
from engine.web.api import create_app
from engine.runs.service_logs import configure

folder, runs, port, logs = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
configure("json", "info", stream=open(logs, "w", buffering=1))
app = create_app(folder, runs_dir=runs, offline=True, rpm=None,
                 services=Services(offline=True, environ={"DIAGRAMA_API_KEYS": "bench=dgk_benchmark-0123456789abcdef",
                                                          "HOOK_SECRET": sys.argv[5]}))
uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
"""
BODY = json.dumps({"action": "opened", "issue": {"title": "Login fails", "number": 42}}).encode()
SIGNATURE = "sha256=" + hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()


def deliveries(client: httpx.Client, count: int) -> list[float]:
    """Milliseconds from each signed delivery to its 202."""
    took: list[float] = []
    for _ in range(count):
        headers = {"Content-Type": "application/json", "X-Hub-Signature-256": SIGNATURE,
                   "X-GitHub-Delivery": str(uuid.uuid4()), "X-GitHub-Event": "issues"}
        began = time.perf_counter()
        answered = client.post("/v1/hooks/hooked", content=BODY, headers=headers)
        took.append((time.perf_counter() - began) * 1000)
        assert answered.status_code == 202, answered.text
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seconds", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder, runs_dir, port, logs = Path(temp) / "robots", Path(temp) / "runs", free_port(), Path(temp) / "log"
        folder.mkdir()
        (folder / "ticker.yaml").write_text(TICKER)
        (folder / "hooked.yaml").write_text(HOOKED)
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(folder), str(runs_dir), str(port), str(logs),
                                   SECRET])
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for_server(f"{base}/openapi.json", server)
            with httpx.Client(base_url=base, timeout=30) as client:
                deliveries(client, 30)  # warm-up: the diagram loaded, the store's connections made
                took = deliveries(client, options.calls)
            quiet_from = time.time()
            time.sleep(options.seconds)
        finally:
            server.terminate()
            server.wait(timeout=10)
        lines = [json.loads(line) for line in logs.read_text().splitlines() if line.startswith("{")]
    lags = [line["lag_ms"] for line in lines if line.get("event") == "schedule_fired" and line["tick"] >= quiet_from]
    missed = [line for line in lines if line.get("event") == "schedule_missed"]
    print(json.dumps({
        "benchmark": "triggers", "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "webhook_calls": options.calls,
        "webhook_202_p50_ms": round(statistics.median(took), 3), "webhook_202_p99_ms": round(percentile(took, 0.99), 3),
        "ticks": len(lags), "schedule_lag_p50_ms": round(statistics.median(lags), 3) if lags else None,
        "schedule_lag_max_ms": round(max(lags), 3) if lags else None, "missed_ticks": len(missed),
    }))


if __name__ == "__main__":
    main()
