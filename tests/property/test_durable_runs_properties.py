"""The durability promise as a property: whatever the diagram, a run killed at any of its checkpoints and resumed ends
as it would have, and every effect ran once.

Hypothesis generates small diagrams: Functions with effects (each call logged), Waits, sequential and concurrent Loops
and Subdiagrams, nested in one another (Loops inside Subdiagrams inside Loops). Each is run once without a break
(answering each Wait) through the one turn (engine.runs.turn), while a recording store logs every checkpoint in the
order it was committed, among the effects. Then, for each checkpoint in turn, the run is made to look killed just
after it (every later checkpoint gone, runs begun later gone, its process dead: the tests' `interrupt_after`, for a
tree of runs) and resumed, answering each Wait again. The resumed run's variables must equal the whole run's, and
the effects logged before that checkpoint plus those the resume ran must be the whole run's, each once: a kill just
after a checkpoint leaves no block in flight, so nothing may run twice. On SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blocks.registry import registry
from engine import RunResult, Services
from engine.compile.loader import load_diagram
from engine.runs.checkpoints import CheckpointStore, open_checkpoints
from engine.runs.turn import new_turn, resume_turn, run_turn
from tests.engine.durable_support import dead_pid
from tests.property import effects_support

pytestmark = pytest.mark.slow

MODULE = "tests.property.effects_support"


# -- the diagrams ----------------------------------------------------------------------------------------------------
@dataclass
class Effect:
    """A Function with an effect: logged once per call, its result added to `trail`."""


@dataclass
class Ask:
    """A Wait: the run stops for an answer; the answer is added to `trail`."""


@dataclass
class SeqLoop:
    count: int
    body: list[Any]


@dataclass
class ConcLoop:
    count: int
    concurrency: int
    body: list[Any]


@dataclass
class Sub:
    body: list[Any]


def chains(depth: int, waits: bool) -> st.SearchStrategy[list[Any]]:
    """A chain of one to three nodes; nesting `depth` more levels; Waits only where a run can stop (not in a
    concurrent Loop's passes)."""
    nodes: list[st.SearchStrategy[Any]] = [st.just(Effect())]
    if waits:
        nodes.append(st.just(Ask()))
    if depth > 0:
        nodes += [
            st.builds(SeqLoop, st.integers(1, 3), st.deferred(lambda: chains(depth - 1, waits))),
            st.builds(ConcLoop, st.integers(1, 3), st.integers(1, 3), st.deferred(lambda: chains(depth - 1, False))),
            st.builds(Sub, st.deferred(lambda: chains(depth - 1, waits))),
        ]
    return st.lists(st.one_of(nodes), min_size=1, max_size=3)


def checkpoints_of(chain: list[Any]) -> int:
    """About how many checkpoints a run of `chain` writes (a concurrent Loop's passes write none): to keep each
    example's runs few enough to try every kill."""
    total = 0
    for node in chain:
        if isinstance(node, (Effect, Ask)):
            total += 1
        elif isinstance(node, SeqLoop):
            total += node.count * checkpoints_of(node.body)
        elif isinstance(node, ConcLoop):
            total += 1
        else:
            total += 2 + checkpoints_of(node.body)
    return total


@dataclass
class Files:
    """Diagram files written for one example: the top one and its children."""

    folder: Path
    names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def write(self, name: str, chain: list[Any]) -> Path:
        blocks: list[dict[str, Any]] = [{"id": "start", "type": "Start", "variables": {"trail": []}}]
        ids = itertools.count(1)
        blocks[0]["next"] = self._emit(name, chain, None, blocks, ids, in_loop=False, in_pass=False)
        path = self.folder / f"{name}.yaml"
        document = {"diagram": name, "allowed_modules": [MODULE], "blocks": blocks}
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")  # JSON is YAML
        return path

    def _emit(self, name: str, chain: list[Any], after: str | None, blocks: list[dict[str, Any]],
              ids: Iterator[int], *, in_loop: bool, in_pass: bool) -> str:
        """Blocks for `chain`, each leading to the next and the last to `after`; the first one's id. In a concurrent
        Loop's passes nothing is `set` (only `collect` flows out of them)."""
        following = after
        for node in reversed(chain):
            following = self._node(name, node, following, blocks, ids, in_loop=in_loop, in_pass=in_pass)
        assert following is not None
        return following

    def _node(self, name: str, node: Any, after: str | None, blocks: list[dict[str, Any]], ids: Iterator[int], *,
              in_loop: bool, in_pass: bool) -> str:
        block_id = f"n{next(ids)}"
        block: dict[str, Any] = {"id": block_id}
        if isinstance(node, Effect):
            tag = f"{name}.{block_id}" + ("@{{ index }}" if in_loop else "")
            block.update(type="Function", set={"trail": "{{ trail + [result] }}"},
                         **{"with": {"function": f"{MODULE}:mark", "arguments": {"tag": tag}}})
        elif isinstance(node, Ask):
            block.update(type="Wait", set={"trail": "{{ trail + [answer.ok] }}"},
                         **{"with": {"prompt": f"go on at {block_id}?", "form": {"type": "object"}}})
        elif isinstance(node, SeqLoop):
            body = self._emit(name, node.body, block_id, blocks, ids, in_loop=True, in_pass=in_pass)
            block.update(type="Loop", body=body, **{"with": {"count": node.count}})
        elif isinstance(node, ConcLoop):
            body = self._emit(name, node.body, block_id, blocks, ids, in_loop=True, in_pass=True)
            block.update(type="Loop", body=body, **{"with": {
                "for_each": f"{{{{ range({node.count}) | list }}}}", "concurrency": node.concurrency,
                "collect": "{{ index }}"}})
            if not in_pass:
                block["set"] = {"trail": "{{ trail + collected }}"}
        else:
            child = self.write(f"{name}_c{next(self.names)}", node.body)
            block.update(type="Subdiagram", set={"trail": "{{ trail + variables.trail }}"},
                         **{"with": {"diagram": child.name}})
        if in_pass:
            block.pop("set", None)
        if after is not None:
            block["next"] = after
        blocks.append(block)
        return block_id


# -- the runs --------------------------------------------------------------------------------------------------------
class RecordingStore:
    """A checkpoint store that logs, into the effects' log, each run it begins and each checkpoint it commits."""

    def __init__(self, store: CheckpointStore) -> None:
        from engine.runs.checkpoints_pg import OffLoopWrites

        self._store = store
        # A store across a network has its writes awaited (off the loop): through this recorder's, on a thread.
        self.off_loop = OffLoopWrites(self, None, OSError) if getattr(store, "off_loop", None) is not None else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def begin(self, run_id: str, fields: Any) -> None:
        self._store.begin(run_id, fields)
        effects_support.EVENTS.append(("begin", run_id))

    def save(self, run_id: str, seq: int, state: bytes) -> None:
        self._store.save(run_id, seq, state)
        effects_support.EVENTS.append(("save", run_id, seq))


def answered(store: Any, result: RunResult, runs: Path) -> RunResult:
    """`result`, and each Wait it stops at answered, until the run ends."""
    while result.status == "waiting":
        turn = resume_turn(store, result.run_id, registry=registry(), answer={"ok": True})
        result = asyncio.run(run_turn(turn, services=Services(), runs_dir=runs))
    return result


def whole_run(store: Any, top: Path, runs: Path) -> tuple[RunResult, list[tuple[Any, ...]]]:
    effects_support.EVENTS.clear()
    turn = new_turn(load_diagram(top, registry()), {}, store=store)
    result = answered(store, asyncio.run(run_turn(turn, services=Services(), runs_dir=runs)), runs)
    return result, list(effects_support.EVENTS)


def killed_after(database: Any, run_id: str, events: list[tuple[Any, ...]], kill: int, pid: int) -> None:
    """Make run `run_id` (and its children) look killed just after the store committed its `kill`th checkpoint: the
    checkpoints committed later and the runs begun later gone, its process (`pid`) dead. One transaction."""
    from sqlalchemy import text

    saves = [event for event in events if event[0] == "save"]
    cut = events.index(saves[kill])
    begun = {event[1] for event in events[: cut + 1] if event[0] == "begin"}
    with database.begin() as connection:
        for event in saves[kill + 1:]:
            connection.execute(text("DELETE FROM checkpoints WHERE run_id = :run AND seq = :seq"),
                               {"run": event[1], "seq": event[2]})
        for later in {event[1] for event in events if event[0] == "begin"} - begun:
            connection.execute(text("DELETE FROM run_states WHERE run_id = :run"), {"run": later})
        connection.execute(text("UPDATE run_states SET status = 'running', pid = :pid WHERE run_id = :run"),
                           {"pid": pid, "run": run_id})


def effects(events: list[tuple[Any, ...]]) -> Counter[str]:
    return Counter(event[1] for event in events if event[0] == "effect")


def check_every_kill(chain: list[Any], store_url: str | None, pid: int) -> None:
    from sqlalchemy import create_engine

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        top = Files(root).write("top", chain)
        runs = root / "runs"
        opened = open_checkpoints(store_url, runs)
        store = RecordingStore(opened)
        database = create_engine(opened.url)
        try:
            reference, events = whole_run(store, top, runs)
            assert reference.status == "succeeded", reference.errors
            total = sum(1 for event in events if event[0] == "save")
            for kill in range(total):
                whole, events = whole_run(store, top, runs)  # a tree of runs of its own to cut short
                killed_after(database, whole.run_id, events, kill, pid)
                saves = [event for event in events if event[0] == "save"]
                before = events[: events.index(saves[kill]) + 1]
                effects_support.EVENTS.clear()
                turn = resume_turn(store, whole.run_id, registry=registry())
                resumed = answered(store, asyncio.run(run_turn(turn, services=Services(), runs_dir=runs)), runs)
                assert resumed.status == "succeeded", (kill, resumed.errors)
                assert resumed.variables == reference.variables, (kill, resumed.variables, reference.variables)
                assert effects(before) + effects(effects_support.EVENTS) == effects(events), kill  # each once
        finally:
            database.dispose()
            opened.close()


@pytest.fixture(scope="module")
def gone() -> int:
    """A pid no process has any longer: a killed run's."""
    return dead_pid()


SHAPES = chains(3, waits=True).filter(lambda chain: checkpoints_of(chain) <= 24)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                  HealthCheck.function_scoped_fixture])
@given(chain=SHAPES)
def test_a_run_killed_at_any_checkpoint_resumes_to_the_same_end_running_each_effect_once_sqlite(
        gone: int, chain: list[Any]) -> None:
    check_every_kill(chain, None, gone)


@pytest.fixture(scope="module")
def postgres_database(postgres_cluster: Any) -> Iterator[str]:
    with postgres_cluster.database() as url:
        yield url


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                  HealthCheck.function_scoped_fixture])
@given(chain=SHAPES)
def test_a_run_killed_at_any_checkpoint_resumes_to_the_same_end_running_each_effect_once_postgresql(
        postgres_database: str, gone: int, chain: list[Any]) -> None:
    check_every_kill(chain, postgres_database, gone)


def test_the_shapes_nest_loops_in_subdiagrams_in_loops(gone: int) -> None:
    """The strategy reaches what the issue asks for: a Loop (either kind) inside a Subdiagram inside a Loop."""
    nested = SeqLoop(2, [Sub([ConcLoop(2, 2, [Effect()]), SeqLoop(2, [Effect(), Ask()])])])
    check_every_kill([Effect(), nested], None, gone)
