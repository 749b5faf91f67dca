"""`streams` and `postgres_local`: one API process under closed-loop clients.

`streams` (issue 38, findings 4 and 6): one `diagrama api` (local backend, the runs folder's SQLite store) and N
clients (20, then 300), each in a loop: start a run of `three` (a simulated ClaudeRequest, then a Set) with `wait:
false` and read its event stream to `run_finished`; runs/s over `--seconds`, and errors (any run not seen to
finish). Target: 300 clients at least 80% of 20 clients' throughput, no error. Then on Celery: `--open-streams`
(1,000) event streams held open on one API process (runs queued while no worker runs), new runs and reads asked
for meanwhile, then two workers started: every stream must end with `run_finished`, no request fail.

`postgres_local` (finding 5): the same API on SQLite and on PostgreSQL (`--store postgresql+psycopg://…`), 100
clients each waiting for their run's result (`wait: true`); target: PostgreSQL at least 70% of SQLite's runs/s.

The clients run in `--client-procs` processes of their own (benchmarks.faults.client), each one httpx pool on
asyncio; their CPU is printed beside the API's, as a share of one core, so a reader can see which one was the bound.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.faults.client import Stream, follow, new_client, start_run
from benchmarks.faults.procs import Api, Lab, Postgres, Redis, start_worker
from benchmarks.faults.report import Outcome, percentile
from benchmarks.faults.robots import write_robots

ROOT = Path(__file__).resolve().parents[2]


def measure(lab: Lab, api: Api, clients: int, seconds: float, procs: int, mode: str,
            database: Postgres | None = None) -> dict[str, Any]:
    """`clients` closed loops on the API for `seconds`, in `procs` client processes; their counts added up."""
    procs = max(1, min(procs, clients))
    start_at = time.time() + 3.0  # the client processes' imports are done by then
    logs = []
    for number in range(procs):
        share = clients // procs + (1 if number < clients % procs else 0)
        config = {"base": api.url, "robot": "three", "clients": share, "seconds": seconds, "mode": mode,
                  "start_at": start_at}
        log = f"load-{clients}-{mode}-{number}.log"
        lab.spawn([sys.executable, "-m", "benchmarks.faults.client", json.dumps(config)], log, cwd=ROOT)
        logs.append(log)
    time.sleep(max(0.0, start_at - time.time()))
    api_cpu, database_began = api.cpu(), database.cpu() if database else 0.0
    time.sleep(seconds)
    api_cpu = api.cpu() - api_cpu
    database_cpu = database.cpu() - database_began if database else None
    loads = lab.processes[-procs:]
    for process in loads:
        process.wait(timeout=seconds + 600)
    counts = []
    for log in logs:
        last = lab.log_tail(log, 1)
        if not last.startswith("{"):
            raise RuntimeError(f"a client process failed:\n{lab.log_tail(log)}")
        counts.append(json.loads(last))
    latencies = [value for one in counts for value in one["latencies"]]
    completed = sum(one["completed"] for one in counts)
    return {"clients": clients, "seconds": seconds, "completed": completed, "runs_per_s": completed / seconds,
            "late": sum(one["late"] for one in counts), "errors": sum(one["errors"] for one in counts),
            "samples": [s for one in counts for s in one["samples"]][:6],
            "p50_s": percentile(latencies, 0.5), "p99_s": percentile(latencies, 0.99),
            "api_cpu": api_cpu / seconds, "client_cpu": sum(one["cpu_s"] for one in counts) / seconds,
            "postgres_cpu": database_cpu / seconds if database_cpu is not None else None}


def _figure(found: dict[str, Any]) -> str:
    database = f", PostgreSQL {found['postgres_cpu']:.0%}" if found.get("postgres_cpu") is not None else ""
    return (f"{found['runs_per_s']:.1f} runs/s (p50 {found['p50_s'] or 0:.2f} s, p99 {found['p99_s'] or 0:.2f} s; "
            f"API CPU {found['api_cpu']:.0%}, clients {found['client_cpu']:.0%}{database} of a core)")


def streams(options: argparse.Namespace) -> Outcome:
    out = Outcome()
    seconds = options.seconds or (5.0 if options.quick else 20.0)
    lab = Lab("streams", keep=options.keep)
    try:
        api = Api(lab, write_robots(lab.root / "robots"), log_level="warning")
        measure(lab, api, 20, 2.0, 1, "stream")  # warm-up: the robot's load, the simulator, the store
        levels = [measure(lab, api, clients, seconds, options.client_procs, "stream") for clients in (20, 300)]
        out.details["local"] = levels
        out.details["local_api_log"] = lab.log_tail("api.log", 10)
    finally:
        lab.close()
    few, many = levels
    for level in levels:
        out.row("streams", f"{level['clients']} streaming clients, local backend, {seconds:.0f} s", _figure(level))
    ratio = many["runs_per_s"] / few["runs_per_s"] if few["runs_per_s"] else 0.0
    out.row("streams", "300 clients' throughput / 20 clients'", f"{ratio:.0%}", "≥ 80%", ratio >= 0.8)
    errors = few["errors"] + many["errors"]
    out.row("streams", "errors (20 and 300 clients)", f"{few['errors']} + {many['errors']}", "0", errors == 0)
    if errors:
        out.row("streams", "… such as", "; ".join(few["samples"] + many["samples"])[:200])
    _open_streams(options, out)
    return out


# Long: one timeline (queue runs, hold their streams, ask for more meanwhile, start workers, count), in order.
async def _hold(api: Api, lab: Lab, redis: Redis, count: int, out: Outcome) -> None:
    opened = 0
    all_open = asyncio.Event()

    def one_open() -> None:
        nonlocal opened
        opened += 1
        if opened == len(runs):
            all_open.set()

    async with new_client(api.url, count + 64) as client:
        gate = asyncio.Semaphore(32)
        starts: collections.Counter[str] = collections.Counter()

        async def queued() -> str | None:
            async with gate:
                answer = await start_run(client, "three")
            starts[str(answer.status_code)] += 1
            return answer.json()["run_id"] if answer.status_code == 202 else None

        runs = [run_id for run_id in await asyncio.gather(*(queued() for _ in range(count))) if run_id]
        began = time.monotonic()
        readers = [asyncio.create_task(follow(client, run_id, opened=one_open)) for run_id in runs]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_open.wait(), 120)
        held = opened
        await asyncio.sleep(1.0)
        meanwhile: collections.Counter[str] = collections.Counter()
        for _ in range(20):
            try:
                meanwhile[f"POST {(await start_run(client, 'three', seconds=30)).status_code}"] += 1
                meanwhile[f"GET {(await client.get(f'/v1/runs/{runs[0]}', timeout=30)).status_code}"] += 1
            except Exception as exc:  # counted: a request that got no answer
                meanwhile[type(exc).__name__] += 1
        for number in (1, 2):
            start_worker(lab, redis.url, 4, name=f"worker-{number}")
        done, left = await asyncio.wait(readers, timeout=120 + count / 5)
        for task in left:
            task.cancel()
        ended: list[Stream] = [task.result() for task in done]
    finished = sum(1 for s in ended if s.closed and s.terminal == "run_finished")
    failed = [s for s in ended if s.error is not None]
    out.details["celery"] = {"starts": dict(starts), "held_open": held, "meanwhile": dict(meanwhile),
                             "finished": finished, "stream_errors": collections.Counter(s.error for s in failed),
                             "samples": [s.body for s in failed[:3]], "never_ended": len(left),
                             "seconds_to_end": round(time.monotonic() - began, 1),
                             "api_log": lab.log_tail("api.log", 10)}
    bad = sum(1 for key, n in meanwhile.items() if not key.endswith(("200", "202"))) + len(runs) - held
    out.row("streams", f"Celery: requests failed while {held} of {count} streams were open", bad, "0",
            bad == 0 and starts.get("202") == count)
    out.row("streams", f"Celery: streams ending with run_finished, of {count}", finished, f"{count}", finished == count)


def _open_streams(options: argparse.Namespace, out: Outcome) -> None:
    count = options.open_streams if options.open_streams is not None else 200 if options.quick else 1000
    if count <= 0:
        return
    lab = Lab("streams-celery", keep=options.keep)
    try:
        redis = Redis(lab)
        api = Api(lab, write_robots(lab.root / "robots"), backend="celery", broker=redis.url,
                  store=f"sqlite:///{lab.root / 'store.db'}", log_level="warning")
        asyncio.run(_hold(api, lab, redis, count, out))
    finally:
        lab.close()


def postgres_local(options: argparse.Namespace) -> Outcome:
    out = Outcome()
    seconds = options.seconds or (5.0 if options.quick else 20.0)
    found = {}
    lab = Lab("postgres-local", keep=options.keep)
    try:
        robots = write_robots(lab.root / "robots")
        postgres = Postgres(lab)
        # PostgreSQL's run writes on the event loop (psycopg's AsyncConnection, the default), and on a writer
        # thread (DIAGRAMA_STORE_WRITES=thread): the issue asks for both measured.
        for name, store, env in (("SQLite", None, {}), ("PostgreSQL", postgres.url, {}),
                                 ("PostgreSQL, writes on threads", postgres.url, {"DIAGRAMA_STORE_WRITES": "thread"})):
            api = Api(lab, robots, store=store, log_level="warning", log=f"api-{name}.log", env=env)
            measure(lab, api, 20, 2.0, 1, "wait")  # warm-up
            found[name] = measure(lab, api, 100, seconds, options.client_procs, "wait",
                                  postgres if store else None)
            assert api.process is not None
            api.process.terminate()
            api.process.wait(timeout=60)
    finally:
        lab.close()
    out.details = found
    for name, level in found.items():
        out.row("postgres_local", f"100 clients waiting for their runs, {name}, {seconds:.0f} s", _figure(level))
    ratio = found["PostgreSQL"]["runs_per_s"] / found["SQLite"]["runs_per_s"] if found["SQLite"]["runs_per_s"] else 0
    out.row("postgres_local", "PostgreSQL's throughput / SQLite's", f"{ratio:.0%}", "≥ 70%", ratio >= 0.7)
    threads = found["PostgreSQL, writes on threads"]["runs_per_s"] / found["SQLite"]["runs_per_s"] \
        if found["SQLite"]["runs_per_s"] else 0
    out.row("postgres_local", "the same with the writes on a thread pool / SQLite's", f"{threads:.0%}")
    errors = found["SQLite"]["errors"] + found["PostgreSQL"]["errors"]
    out.row("postgres_local", "errors (SQLite + PostgreSQL)", f"{found['SQLite']['errors']} + "
            f"{found['PostgreSQL']['errors']}", "0", errors == 0)
    return out
