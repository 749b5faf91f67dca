"""`blips`: Redis stopped for 10 s, then PostgreSQL restarted, under 20 streaming clients on Celery; issue 38's
targets: no accepted run is lost (each ends `succeeded`, `failed`, `waiting` or `cancelled`), and no event stream
ends, or stays open, without a terminal event (`run_finished`, `run_interrupted`).

Celery on Redis (append-only file: stopped with SIGTERM and started again on the same port and folder it keeps its
data, as a production broker does), the store on a throwaway PostgreSQL cluster, one `diagrama api --backend celery`,
two `diagrama worker --concurrency 4`. Each client, in a loop: start a run of `steps` (five Function steps of 0.1 s)
with `wait: false`, read its event stream to its end; a stream that fails (an HTTP error, a dropped connection) or
ends without a terminal event is read again from its last event (`Last-Event-ID`), as a client would. Timeline:
warm-up, Redis stopped (SIGTERM) for `outage` seconds and started, a settle period, `pg_ctl restart -m fast`, a
settle period (clients still starting runs), then no new runs and `grace` seconds for every run and stream to end.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time

import httpx

from benchmarks.faults.client import ENDED, TERMINAL, follow, new_client, start_run, status_of
from benchmarks.faults.procs import Api, Lab, Postgres, Redis, start_worker
from benchmarks.faults.report import Outcome
from benchmarks.faults.robots import write_robots

CLIENTS = 20


class Load:
    """The clients' shared record: accepted runs, refused starts and stream troubles by phase."""

    def __init__(self) -> None:
        self.phase = "warm-up"
        self.starting = True
        self.accepted: dict[str, str] = {}
        """run id → the phase it was accepted in."""
        self.refused: collections.Counter[str] = collections.Counter()
        self.answers: collections.Counter[str] = collections.Counter()
        """Refused starts by answer: `HTTP 503`, or the error's name where none came."""
        self.samples: list[str] = []
        self.stream_errors: collections.Counter[str] = collections.Counter()
        self.cut: dict[str, int] = {}
        """run id → times its stream was closed by the server without a terminal event."""
        self.terminal: set[str] = set()
        self.open: set[str] = set()
        self.last_event: dict[str, str] = {}

    def note(self, what: str) -> None:
        if len(self.samples) < 12:
            self.samples.append(f"{self.phase}: {what}"[:300])


async def _client(number: int, client: httpx.AsyncClient, load: Load, effects: str) -> None:
    sequence = 0
    while load.starting:
        sequence += 1
        phase = load.phase
        try:
            answer = await start_run(client, "steps", {"tag": f"b{number}-{sequence}", "effects": effects,
                                                       "pause": 0.1}, seconds=30)
        except httpx.HTTPError as exc:
            load.refused[phase] += 1
            load.answers[type(exc).__name__] += 1
            load.note(f"POST {type(exc).__name__}")
            await asyncio.sleep(0.5)
            continue
        if answer.status_code != 202:
            load.refused[phase] += 1
            load.answers[f"HTTP {answer.status_code}"] += 1
            load.note(f"POST {answer.status_code} {answer.text[:160]}")
            await asyncio.sleep(0.5)
            continue
        run_id = answer.json()["run_id"]
        load.accepted[run_id] = phase
        await _read(run_id, client, load)


async def _read(run_id: str, client: httpx.AsyncClient, load: Load) -> None:
    """Follow the run's stream until it ends with a terminal event, reading again after an error or a cut."""
    after = 0
    load.open.add(run_id)  # until a terminal event came: a reader cancelled at the deadline leaves it here
    while True:
        stream = await follow(client, run_id, after=after,
                              heard=lambda name: load.last_event.__setitem__(run_id, name))
        after = stream.last_id
        # Done once a terminal event came, even when the connection then broke before the server closed it (a read
        # again after the last event has nothing more to send).
        if stream.terminal is not None:
            load.terminal.add(run_id)
            load.open.discard(run_id)
            return
        if stream.closed:
            load.cut[run_id] = load.cut.get(run_id, 0) + 1
            load.note(f"stream of {run_id} closed after event {after} without a terminal event")
        else:
            load.stream_errors[load.phase] += 1
            load.note(f"stream of {run_id}: {stream.error} {stream.body[:120]}")
        await asyncio.sleep(1.0)


# Long: the timeline (load, Redis down and up, PostgreSQL restarted, grace, the count), a few lines a step.
async def _scenario(lab: Lab, options: argparse.Namespace, out: Outcome) -> None:
    warm, outage, settle, grace = (3, 10, 5, 30) if options.quick else (5, 10, 10, 60)
    env = {"DIAGRAMA_VISIBILITY_TIMEOUT": str(options.visibility_timeout)} if options.visibility_timeout else {}
    postgres, redis = Postgres(lab), Redis(lab)
    api = Api(lab, write_robots(lab.root / "robots"), backend="celery", broker=redis.url, store=postgres.url, env=env)
    for number in (1, 2):
        start_worker(lab, redis.url, 4, env, f"worker-{number}")
    load = Load()
    timeline: list[tuple[float, str]] = []
    began = time.monotonic()

    def mark(phase: str) -> None:
        load.phase = phase
        timeline.append((round(time.monotonic() - began, 1), phase))
        if options.verbose:
            print(f"blips: {timeline[-1]} accepted {len(load.accepted)}", file=sys.stderr, flush=True)

    async with new_client(api.url, CLIENTS * 3) as client:
        clients = [asyncio.create_task(_client(n, client, load, str(lab.root / "effects.txt")))
                   for n in range(CLIENTS)]
        mark("warm-up")
        await asyncio.sleep(warm)
        mark("redis down")
        await asyncio.to_thread(redis.stop)
        await asyncio.sleep(outage)
        await asyncio.to_thread(redis.start)
        mark("after redis")
        await asyncio.sleep(settle)
        mark("postgres restart")
        restart_s = await asyncio.to_thread(postgres.restart)
        mark("after both")
        await asyncio.sleep(settle)
        load.starting = False
        mark("grace")
        _done, left = await asyncio.wait(clients, timeout=grace)
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        mark("count")
        gate = asyncio.Semaphore(CLIENTS)

        async def checked(run_id: str) -> str:
            async with gate:
                return await status_of(client, run_id)

        runs = list(load.accepted)
        statuses = dict(zip(runs, await asyncio.gather(*(checked(run_id) for run_id in runs)), strict=True))
        refused_runs = _refused_starts(lab)
        refused_ran = {run_id: await checked(run_id) for run_id in refused_runs}
    raised = _raised(lab)
    lost = {run_id: status for run_id, status in statuses.items() if status not in ENDED}
    still_open = sorted(load.open)
    cut = sorted(load.cut)
    out.details = {"timeline": timeline, "postgres_restart_s": round(restart_s, 2), "accepted": len(load.accepted),
                   "statuses": collections.Counter(statuses.values()),
                   "lost": {r: (s, load.accepted[r]) for r, s in lost.items()},
                   "refused_by_phase": dict(load.refused), "refused_by_answer": dict(load.answers),
                   "stream_errors_by_phase": dict(load.stream_errors),
                   "cut_streams": {r: load.cut[r] for r in cut},
                   "open_streams": {r: load.last_event.get(r) for r in still_open},
                   "refused_starts_that_ran": refused_ran, "tasks_raised": raised,
                   "samples": load.samples, "api_log": lab.log_tail("api.log", 25),
                   "worker_log": lab.log_tail("worker-1.log", 25)}
    _rows(out, load, statuses, lost, still_open, cut)
    out.row("blips", "worker tasks that raised (Celery's `raised unexpected`), such as",
            f"{len(raised)}{': ' + raised[0][:90] if raised else ''}")
    ran = sorted(run_id for run_id, status in refused_ran.items() if not status.startswith("HTTP 404"))
    out.row("blips", "starts answered 5xx whose run was queued and ran anyway (API log)",
            f"{len(ran)}{': ' + ', '.join(ran[:3]) if ran else ''}", "0", not ran)


def _raised(lab: Lab) -> list[str]:
    """The workers' `Task … raised unexpected: ERROR` lines' errors: tasks ended by an exception (acknowledged)."""
    found = []
    for log in sorted(lab.root.glob("worker-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if "raised unexpected" in line:
                try:
                    found.append(str(json.loads(line)["event"]).split("raised unexpected: ", 1)[-1])
                except (ValueError, KeyError):
                    found.append(line[:200])
    return found


def _refused_starts(lab: Lab) -> list[str]:
    """Run ids of the starts the API answered with a 5xx, from its `request` log lines (the body names none)."""
    found = []
    for line in (lab.root / "api.log").read_text(errors="replace").splitlines():
        if '"event":"request"' not in line or '"method":"POST"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("status", 0) >= 500 and entry.get("run_id") and entry.get("path", "").endswith("/runs"):
            found.append(str(entry["run_id"]))
    return found


def _rows(out: Outcome, load: Load, statuses: dict[str, str], lost: dict[str, str], still_open: list[str],
          cut: list[str]) -> None:
    out.row("blips", f"accepted runs that never ended, of {len(load.accepted)}", len(lost), "0", not lost)
    if lost:
        by_phase = collections.Counter(load.accepted[r] for r in lost)
        out.row("blips", "… by status; by the phase they were accepted in",
                f"{dict(collections.Counter(lost.values()))}; {dict(by_phase)}")
    bad = set(still_open) | set(cut)
    told = sum(1 for run_id in still_open if load.last_event.get(run_id) in TERMINAL)
    out.row("blips", "streams cut without a terminal event, or never ended",
            f"{len(bad)} ({len(cut)} cut, {len(still_open)} open, of which {told} after a terminal event)", "0",
            not bad)
    failed = sum(1 for status in statuses.values() if status == "failed")
    out.row("blips", "accepted runs that ended failed", failed)
    out.row("blips", "starts refused (5xx, no answer), by phase; by answer",
            f"{dict(load.refused)}; {dict(load.answers)}" if load.refused else 0)
    after = load.refused.get("after both", 0)
    out.row("blips", "starts refused once both were back (the last settle period)", after, "0", after == 0)
    out.row("blips", "stream reads broken off without a terminal event (an HTTP error, a cut body), read again; "
            "by phase", dict(load.stream_errors) or 0)


def blips(options: argparse.Namespace) -> Outcome:
    out = Outcome()
    lab = Lab("blips", keep=options.keep)
    try:
        asyncio.run(_scenario(lab, options, out))
    finally:
        lab.close()
    return out
