"""Memory over time: a long-lived studio, and a Celery worker, under a steady load; resident memory as it goes.

    python -m benchmarks.soak                      # 2,000 validations and 500 runs in one studio; 1,000 Celery rows
    python -m benchmarks.soak --validations 400 --runs 100 --rows 0

The studio is `diagrama serve` as its own process over a copy of the examples, driven over HTTP
as the page drives it: validations of the order agent (each with another description, as typing
makes them) and offline runs of it, each followed to its end. The worker is `diagrama worker`
(one process) fed a `diagrama batch --backend celery` of the same diagram; its RSS is the sum of
the worker's processes. Printed: RSS at start, after warm-up, and at the end, and the growth
from the warm start (issue 25's target: +40 MiB at most).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.serving import free_port

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024


def rss(pid: int) -> int:
    """Resident memory of a process and its children, in bytes (from /proc)."""
    total = 0
    for one in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _children(pid: int) -> list[int]:
    try:
        found = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
    return [*found, *(grand for child in found for grand in _children(child))]


def _diagrama() -> list[str]:
    script = Path(sys.executable).with_name("diagrama")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "engine.cli"]


class Studio:
    """`diagrama serve` over a copy of the examples, as its own process, and an HTTP client with its token."""

    def __init__(self, folder: Path) -> None:
        shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
        self.port = free_port()
        self.process = subprocess.Popen([*_diagrama(), "serve", str(folder), "--port", str(self.port),
                                         "--runs-dir", str(folder.parent / "runs")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder.parent)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60)
        for _ in range(600):
            try:
                session = self.client.get("/api/session").json()
                break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise RuntimeError("the studio did not start")
        self.headers = {session["token_header"]: session["token"], "origin": f"http://127.0.0.1:{self.port}"}
        self.diagram = self.client.get("/api/diagrams/order_agent.yaml").json()["diagram"]

    def validate(self, number: int) -> None:
        draft = self.diagram | {"description": f"edit number {number}"}
        answer = self.client.post("/api/validate", json={"diagram": draft, "path": "order_agent.yaml"},
                                  headers=self.headers)
        answer.raise_for_status()

    def run(self) -> str:
        started = self.client.post("/api/diagrams/order_agent.yaml/runs", json={"inputs": {}, "offline": True},
                                   headers=self.headers)
        started.raise_for_status()
        run_id = started.json()["run_id"]
        while True:
            status = self.client.get(f"/api/runs/{run_id}", params={"after": 10**6}).json().get("status", "running")
            if status != "running":
                return str(status)
            time.sleep(0.005)

    @property
    def rss(self) -> int:
        return rss(self.process.pid)

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(20)


def studio_soak(validations: int, runs: int, warm: tuple[int, int] = (100, 25)) -> dict[str, Any]:
    """RSS of one studio at start, after `warm` (validations, runs), and after `validations` and `runs` more."""
    with tempfile.TemporaryDirectory() as folder:
        studio = Studio(Path(folder) / "diagrams")
        try:
            figures: dict[str, Any] = {"start": studio.rss}
            for number in range(warm[0]):
                studio.validate(number)
            for _ in range(warm[1]):
                studio.run()
            figures["warm"] = studio.rss
            began = time.perf_counter()
            statuses: dict[str, int] = {}
            for number in range(validations):
                studio.validate(number)
                if runs and number % max(1, validations // runs) == 0 and sum(statuses.values()) < runs:
                    status = studio.run()
                    statuses[status] = statuses.get(status, 0) + 1
            while sum(statuses.values()) < runs:
                status = studio.run()
                statuses[status] = statuses.get(status, 0) + 1
            figures |= {"end": studio.rss, "seconds": time.perf_counter() - began, "runs": statuses}
            return figures
        finally:
            studio.close()


def worker_soak(rows: int) -> dict[str, Any] | None:
    """RSS of one Celery worker (all its processes) at start, after the first tenth of `rows`, and at the end."""
    if shutil.which("redis-server") is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        place = Path(folder)
        shutil.copytree(ROOT / "diagrams", place / "diagrams",
                        ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
        (place / "rows.csv").write_text("question\n" + "".join(f"Where is my order {n}?\n" for n in range(rows)))
        port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL)
        broker = f"redis://127.0.0.1:{port}/0"
        environ = os.environ | {"DIAGRAMA_STORE": f"sqlite:///{place / 'store.db'}", "DIAGRAMA_BROKER": broker}
        worker = subprocess.Popen([*_diagrama(), "worker", "--broker", broker, "--concurrency", "1"], cwd=place,
                                  env=environ, start_new_session=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            time.sleep(3)  # the worker and its pool process are up
            figures: dict[str, Any] = {"start": rss(worker.pid)}
            warm = max(1, rows // 10)
            for name, count in (("warm", warm), ("end", rows - warm)):
                (place / f"{name}.csv").write_text("question\n" + "".join(f"Where is my order {n}?\n"
                                                                          for n in range(count)))
                subprocess.run([*_diagrama(), "batch", "diagrams/order_agent.yaml", "--inputs", f"{name}.csv",
                                "--backend", "celery", "--broker", broker, "--offline", "--runs-dir", "runs"],
                               cwd=place, env=environ, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                figures[name] = rss(worker.pid)
            return figures
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(30)
            redis.terminate()
            redis.wait(10)


def _line(name: str, figures: dict[str, Any]) -> str:
    growth = (figures["end"] - figures["warm"]) / MiB
    return (f"{name:<26} start {figures['start'] / MiB:7.1f} MiB   after warm-up {figures['warm'] / MiB:7.1f} MiB   "
            f"end {figures['end'] / MiB:7.1f} MiB   growth from warm {growth:+6.1f} MiB "
            f"({'within' if growth <= 40 else 'OVER'} +40 MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--validations", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--rows", type=int, default=1000, help="Celery rows (0: no worker soak)")
    options = parser.parse_args()
    studio = studio_soak(options.validations, options.runs)
    print(_line(f"studio ({options.validations} validations, {options.runs} runs)", studio))
    print(f"{'':<26} {studio['seconds']:.1f} s; runs: {studio['runs']}")
    if options.rows:
        worker = worker_soak(options.rows)
        print(_line(f"celery worker ({options.rows} rows)", worker) if worker else "celery worker: no redis-server")


if __name__ == "__main__":
    main()
