"""Tool calls cannot hold a run past its deadline (issue 13, hole 3).

A model chooses the calculator's expression, and a handler may block for good: the
calculator refuses results too large to compute, sync handlers run off the event loop,
and the tool timeout and the run's deadline hold whatever a handler does (a stuck
thread is abandoned, never waited for).
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine import execute

pytestmark = pytest.mark.slow  # handlers that block for their timeouts

HANDLERS = """
import threading
import time

RELEASE = threading.Event()

def stuck():
    RELEASE.wait(30)  # a handler that blocks (the test releases it when it ends)
    return "released"

def quick():
    return "quick"

def slow():
    time.sleep(0.5)
    return "slow"
"""

TOWER = "(((9**99)**99)**99)**99"


@pytest.fixture
def handlers(tmp_path: Path) -> Iterator[str]:
    module = f"stuck_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(HANDLERS)
    yield module
    if module in sys.modules:
        sys.modules[module].RELEASE.set()  # let the abandoned threads end


def diagram(write, tmp_path: Path, module: str, calls: list[dict[str, Any]], *, timeout: str = "",
            run_timeout: str = "", then: list[dict[str, Any]] | None = None) -> Path:
    (tmp_path / "registry.yaml").write_text(textwrap.dedent(f"""\
        registry: stuck
        allowed_modules: [{module}]
        standard_tools: [calculator]
        tools:
          - {{function: stuck, handler: "{module}:stuck", description: blocks{timeout}}}
          - {{function: quick, handler: "{module}:quick", description: returns at once}}
          - {{function: slow, handler: "{module}:slow", description: sleeps half a second}}
    """))
    second = f"""
          - id: again
            type: ToolDispatch
            with: {{calls: {orjson.dumps(then).decode()}, history: "{{{{ rows }}}}"}}
            set: {{rows: "{{{{ history }}}}"}}
    """ if then else ""
    return write(f"""
        diagram: d
        tools: registry.yaml
        blocks:
          - id: start
            type: Start
            {run_timeout}
            variables: {{calls: {orjson.dumps(calls).decode()}, history: []}}
            next: dispatch
          - id: dispatch
            type: ToolDispatch
            with: {{calls: "{{{{ calls }}}}", history: "{{{{ history }}}}", concurrency: 64}}
            set: {{rows: "{{{{ history }}}}"}}
            {"next: again" if then else ""}
    """ + second)


def rows(result) -> dict[str, Any]:
    return {row["tool_call_id"]: orjson.loads(row["content"]) if row["content"].startswith("{") else row["content"]
            for row in result.variables["rows"]}


def timed(runner, path: Path) -> tuple[Any, float]:
    began = time.perf_counter()
    result = runner.run(path)
    return result, time.perf_counter() - began


@pytest.mark.parametrize("expression", [TOWER, "(9**99)**99", "10**99*" * 60 + "1"])
def test_calculator_refuses_a_result_too_large_as_a_tool_row(runner, write, tmp_path, handlers, expression) -> None:
    path = diagram(write, tmp_path, handlers, [{"id": "1", "name": "calculator", "arguments": {"expression": expression}}])
    result, seconds = timed(runner, path)
    assert result.status == "succeeded", result.errors
    assert "result too large" in rows(result)["1"]["error"]
    assert seconds < 10  # it was minutes of the GIL held: the four-level tower never finished


def test_sync_handler_past_its_tool_timeout_is_a_timeout_row(runner, write, tmp_path, handlers) -> None:
    path = diagram(write, tmp_path, handlers, [{"id": "1", "name": "stuck", "arguments": {}},
                                               {"id": "2", "name": "quick", "arguments": {}}], timeout=", timeout: 1")
    result, seconds = timed(runner, path)
    assert result.status == "succeeded", result.errors
    assert rows(result) == {"1": {"error": "tool 'stuck' timed out after 1 s"}, "2": "quick"}
    assert seconds < 10  # the stuck thread is abandoned: not even asyncio.run's shutdown waits for it
    called = [e for e in runner.events(result) if e["event"] == "tool_called" and e["tool"] == "stuck"]
    assert called[0]["abandoned"] is True


def test_run_deadline_holds_while_a_sync_handler_blocks(runner, write, tmp_path, handlers) -> None:
    path = diagram(write, tmp_path, handlers, [{"id": "1", "name": "stuck", "arguments": {}}], run_timeout="timeout: 2")
    result, seconds = timed(runner, path)
    assert result.status == "failed"
    assert [e["type"] for e in result.errors] == ["run_timeout"]
    assert seconds < 10  # the handler blocks for 30 s; the run ends at its 2 s deadline
    events = runner.events(result)
    abandoned = [e for e in events if e["event"] == "tool_called"]
    assert abandoned[0]["abandoned"] is True and abandoned[0]["call_id"] == "1"
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "failed"


def test_stuck_handlers_do_not_starve_later_calls(runner, write, tmp_path, handlers) -> None:
    stuck = [{"id": f"s{n}", "name": "stuck", "arguments": {}} for n in range(40)]  # more than a default pool
    path = diagram(write, tmp_path, handlers, stuck, timeout=", timeout: 1",
                   then=[{"id": "q", "name": "quick", "arguments": {}}])
    result, seconds = timed(runner, path)
    assert result.status == "succeeded", result.errors
    assert rows(result)["q"] == "quick"
    assert seconds < 10


def test_event_loop_keeps_running_while_tools_work(runner, write, tmp_path, handlers) -> None:
    big = "((9**99)**99)**99"
    path = diagram(write, tmp_path, handlers, [{"id": "1", "name": "slow", "arguments": {}},
                                               {"id": "2", "name": "calculator",
                                                "arguments": {"expression": f"{big}*{big}*{big}"}}])
    loaded = runner.load(path)
    gaps: list[float] = []

    async def both() -> Any:
        run = asyncio.ensure_future(execute(loaded, runs_dir=runner.runs_dir))
        last = time.perf_counter()
        while not run.done():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
        return run.result()

    result = asyncio.run(both())
    assert result.status == "succeeded", result.errors
    assert rows(result)["1"] == "slow" and "result too large" in rows(result)["2"]["error"]
    assert len(gaps) >= 3  # the ticker ran while the half-second sync handler did
    assert max(gaps) < 1  # the calculator never held the loop (it did for seconds)


def test_async_handlers_return_at_once_wait_fail_and_are_abandoned_past_their_timeout() -> None:
    from engine.tools import HandlerTimeout, call_handler

    async def at_once(x: int) -> int:
        return x + 1

    async def waits(x: int) -> int:
        await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        return x * 2

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise LookupError("no order")

    async def ignores_cancellation() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # a handler slow to stop: abandoned, not waited for
        return "late"

    async def check() -> None:
        assert await call_handler(at_once, {"x": 1}, timeout=1) == 2
        assert await call_handler(waits, {"x": 4}, timeout=5) == 8
        with pytest.raises(LookupError, match="no order"):
            await call_handler(fails_later, {}, timeout=5)
        with pytest.raises(HandlerTimeout):
            await call_handler(ignores_cancellation, {}, timeout=0.05)

    asyncio.run(check())


def test_a_timeout_a_handler_sets_itself_cancels_the_handler_never_the_run() -> None:
    # The defect (an eager first step run as the caller's task): the handler's own asyncio.timeout or anyio
    # fail_after belonged to the caller, so its expiry cancelled the run (anyio's crashed it) instead of raising
    # TimeoutError in the handler.
    import anyio

    from engine.tools import call_handler

    async def own_timeout() -> str:
        async with asyncio.timeout(0.01):
            await asyncio.sleep(5)
        return "not reached"

    async def own_anyio_deadline() -> str:
        with anyio.fail_after(0.01):
            await anyio.sleep(5)
        return "not reached"

    async def check() -> list[str]:
        seen = []
        for handler in (own_timeout, own_anyio_deadline):
            with pytest.raises(TimeoutError):
                await call_handler(handler, {}, timeout=5)
            await asyncio.sleep(0.05)  # the caller goes on: it was not cancelled
            seen.append(handler.__name__)
        return seen

    assert asyncio.run(check()) == ["own_timeout", "own_anyio_deadline"]


def test_an_async_handler_is_awaited_in_the_callers_task_and_stopped_as_an_awaited_call_is() -> None:
    # Async handlers run in the caller's task (no task of their own: a Function step costs microseconds), so
    # what a task would have given them is checked here: their own context, their cancellation when the caller's
    # deadline strikes, a handler that will not stop closed (its `finally` run) rather than waited for, and the
    # caller's cancellation never lost, whatever the handler does with it.
    import contextvars

    from engine.tools import HandlerTimeout, call_handler

    seen = contextvars.ContextVar("seen", default="caller's")
    stopped: list[str] = []

    async def sets_a_context_variable() -> str:
        seen.set("handler's")
        await asyncio.sleep(0)
        return seen.get()

    async def will_not_stop() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            try:
                await asyncio.sleep(10)  # cleaning up for ever
            finally:
                stopped.append("closed")
        return "late"

    async def swallows_and_returns() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "swallowed"
        return "not reached"

    async def fails_after_waiting() -> None:
        await asyncio.sleep(0.01)
        raise KeyError("sku")

    async def check() -> None:
        task = asyncio.current_task()
        assert task is not None
        assert await call_handler(sets_a_context_variable, {}, timeout=1) == "handler's"
        assert seen.get() == "caller's"  # the handler's context was its own

        began = time.perf_counter()
        with pytest.raises(HandlerTimeout):
            await call_handler(will_not_stop, {}, timeout=0.05)
        assert time.perf_counter() - began < 5 and stopped == ["closed"]
        assert task.cancelling() == 0  # the timeout's own cancellation was taken back
        await asyncio.sleep(0.02)  # and the caller goes on

        with pytest.raises(KeyError, match="sku"):
            await call_handler(fails_after_waiting, {}, timeout=5)

        # The run's deadline (an asyncio.timeout around the call) while the handler waits: it reaches the
        # caller even when the handler swallows its cancellation and returns, or will not stop.
        for handler in (swallows_and_returns, will_not_stop):
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await call_handler(handler, {}, timeout=30)
            assert task.cancelling() == 0

    asyncio.run(check())


def test_a_run_deadline_stops_an_async_function_that_ignores_it(tmp_path: Path) -> None:
    from blocks.registry import registry
    from engine.compile.loader import load_diagram_text

    (tmp_path / "slow_functions.py").write_text(textwrap.dedent("""
        import asyncio

        async def deaf():
            while True:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    continue  # never stops on its own
    """))
    diagram = load_diagram_text(textwrap.dedent("""
        diagram: deaf
        allowed_modules: [slow_functions]
        blocks:
          - id: start
            type: Start
            timeout: 0.2
            next: call
          - id: call
            type: Function
            with: {function: "slow_functions:deaf", timeout: 30}
    """), tmp_path / "deaf.yaml", registry())
    began = time.perf_counter()
    result = asyncio.run(execute(diagram, runs_dir=tmp_path / "runs"))
    assert time.perf_counter() - began < 5
    assert result.status == "failed"
    assert [error["type"] for error in result.errors] == ["run_timeout"], result.errors


def test_sync_handlers_reuse_waiting_threads_and_a_stuck_one_keeps_its_own() -> None:
    import threading

    from engine.tools import HandlerTimeout, call_handler

    release = threading.Event()

    def where() -> str:
        return threading.current_thread().name

    def thread() -> threading.Thread:
        return threading.current_thread()

    def stuck() -> str:
        release.wait(10)
        return "released"

    async def check() -> None:
        await call_handler(where, {}, timeout=5, name="where")
        waiting = sum(1 for alive in threading.enumerate() if alive.name.startswith("diagrama-tool:"))
        threads = [await call_handler(thread, {}, timeout=5, name="thread") for _ in range(30)]
        assert len(set(threads)) <= waiting + 1  # not a thread a call: one that waits takes the next
        assert await call_handler(where, {}, timeout=5, name="where") == "diagrama-tool:where"
        with pytest.raises(HandlerTimeout):
            await call_handler(stuck, {}, timeout=0.05, name="stuck")
        # The stuck call holds its thread; later calls go on without waiting behind it.
        assert await call_handler(where, {}, timeout=5, name="after") == "diagrama-tool:after"
        release.set()

    asyncio.run(check())
