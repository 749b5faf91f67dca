"""Schedules (a diagram's `schedules:`): `diagrama api` fires each tick once, even with two API processes sharing one
run store; the run is marked with its trigger; missed ticks and overlaps follow the stated policy; `diagrama
schedules` lists the next ticks; a bad schedule is a load problem on its line."""

from __future__ import annotations

import asyncio
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner

from engine.cli import app as cli
from engine.compile.block import BlockRegistry
from engine.compile.loader import load_diagram
from engine.errors import DiagramInvalid
from tests.api.conftest import AUTH, GATES, inner

TICKER = """
diagram: ticker
schedules:
  - cron: "* * * * * *"
    inputs: {word: tick}
blocks:
  - id: start
    type: Start
    inputs: {word: none, count: 0}
    next: keep
  - id: keep
    type: Set
    set: {kept: "{{ word }}"}
"""

SLOW = """
diagram: slow
schedules:
  - cron: "* * * * * *"
blocks:
  - id: start
    type: Start
    inputs: {gate: schedule-overlap}
    next: hold
  - id: hold
    type: Hold
    with: {gate: "{{ gate }}"}
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def _store_run(app: Any, run_id: str) -> dict[str, Any] | None:
    store = inner(app).state.backend.store
    found: dict[str, Any] | None = store.run(run_id)
    return found


def test_a_tick_fires_once_across_two_apps_sharing_a_store(make_app: Callable[..., Any], robots_dir: Path,
                                                            store_url: str) -> None:
    _write(robots_dir, "ticker", TICKER)
    apps = [make_app(store_url=store_url), make_app(store_url=store_url, admin_keys=("ci",))]  # runs of no key
    schedulers = [inner(app).state.scheduler for app in apps]
    tick = float(int(time.time()))

    async def go() -> list[tuple[str, int, float, str, float]]:
        await asyncio.gather(*(scheduler.fire_due(tick + 0.2) for scheduler in schedulers))
        for scheduler in schedulers:
            await scheduler.settled()
        for app, scheduler in zip(apps, schedulers, strict=True):
            backend = inner(app).state.backend
            for *_, run_id, _lag in scheduler.fired:
                await backend.result(run_id)  # ended: then written to the store
            await backend.recorded()
        return [fired for scheduler in schedulers for fired in scheduler.fired]

    fired = asyncio.run(go())
    assert [(robot, index, when) for robot, index, when, _, _ in fired] == [("ticker", 0, tick)]
    run_id = fired[0][3]
    recorded = _store_run(apps[0], run_id)
    assert recorded is not None and recorded["trigger"] == "schedule:0" and recorded["inputs"] == {"word": "tick"}
    assert recorded["variables"]["kept"] == "tick"

    async def listed() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[1]), base_url="http://api.test",
                                     headers=AUTH) as caller:
            return dict((await caller.get("/v1/runs", params={"robot": "ticker"})).json())

    page = asyncio.run(listed())
    assert [(run["run_id"], run["trigger"]) for run in page["runs"]] == [(run_id, "schedule:0")]


@pytest.mark.slow
def test_the_scheduler_fires_each_second_within_a_second_of_its_tick(make_app: Callable[..., Any],
                                                                     robots_dir: Path, tmp_path: Path) -> None:
    _write(robots_dir, "ticker", TICKER)
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    apps = [make_app(store_url=url), make_app(store_url=url)]

    async def go() -> list[tuple[str, int, float, str, float]]:
        async with inner(apps[0]).router.lifespan_context(inner(apps[0])), \
                inner(apps[1]).router.lifespan_context(inner(apps[1])):
            await asyncio.sleep(2.6)
        return [fired for app in apps for fired in inner(app).state.scheduler.fired]

    fired = asyncio.run(go())
    ticks = [when for _, _, when, _, _ in fired]
    assert len(ticks) >= 2 and len(ticks) == len(set(ticks))  # each tick once, by one of the two
    assert all(lag < 1.0 for *_, lag in fired)


def test_a_tick_whose_last_run_still_runs_is_skipped(make_app: Callable[..., Any], robots_dir: Path) -> None:
    _write(robots_dir, "slow", SLOW)
    app = make_app()
    scheduler = inner(app).state.scheduler
    GATES["schedule-overlap"] = threading.Event()
    tick = float(int(time.time()))

    async def go() -> None:
        await scheduler.fire_due(tick)
        await scheduler.settled()
        await scheduler.fire_due(tick + 1)  # the first run holds its gate: this tick overlaps it
        await scheduler.settled()
        GATES["schedule-overlap"].set()
        await inner(app).state.backend.recorded()
        await scheduler.fire_due(tick + 2)
        await scheduler.settled()

    asyncio.run(go())
    assert [when for _, _, when, _, _ in scheduler.fired] == [tick, tick + 2]


def test_a_missed_tick_fires_once_within_the_grace_and_never_after_it(make_app: Callable[..., Any],
                                                                      robots_dir: Path) -> None:
    _write(robots_dir, "ticker", TICKER.replace('"* * * * * *"', '"0 * * * *"'))  # on the hour
    hour = float(int(time.time()) // 3600 * 3600)
    late, later = inner(make_app()).state.scheduler, inner(make_app()).state.scheduler

    async def go() -> None:
        await later.fire_due(hour + 61)  # the server came up 61 s after the tick: skipped
        await late.fire_due(hour + 30)  # 30 s after: fired once
        await late.fire_due(hour + 40)
        for scheduler in (late, later):
            await scheduler.settled()

    asyncio.run(go())
    assert [when for _, _, when, _, _ in late.fired] == [hour]
    assert list(later.fired) == []


def test_diagrama_schedules_lists_the_next_tick_in_its_timezone(robots_dir: Path) -> None:
    _write(robots_dir, "morning", TICKER.replace('cron: "* * * * * *"', 'cron: "0 8 * * 1-5"\n    timezone: '
                                                                      'Europe/Lisbon'))
    listed = CliRunner().invoke(cli, ["schedules", str(robots_dir), "--json"])
    assert listed.exit_code == 0, listed.output
    found = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [(item["robot"], item["schedule"], item["cron"], item["timezone"]) for item in found] == [
        ("morning", 0, "0 8 * * 1-5", "Europe/Lisbon")]
    assert found[0]["next"].endswith(("+00:00", "+01:00")) and "T08:00:00" in found[0]["next"]
    text = CliRunner().invoke(cli, ["schedules", str(robots_dir)])
    assert "morning  schedule 0  '0 8 * * 1-5'  Europe/Lisbon  next " in text.stdout
    assert "broken: not loaded" in text.stderr


@pytest.mark.parametrize(("schedule", "line", "says"), [
    ('{cron: "61 * * * *"}', 3, "no cron expression"),
    ('{cron: "0 8 * * *", timezone: Mars/Olympus}', 3, "no timezone named 'Mars/Olympus'"),
    ('{cron: "0 8 * * *", inputs: {count: many}}', 3, "input 'count' is a whole number"),
    ('{cron: "0 8 * * *", inputs: {wrod: x}}', 3, "the robot has no input 'wrod'"),
])
def test_a_bad_schedule_is_a_load_problem_on_its_line(tmp_path: Path, api_registry: BlockRegistry, schedule: str,
                                                      line: int, says: str) -> None:
    text = TICKER.replace('  - cron: "* * * * * *"\n    inputs: {word: tick}', f"  - {schedule}")
    path = _write(tmp_path, "bad", text)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, api_registry)
    problems = [(problem.file, problem.line, problem.message) for problem in caught.value.problems]
    assert any(file == str(path) and at == line and says in message for file, at, message in problems), problems
