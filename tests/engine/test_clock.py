"""`now(tz)` and `today(tz)` in templates: the run's clock, fixed at its start and kept by its checkpoints."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import pytest

from engine import BlockRegistry, DiagramInvalid, Services, execute
from engine.compile.loader import load_diagram
from engine.compile.templating import TemplateEnv
from engine.format.instant import Instant
from engine.format.snapshot import decode, encode
from engine.runs.checkpoints import CheckpointStore
from engine.runs.turn import resume_run

CLOCK = datetime.datetime(2026, 3, 1, 9, 0, tzinfo=datetime.UTC)

TIMED = """
diagram: timed
blocks:
  - id: start
    type: Start
    variables: {stamp: "", hour: 0, day: "", later: ""}
    set:
      stamp: "It is {{ now('Europe/Lisbon') }}"
      hour: "{{ now('America/New_York').hour }}"
      day: "{{ today('Asia/Tokyo') | string }}"
      at: "{{ now() }}"
    next: approve
  - id: approve
    type: Wait
    with: {prompt: "Go on?"}
    set: {later: "{{ now().strftime('%Y-%m-%d %H:%M %Z') }}", same: "{{ now() == at }}"}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "timed.yaml"
    path.write_text(text.lstrip("\n"), encoding="utf-8")
    return path


def test_now_and_today_read_the_run_clock_in_a_time_zone_and_a_resume_sees_the_same(
        tmp_path: Path, blocks: BlockRegistry, store: CheckpointStore) -> None:
    diagram = load_diagram(_write(tmp_path, TIMED), blocks)
    first = asyncio.run(execute(diagram, {}, runs_dir=tmp_path / "runs",
                                services=Services(checkpoints=store, run_clock=CLOCK)))
    assert first.status == "waiting"
    assert first.variables["stamp"] == "It is 2026-03-01T09:00:00+00:00"  # Lisbon is on UTC in March
    assert first.variables["hour"] == 4 and first.variables["day"] == "2026-03-01"
    # The resume's services know no clock: the checkpoint's is the run's.
    done = asyncio.run(resume_run(store, first.run_id, registry=blocks, answer="yes", runs_dir=tmp_path / "runs"))
    assert done.status == "succeeded", done.error
    assert done.variables["later"] == "2026-03-01 09:00 UTC" and done.variables["same"] is True
    assert isinstance(done.variables["at"], Instant) and str(done.variables["at"]) == "2026-03-01T09:00:00+00:00"


def test_a_run_without_a_set_clock_reads_its_start_for_every_call(tmp_path: Path, blocks: BlockRegistry) -> None:
    text = TIMED.replace("    next: approve\n", "").split("  - id: approve")[0]
    before = datetime.datetime.now(datetime.UTC)
    result = asyncio.run(execute(load_diagram(_write(tmp_path, text), blocks), {}, runs_dir=None))
    assert result.status == "succeeded"
    assert before <= result.variables["at"] <= datetime.datetime.now(datetime.UTC)


def test_an_unknown_time_zone_is_a_load_problem_as_a_literal_and_a_template_error_otherwise(
        tmp_path: Path, blocks: BlockRegistry) -> None:
    with pytest.raises(DiagramInvalid, match="no time zone named 'Mars/Olympus'"):
        load_diagram(_write(tmp_path, TIMED.replace("Asia/Tokyo", "Mars/Olympus")), blocks)
    env = TemplateEnv()
    scope = env.new_scope({"zone": "Nowhere/Land"}, clock=CLOCK)
    with pytest.raises(Exception, match="no time zone named 'Nowhere/Land'") as caught:
        env.compile("{{ now(zone) }}").evaluate(scope)
    assert getattr(caught.value, "type", None) == "template_unknown_timezone"


def test_a_checkpoint_keeps_dates_and_instants_with_their_zone() -> None:
    env = TemplateEnv()
    scope = env.new_scope({}, clock=CLOCK)
    lisbon_summer = env.new_scope({}, clock=CLOCK.replace(month=7))
    values = {"at": env.compile("{{ now('Europe/Lisbon') }}").evaluate(lisbon_summer),
              "day": env.compile("{{ today() }}").evaluate(scope), "plain": CLOCK}
    back = decode(encode(values))
    assert back == values and type(back["at"]) is Instant and type(back["day"]) is datetime.date
    assert back["at"].tzname() == "WEST" and str(back["at"]) == "2026-07-01T10:00:00+01:00"


GREETING = """
diagram: greeting
blocks:
  - id: start
    type: Start
    variables: {greeting: ""}
    set: {greeting: "{{ 'Good morning' if now('Europe/Lisbon').hour < 12 else 'Good afternoon' }}, it is {{ today() }}"}
"""


def test_a_scenario_and_the_run_command_set_the_clock(tmp_path: Path, blocks: BlockRegistry) -> None:
    from click.testing import CliRunner

    from engine.cli import app
    from engine.testing.scenarios import load_scenarios, run_scenario

    diagram = _write(tmp_path, GREETING)
    (tmp_path / "greeting.scenario.yaml").write_text(
        "setup: {diagram: timed.yaml, clock: '2026-03-01T15:00:00+00:00'}\n"
        "scenarios:\n"
        "  - scenario: mornings greet as mornings\n"
        "    clock: '2026-03-01T09:30:00+00:00'\n"
        "    expect: {variables: {greeting: 'Good morning, it is 2026-03-01'}}\n"
        "  - scenario: the file's clock is the afternoon\n"
        "    expect: {variables: {greeting: 'Good afternoon, it is 2026-03-01'}}\n", encoding="utf-8")
    for scenario in load_scenarios(tmp_path / "greeting.scenario.yaml"):
        assert run_scenario(scenario, blocks, runs_dir=None).failures == []
    ran = CliRunner().invoke(app, ["run", str(diagram), "--offline", "--output", "json", "-q", "--runs-dir",
                                   str(tmp_path / "runs"), "--clock", "2026-12-24T18:00:00"])
    assert ran.exit_code == 0, ran.output
    assert "Good afternoon, it is 2026-12-24" in ran.output
    refused = CliRunner().invoke(app, ["run", str(diagram), "--clock", "yesterday"])
    assert refused.exit_code == 2 and "no ISO instant" in refused.output
