"""Sessions never lose a turn (engine.runs.turn): a turn that stops unfinished keeps its session, so a later turn is
refused until it goes on or is cancelled; an input given for a memory variable is used, never dropped."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import BlockRegistry, RunResult, Services
from engine.compile.diagram import Diagram
from engine.compile.loader import load_diagram
from engine.errors import TurnRefused
from engine.runs.checkpoints import CheckpointStore
from engine.runs.sessions import read_session
from engine.runs.turn import cancel_turn, new_turn, resume_run, run_turn
from tests.engine.durable_support import interrupt_after

CHAT = """
diagram: chat
blocks:
  - id: start
    type: Start
    memory: [history]
    inputs: {message: hi, ask: false, history: []}
    next: [{to: confirm, when: "{{ ask }}"}, {to: remember}]
  - id: confirm
    type: Wait
    with:
      prompt: "Keep {{ message }}?"
      form: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
      timeout: 3600
    next: remember
  - id: remember
    type: Set
    set: {history: "{{ history + [message] }}"}
"""


@pytest.fixture
def chat(tmp_path: Path, blocks: BlockRegistry) -> Diagram:
    path = tmp_path / "chat.yaml"
    path.write_text(CHAT.lstrip("\n"), encoding="utf-8")
    return load_diagram(path, blocks)


def _turn(chat: Diagram, store: CheckpointStore, tmp_path: Path, **inputs: Any) -> RunResult:
    turn = new_turn(chat, inputs, store=store, session="s")
    return asyncio.run(run_turn(turn, services=Services(), runs_dir=tmp_path / "runs"))


def _answer(store: CheckpointStore, run_id: str, blocks: BlockRegistry, tmp_path: Path) -> RunResult:
    return asyncio.run(resume_run(store, run_id, registry=blocks, answer={"ok": True}, runs_dir=tmp_path / "runs"))


def _memory(store: CheckpointStore) -> list[str]:
    found = read_session(store, "s")
    assert found is not None
    return list(found["memory"]["history"])


def test_a_turn_that_waits_keeps_its_session_and_no_later_turn_overwrites_it(
        chat: Diagram, store: CheckpointStore, blocks: BlockRegistry, tmp_path: Path) -> None:
    assert _turn(chat, store, tmp_path, message="one").succeeded
    two = _turn(chat, store, tmp_path, message="two", ask=True)
    assert two.status == "waiting"
    # "three" while "two" waits: refused at once, naming the waiting run and the ways on.
    with pytest.raises(TurnRefused, match=rf"run {two.run_id} waits for an answer; answer it .*or cancel it") as refused:
        _turn(chat, store, tmp_path, message="three", ask=True)
    assert refused.value.reason == "session_busy"
    assert read_session(store, "s")["held_by"] == two.run_id  # type: ignore[index]
    assert _answer(store, two.run_id, blocks, tmp_path).succeeded
    three = _turn(chat, store, tmp_path, message="three", ask=True)
    assert three.status == "waiting"
    assert _answer(store, three.run_id, blocks, tmp_path).succeeded
    found = read_session(store, "s")
    assert found is not None and found["turns"] == 3 and found["held_by"] is None
    assert _memory(store) == ["one", "two", "three"]  # every turn that succeeded


def test_an_interrupted_turn_keeps_its_session_until_it_is_resumed(
        chat: Diagram, store: CheckpointStore, blocks: BlockRegistry, tmp_path: Path) -> None:
    assert _turn(chat, store, tmp_path, message="one").succeeded
    two = _turn(chat, store, tmp_path, message="two", ask=True)
    interrupt_after(store, two.run_id, 1)  # killed after its checkpoint 0, before its Wait asked
    with pytest.raises(TurnRefused, match=rf"run {two.run_id} was interrupted; resume it"):
        _turn(chat, store, tmp_path, message="three")
    again = asyncio.run(resume_run(store, two.run_id, registry=blocks, runs_dir=tmp_path / "runs"))
    assert again.status == "waiting"
    assert _answer(store, two.run_id, blocks, tmp_path).succeeded
    assert _turn(chat, store, tmp_path, message="three").succeeded
    assert _memory(store) == ["one", "two", "three"]


def test_a_cancelled_turn_lets_its_session_go_without_its_memory(
        chat: Diagram, store: CheckpointStore, blocks: BlockRegistry, tmp_path: Path) -> None:
    assert _turn(chat, store, tmp_path, message="one").succeeded
    two = _turn(chat, store, tmp_path, message="two", ask=True)
    cancel_turn(store, two.run_id)
    assert store.run(two.run_id)["status"] == "cancelled"  # type: ignore[index]
    with pytest.raises(TurnRefused, match="is cancelled: only an interrupted or waiting run resumes"):
        _answer(store, two.run_id, blocks, tmp_path)
    assert _turn(chat, store, tmp_path, message="three").succeeded
    assert _memory(store) == ["one", "three"]


def test_an_input_given_for_a_memory_variable_is_used(chat: Diagram, store: CheckpointStore, tmp_path: Path) -> None:
    for message in ("a", "b"):
        assert _turn(chat, store, tmp_path, message=message).succeeded
    given = _turn(chat, store, tmp_path, message="c", history=["X"])
    assert given.variables["history"] == ["X", "c"]  # as given, not the session's ['a', 'b']
    assert _memory(store) == ["X", "c"]
    assert _turn(chat, store, tmp_path, message="d").variables["history"] == ["X", "c", "d"]


@pytest.mark.slow
def test_the_command_line_refuses_a_turn_while_one_waits_and_cancels_it(chat: Diagram, tmp_path: Path) -> None:
    runs = tmp_path / "cli-runs"

    def diagrama(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True,
                              env={**os.environ, "DIAGRAMA_STORE": ""}, check=False)

    def turn(*inputs: str) -> subprocess.CompletedProcess[str]:
        pairs = [part for pair in inputs for part in ("--input", pair)]
        return diagrama("run", str(chat.path), "--session", "s", "--runs-dir", str(runs), "--output", "json", *pairs)

    assert turn("message=one").returncode == 0
    waiting = turn("message=two", "ask=true")
    assert waiting.returncode == 3
    two = json.loads(waiting.stdout)["run_id"]
    refused = turn("message=three")
    assert refused.returncode == 2 and f"run {two} waits for an answer" in refused.stderr
    assert f"diagrama resume {two} --cancel" in refused.stderr and "Traceback" not in refused.stderr
    cancelled = diagrama("resume", two, "--cancel", "--runs-dir", str(runs))
    assert cancelled.returncode == 0 and f"cancelled run {two}" in cancelled.stdout
    listed = diagrama("runs", "--runs-dir", str(runs)).stdout
    assert any(line.startswith(two) and " cancelled " in line for line in listed.splitlines()), listed
    assert f"diagrama resume {two}" not in listed  # no resume offered for it any more
    done = turn("message=three", 'history=["X"]')
    assert done.returncode == 0 and json.loads(done.stdout)["variables"]["history"] == ["X", "three"]
