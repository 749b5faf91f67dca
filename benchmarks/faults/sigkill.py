"""`sigkill`: a Celery worker killed (SIGKILL, its whole process group, as a lost machine or container) while it
runs an API run; issue 38's target: the run is not lost, no step that had finished runs again, and another worker
picks it up within 30 s.

Celery on Redis, the store on a throwaway PostgreSQL cluster, one `diagrama api --backend celery`, two `diagrama
worker --concurrency 1`. Each trial starts a run of `steps` (five Function steps, each writing its effect line, then
sleeping), waits for a random step's line, sleeps a random part of the step, finds the worker that holds the run
(the pid in the run's durable record, `run_states.pid`; else the pid on its last effect line), kills its group,
starts a replacement worker and follows the run until it ends or `--trial-timeout` passes.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from typing import Any

import httpx

from benchmarks.faults.client import ENDED
from benchmarks.faults.procs import AUTH, Api, Lab, Postgres, Redis, process_group, start_worker
from benchmarks.faults.report import Outcome, median, seconds
from benchmarks.faults.robots import STEPS, Effect, read_effects, repeated_steps, write_robots

RESUME_TARGET_S = 30.0


def _status(client: httpx.Client, run_id: str) -> str:
    try:
        answer = client.get(f"/v1/runs/{run_id}")
    except httpx.HTTPError as exc:
        return type(exc).__name__
    return str(answer.json().get("status")) if answer.status_code == 200 else f"HTTP {answer.status_code}"


class Trials:
    def __init__(self, lab: Lab, options: argparse.Namespace) -> None:
        self.lab = lab
        self.pause = 0.3 if options.quick else 0.5
        self.timeout = options.trial_timeout or (60.0 if options.quick else 120.0)
        self.rng = random.Random(options.seed)
        self.effects = lab.root / "effects.txt"
        self.env = ({"DIAGRAMA_VISIBILITY_TIMEOUT": str(options.visibility_timeout)}
                    if options.visibility_timeout else {})
        robots = write_robots(lab.root / "robots")
        self.postgres = Postgres(lab)
        self.redis = Redis(lab)
        self.api = Api(lab, robots, backend="celery", broker=self.redis.url, store=self.postgres.url, env=self.env)
        self.started = 0
        self.workers = [self._worker() for _ in range(2)]
        self.client = httpx.Client(base_url=self.api.url, headers=AUTH, timeout=60)

    def _worker(self) -> subprocess.Popen[bytes]:
        self.started += 1
        return start_worker(self.lab, self.redis.url, 1, self.env, f"worker-{self.started}")

    def _mine(self, tag: str) -> list[Effect]:
        return [effect for effect in read_effects(self.effects) if effect.tag == tag]

    def _holder(self, run_id: str, mine: list[Effect]) -> tuple[subprocess.Popen[bytes] | None, Any]:
        """The worker whose process group holds the run: by its durable record's pid, else its last effect's."""
        rows = self.postgres.query("SELECT pid FROM run_states WHERE run_id = %s", run_id)
        recorded = rows[0][0] if rows else None
        for pid in (recorded, mine[-1].pid if mine else None):
            group = process_group(pid) if pid else None
            for worker in self.workers:
                if group == worker.pid:
                    return worker, recorded
        return None, recorded

    # Long: one trial from its start to its end, each step a few lines, in the order the trial takes them.
    def trial(self, number: int) -> dict[str, Any]:
        tag, step = f"k{number}", self.rng.randint(1, STEPS)
        into = self.rng.uniform(0.1, 0.9) * self.pause
        answer = self.client.post("/v1/robots/steps/runs", json={
            "inputs": {"tag": tag, "effects": str(self.effects), "pause": self.pause}, "wait": False})
        if answer.status_code != 202:
            return {"tag": tag, "error": f"POST {answer.status_code} {answer.text[:300]}", "status": None}
        run_id = answer.json()["run_id"]
        found: dict[str, Any] = {"tag": tag, "run_id": run_id, "kill_at_step": step, "into_step_s": round(into, 3)}
        deadline = time.monotonic() + 90
        while not any(effect.step == step for effect in self._mine(tag)):
            if time.monotonic() > deadline:
                return found | {"error": f"never reached step {step}", "status": _status(self.client, run_id)}
            time.sleep(0.01)
        time.sleep(into)
        mine = self._mine(tag)
        worker, recorded_pid = self._holder(run_id, mine)
        found |= {"store_pid": recorded_pid, "effects_before": [e.step for e in mine]}
        if worker is None:
            return found | {"error": "no worker holds the run", "status": _status(self.client, run_id)}
        killed_at = time.time()
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        found |= {"killed_worker": worker.pid, "after_kill_status": _status(self.client, run_id)}
        self.workers = [w for w in self.workers if w is not worker] + [self._worker()]
        status, resumed, ended_at = "", None, None
        while time.time() - killed_at < self.timeout:
            status = _status(self.client, run_id)
            now = self._mine(tag)
            if resumed is None and len(now) > len(mine):
                resumed = now[len(mine)].at - killed_at
            if status in ENDED:
                ended_at = time.time() - killed_at
                break
            time.sleep(0.2)
        now = self._mine(tag)
        again, in_flight_again = repeated_steps(now, len(mine))
        return found | {"status": status, "resumed_s": resumed if resumed is not None or ended_at is None else
                        ended_at, "ended_s": ended_at, "effects": [e.step for e in now],
                        "finished_steps_again": again, "in_flight_again": in_flight_again}

    def close(self) -> None:
        self.client.close()


def sigkill(options: argparse.Namespace) -> Outcome:
    out = Outcome()
    lab = Lab("sigkill", keep=options.keep)
    try:
        trials = Trials(lab, options)
        count = options.trials or (3 if options.quick else 20)
        results = []
        for number in range(count):
            result = trials.trial(number)
            results.append(result)
            if options.verbose:
                print(f"sigkill trial {number}: {result}", file=sys.stderr, flush=True)
        time.sleep(1)
        for result in results:  # a run lost at its trial's end may have ended since
            if result.get("run_id") and result.get("status") != "succeeded":
                result["status_at_end"] = _status(trials.client, result["run_id"])
        trials.close()
        out.details = {"trials": results, "pause_s": trials.pause, "trial_timeout_s": trials.timeout,
                       "visibility_timeout": options.visibility_timeout or "engine default",
                       "logs": {name: lab.log_tail(name, 15) for name in ("api.log", "worker-1.log")}}
        _rows(out, results, trials.timeout)
    finally:
        lab.close()
    return out


def _rows(out: Outcome, results: list[dict[str, Any]], timeout: float) -> None:
    count = len(results)
    lost = [r for r in results if r.get("status") != "succeeded"]
    again = sum(r.get("finished_steps_again", 0) for r in results)
    waits = [r["resumed_s"] for r in results if r.get("resumed_s") is not None]
    slow = [r for r in results if r.get("resumed_s") is None or r["resumed_s"] > RESUME_TARGET_S]
    out.row("sigkill", f"runs not succeeded {timeout:.0f} s after the kill, of {count}", len(lost), "0", not lost)
    out.row("sigkill", "finished steps run again (beyond the in-flight one)", again, "0", again == 0)
    out.row("sigkill", "kill → the run goes on (its next effect), worst", seconds(max(waits) if waits else None),
            f"≤ {RESUME_TARGET_S:.0f} s each", not slow and bool(results))
    out.row("sigkill", "kill → the run goes on, median; runs that never did",
            f"{seconds(median(waits))}; {count - len(waits)}")
    out.row("sigkill", "in-flight step run again (allowed)", sum(r.get("in_flight_again", 0) for r in results))
    if lost:
        out.row("sigkill", "lost runs' statuses (then, at the end)", ", ".join(
            f"{r.get('run_id', r['tag'])}: {r.get('status') or r.get('error')} → {r.get('status_at_end', '?')}"
            for r in lost[:4]) + (" …" if len(lost) > 4 else ""))
