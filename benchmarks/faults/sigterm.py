"""`sigterm`: a deploy's stop of `diagrama api` (local backend, the runs folder's SQLite store) with 10 runs in
flight; issue 38's target: all 10 end `succeeded`, after the drain or a restart.

Ten runs of `steps` (five Function steps of `pause` seconds: about 5 s a run) are started and their event streams
followed; when they are at their second step the API gets SIGTERM. While it drains, `GET /ready` is polled (issue 38:
503 while draining) and one new run is asked for (to be refused). Once it has exited (the seconds are printed) it
is started again on the same port, runs folder and store: with `--resume-interrupted` where `diagrama api` has that
option, else each run that reads `interrupted` is resumed with `POST /v1/runs/{id}/resume`; then every run is
followed until it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import time
from typing import Any

import httpx

from benchmarks.faults.client import ENDED, Stream, follow, new_client, start_run, status_of
from benchmarks.faults.procs import Api, Lab, api_options
from benchmarks.faults.report import Outcome, seconds
from benchmarks.faults.robots import read_effects, repeated_steps, write_robots

RUNS = 10


async def _code(call: Any) -> str:
    try:
        return str((await call).status_code)
    except httpx.HTTPError as exc:
        return type(exc).__name__


# Long: the scenario's timeline (start, SIGTERM, drain, restart, resume, follow), each step a few lines in order.
async def _scenario(lab: Lab, options: argparse.Namespace, out: Outcome) -> None:
    pause = 0.5 if options.quick else 1.0
    effects = lab.root / "effects.txt"
    help_text = api_options()
    drain, automatic = "--drain-timeout" in help_text, "--resume-interrupted" in help_text
    api = Api(lab, write_robots(lab.root / "robots"), log="api-1.log")
    details: dict[str, Any] = {"drain_option": drain, "resume_interrupted_option": automatic, "pause_s": pause}
    async with new_client(api.url, 64) as client:
        runs: list[str] = []
        for number in range(RUNS):
            answer = await start_run(client, "steps", {"tag": f"t{number}", "effects": str(effects), "pause": pause})
            if answer.status_code != 202:
                raise RuntimeError(f"a run was not started: {answer.status_code} {answer.text[:300]}")
            runs.append(answer.json()["run_id"])
        streams = [asyncio.create_task(follow(client, run_id)) for run_id in runs]
        await asyncio.sleep(pause * 1.5)
        details["ready_before"] = await _code(client.get("/ready", timeout=5))
        assert api.process is not None
        began = time.monotonic()
        os.kill(api.pid, signal.SIGTERM)
        ready: list[str] = []
        refused = None
        while api.process.poll() is None and time.monotonic() - began < 120:
            code = await _code(client.get("/ready", timeout=2))
            if not ready or ready[-1] != code:
                ready.append(code)
            if refused is None:
                refused = await _code(start_run(client, "steps", {"tag": "late", "effects": str(effects),
                                                                  "pause": 0.0}, seconds=5))
            await asyncio.sleep(0.2)
        exited = time.monotonic() - began if api.process.poll() is not None else None
        if exited is None:
            api.process.kill()
        details |= {"ready_while_draining": ready, "new_run_while_draining": refused, "exit_code": api.process.wait(),
                    "exit_s": exited, "api_log": lab.log_tail("api-1.log", 12)}
        done: list[Stream] = list(await asyncio.gather(*streams))
        cut = len(effects.read_text().splitlines()) if effects.exists() else 0
        api.log = "api-2.log"
        api.start(("--resume-interrupted",) if automatic else ())
        statuses = {run_id: await status_of(client, run_id) for run_id in runs}
        details["statuses_after_restart"] = dict(statuses)
        if not automatic:
            details["resumes"] = {run_id: await _code(client.post(f"/v1/runs/{run_id}/resume", json={"wait": False}))
                                  for run_id, status in statuses.items() if status == "interrupted"}
        deadline = time.monotonic() + (60 if options.quick else 120)
        while time.monotonic() < deadline and not all(status in ENDED for status in statuses.values()):
            await asyncio.sleep(0.5)
            statuses = {run_id: await status_of(client, run_id) for run_id in runs}
    details |= {"statuses": statuses, "streams": [vars(s) for s in done], "api_log_restart": lab.log_tail("api-2.log")}
    out.details = details
    _rows(out, runs, statuses, done, details, read_effects(effects)[:cut], read_effects(effects))


def _rows(out: Outcome, runs: list[str], statuses: dict[str, str], done: list[Stream], details: dict[str, Any],
          before: list[Any], after: list[Any]) -> None:
    succeeded = sum(1 for status in statuses.values() if status == "succeeded")
    how = "--resume-interrupted" if details["resume_interrupted_option"] else "POST …/resume"
    out.row("sigterm", f"runs in flight at SIGTERM that end succeeded (restart: {how})", f"{succeeded}/{len(runs)}",
            f"{len(runs)}/{len(runs)}", succeeded == len(runs))
    others = sorted({status for status in statuses.values() if status != "succeeded"})
    if others:
        out.row("sigterm", "the others' statuses", ", ".join(f"{s}: {list(statuses.values()).count(s)}" for s in others))
    drain = "with --drain-timeout" if details["drain_option"] else "no --drain-timeout option"
    out.row("sigterm", f"SIGTERM → API exited ({drain}; exit code {details['exit_code']})", seconds(details["exit_s"]))
    ready = details["ready_while_draining"]
    out.row("sigterm", "GET /ready while draining", " → ".join(ready) or "(exited at once)", "503",
            "503" in ready)
    out.row("sigterm", "a new run asked for while draining", details["new_run_while_draining"] or "(exited at once)",
            "refused (503)", details["new_run_while_draining"] == "503")
    terminal = sum(1 for s in done if s.closed and s.terminal is not None)
    out.row("sigterm", "event streams cut by the stop that ended with a terminal event", f"{terminal}/{len(done)}",
            f"{len(done)}/{len(done)}", terminal == len(done))
    again = 0
    for number in range(len(runs)):
        tag = f"t{number}"
        mine_before = [e for e in before if e.tag == tag]
        again += repeated_steps([e for e in after if e.tag == tag], len(mine_before))[0]
    out.row("sigterm", "finished steps run again (beyond the in-flight one)", again, "0", again == 0)


def sigterm(options: argparse.Namespace) -> Outcome:
    out = Outcome()
    lab = Lab("sigterm", keep=options.keep)
    try:
        asyncio.run(_scenario(lab, options, out))
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"a process did not stop: {exc}") from exc
    finally:
        lab.close()
    return out
