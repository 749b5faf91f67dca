"""`diagrama api --prune-after` (or DIAGRAMA_PRUNE_AFTER): the server prunes finished runs' checkpoints while it runs,
off its event loop, and keeps sessions; a retention that is no duration stops it before it serves."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from engine.errors import UsageError
from engine.runs.checkpoints import open_checkpoints
from engine.runs.store import RunStore
from tests.api.conftest import KEYS, inner

CHAT = """
diagram: chat
description: Remembers what was said, turn by turn.
blocks:
  - id: start
    type: Start
    memory: [said, turns]
    inputs: {message: hi, wait: false}
    variables: {said: [], turns: 0}
    next: keep
  - id: keep
    type: Set
    set: {said: "{{ said + [message] }}", turns: "{{ turns + 1 }}"}
    next: [{to: ask, when: "{{ wait }}"}]
  - id: ask
    type: Wait
    with: {prompt: "More?", form: {type: object}}
"""


@pytest.mark.slow
def test_the_server_prunes_finished_runs_checkpoints_and_keeps_sessions_and_unfinished_runs(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], robots_dir: Path, tmp_path: Path,
        store_url: str) -> None:
    (robots_dir / "chat.yaml").write_text(textwrap.dedent(CHAT).lstrip(), encoding="utf-8")
    app = make_app(store_url=store_url, prune_after="0s")
    starlette = inner(app)
    pruner = starlette.state.pruner
    assert pruner is not None and pruner.older_than_s == 0 and pruner.every_s == 1.0

    async def go() -> tuple[list[dict[str, Any]], httpx.Response]:
        async with starlette.router.lifespan_context(starlette), client(app) as caller:
            turns = [(await caller.post("/v1/robots/chat/runs", json={"inputs": {"message": said}, "session": "ana"}))
                     .json() for said in ("olá", "tudo bem?")]
            turns.append((await caller.post("/v1/robots/chat/runs", json={"inputs": {"wait": True}})).json())
            await starlette.state.backend.recorded()  # in the run store, where the pruned turns' records are kept
            await pruner.next_round()  # a round that began after the runs ended
            return turns, await caller.get("/v1/sessions/ana")

    turns, session = asyncio.run(go())
    assert [turn["status"] for turn in turns] == ["succeeded", "succeeded", "waiting"]
    assert session.json()["memory"] == {"said": ["olá", "tudo bem?"], "turns": 2}
    store = open_checkpoints(store_url, tmp_path / "runs")
    try:
        for turn in turns[:2]:
            assert [seq for seq, _ in store.states(turn["run_id"])] == [0]  # a tombstone stands for them
        assert len(store.states(turns[2]["run_id"])) > 1  # a waiting run's are never pruned
    finally:
        store.close()
    record = RunStore(store_url)
    try:
        variables = record.run(turns[0]["run_id"])["variables"]  # type: ignore[index]
    finally:
        record.close()
    assert variables == {"message": "olá", "wait": False}  # the session holds its memory


def test_the_retention_comes_from_the_option_or_the_environment_and_must_be_a_duration(
        make_app: Callable[..., Any], robots_dir: Path) -> None:
    assert inner(make_app()).state.pruner is None  # kept, unless asked
    pruner = inner(make_app(environ={"DIAGRAMA_API_KEYS": KEYS, "DIAGRAMA_PRUNE_AFTER": "12h"})).state.pruner
    assert pruner.older_than_s == 12 * 3600 and pruner.every_s == 3600
    assert inner(make_app(environ={"DIAGRAMA_API_KEYS": KEYS, "DIAGRAMA_PRUNE_AFTER": "12h"},
                          prune_after="30m")).state.pruner.older_than_s == 1800
    with pytest.raises(UsageError, match=r"DIAGRAMA_PRUNE_AFTER takes a duration.*not 'soon'"):
        make_app(environ={"DIAGRAMA_API_KEYS": KEYS, "DIAGRAMA_PRUNE_AFTER": "soon"})
    from engine.cli import app

    refused = CliRunner().invoke(app, ["api", str(robots_dir), "--no-auth", "--prune-after", "a week"],
                                 env={"DIAGRAMA_API_KEYS": ""})
    assert refused.exit_code == 2 and "--prune-after takes a duration" in refused.stderr, refused.output
