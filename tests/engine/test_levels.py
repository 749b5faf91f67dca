"""Levels decided once, at compile: what the compiled blocks carry is what the studio's picture shows and
what a run's trace keeps, with and without `--message-level` (which replaces Start's level, not a block's own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine import Event, MessageLevel
from engine.cli import app
from engine.format.levels import MESSAGE_LEVELS, ErrorLevel, LevelSource, level_name
from engine.web.picture import effective_levels
from tests.conftest import Runner

DIAGRAM = """
diagram: levels
blocks:
  - {id: start, type: Start, START_LEVELS variables: {n: 1}, next: inherits}
  - {id: inherits, type: Set, set: {long: "{{ 'x' * 500 }}"}, next: debug}
  - {id: debug, type: Set, message_level: Debug, set: {long: "{{ 'x' * 500 }}"}, next: detailed}
  - {id: detailed, type: Set, message_level: Detailed, set: {long: "{{ 'x' * 500 }}"}, next: quiet}
  - {id: quiet, type: Set, message_level: Release, set: {long: "{{ 'x' * 500 }}"}, next: fails}
  - {id: fails, type: Set, set: {x: "{{ n // 0 }}"}, next: handled}
  - {id: handled, type: Set, error_level: Handle, set: {x: "{{ n // 0 }}"}, on_error: end, next: end}
  - {id: end, type: Set, set: {done: true}}
"""
OWN_MESSAGE = {"debug": MessageLevel.DEBUG, "detailed": MessageLevel.DETAILED, "quiet": MessageLevel.RELEASE}
BLOCKS = ["start", "inherits", "debug", "detailed", "quiet", "fails", "handled", "end"]
SETS_LONG = {"inherits", "debug", "detailed", "quiet"}
"""The blocks whose trace tells all three levels apart; the others' tells only Release from the rest."""


def write_levels(tmp_path: Path, start_message: str | None) -> Path:
    levels = "error_level: Ignore," + (f" message_level: {start_message}," if start_message else "")
    path = tmp_path / "levels.yaml"
    path.write_text(DIAGRAM.replace("START_LEVELS", levels), encoding="utf-8")
    return path


def expected_levels(start_message: str | None, override: MessageLevel | None) -> dict[str, MessageLevel]:
    """Worked out here, by hand, from the diagram above: a block's own, else the run's."""
    run = override if override is not None else MESSAGE_LEVELS[start_message or "Debug"]
    assert run is not None
    return {block: OWN_MESSAGE.get(block, run) for block in BLOCKS}


def traced_levels(events: list[dict[str, Any]]) -> dict[str, MessageLevel]:
    """Each block's message level as its trace shows it: no step events at Release, `set` values cut at Debug."""
    shown = dict.fromkeys(BLOCKS, MessageLevel.RELEASE)
    for event in events:
        if event["event"] != Event.BLOCK_FINISHED:
            continue
        long = event.get("set", {}).get("long")
        whole = isinstance(long, str) and len(long) == 500
        shown[event["block"]] = MessageLevel.DETAILED if whole else MessageLevel.DEBUG
    return shown


def as_traced(levels: dict[str, MessageLevel]) -> dict[str, MessageLevel]:
    """What a trace can show of these levels: Detailed reads as Debug where nothing long is set."""
    return {block: level if block in SETS_LONG else min(level, MessageLevel.DEBUG) for block, level in levels.items()}


@pytest.mark.parametrize("start_message", [None, "Release", "Detailed"])
@pytest.mark.parametrize("override", [None, *MessageLevel], ids=lambda level: level.name if level else "plain")
def test_the_compiled_levels_are_the_pictures_and_the_traces(runner: Runner, tmp_path: Path,
                                                             start_message: str | None,
                                                             override: MessageLevel | None) -> None:
    diagram = runner.load(write_levels(tmp_path, start_message))
    expected = expected_levels(start_message, override)
    table = diagram.message_levels(override)
    compiled = {block.id: (table[block] if table is not None else block.message_level)
                for block in diagram.blocks.values()}
    assert compiled == expected
    result = runner.run(diagram, message_level=override)
    assert result.status == "succeeded", result.errors
    events = runner.events(result)
    run_started = events[0]
    assert run_started["message_level"] == level_name(expected["start"])
    assert traced_levels(events) == as_traced(expected)
    # Error levels, decided at compile too: `fails` inherits Start's Ignore, `handled` has its own Handle.
    ignored = {e["block"] for e in result.errors if e.get("ignored")}
    handled = {e["block"] for e in result.errors if e.get("handled_by")}
    assert diagram.blocks["fails"].error_level is ErrorLevel.IGNORE
    assert diagram.blocks["handled"].error_level is ErrorLevel.HANDLE
    assert (ignored, handled) == ({"fails"}, {"handled"})


def test_a_plain_runs_levels_are_the_studios(runner: Runner, tmp_path: Path) -> None:
    diagram = runner.load(write_levels(tmp_path, "Release"))
    picture = effective_levels(diagram)
    for block in diagram.blocks.values():
        shown = picture[block.id]
        assert shown["message_level"]["value"] == level_name(block.message_level)
        assert shown["error_level"]["value"] == level_name(block.error_level)
        if block is not diagram.start:
            assert shown["message_level"]["inherited"] == (block.message_level_from is not LevelSource.BLOCK)
            assert shown["error_level"]["inherited"] == (block.error_level_from is not LevelSource.BLOCK)
    assert picture["start"]["message_level"] == {"value": "Release", "inherited": False, "from": "this block"}
    assert picture["inherits"]["message_level"] == {"value": "Release", "inherited": True, "from": "Start 'start'"}
    assert picture["quiet"]["message_level"] == {"value": "Release", "inherited": False, "from": "this block"}
    assert picture["fails"]["error_level"] == {"value": "Ignore", "inherited": True, "from": "Start 'start'"}
    assert picture["handled"]["error_level"] == {"value": "Handle", "inherited": False, "from": "this block"}
    unwritten = effective_levels(runner.load(write_levels(tmp_path, None)))
    assert unwritten["start"]["message_level"] == {"value": "Debug", "inherited": True, "from": "built-in default"}


def test_an_override_that_changes_nothing_makes_no_table(runner: Runner, tmp_path: Path) -> None:
    diagram = runner.load(write_levels(tmp_path, "Release"))
    assert diagram.message_levels(None) is None and diagram.message_levels(MessageLevel.RELEASE) is None
    table = diagram.message_levels(MessageLevel.DETAILED)
    assert table is not None and table[diagram.blocks["quiet"]] is MessageLevel.RELEASE
    assert table[diagram.blocks["start"]] is MessageLevel.DETAILED


def test_the_command_lines_message_level_keeps_a_blocks_own(tmp_path: Path) -> None:
    path = write_levels(tmp_path, "Release")
    done = CliRunner().invoke(app, ["run", str(path), "--message-level", "Detailed", "--runs-dir", str(tmp_path / "r"),
                                    "--output", "json", "--quiet"])
    assert done.exit_code == 0, done.output
    trace = Path(json.loads(done.stdout)["trace"])
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    traced = traced_levels(events)
    assert traced["inherits"] is MessageLevel.DETAILED and traced["debug"] is MessageLevel.DEBUG
    assert traced["quiet"] is MessageLevel.RELEASE and events[0]["message_level"] == "Detailed"
