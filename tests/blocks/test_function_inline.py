"""A plain `def` Function on the run's own thread (Services.inline_calls: `diagrama run`, `resume`): held to its timeout
and to the run's deadline by a timer signal, even when it swallows the first; outside a concurrent Loop's passes,
whose calls still overlap on handler threads."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.tools.calls import HandlerTimeout, call_inline

CODE = '''
import threading
import time

def nap(seconds: float):
    time.sleep(seconds)
    return {"slept": seconds, "thread": threading.current_thread().name}

def stubborn(seconds: float):
    try:
        time.sleep(seconds)
    except:  # noqa: E722  -- swallows the first stop on purpose
        time.sleep(seconds)
    return "finished anyway"

def add(n: int):
    return n + 1
'''


def _diagram(write: Callable[..., Path], module: str, body: str, start: str = "") -> Path:
    write(CODE, f"{module}.py")
    return write(f"""
        diagram: inline
        allowed_modules: [{module}]
        blocks:
          - id: start
            type: Start
            error_level: Handle
            {start}
            next: call
{body}
          - {{id: caught, type: Set, set: {{why: "{{{{ error.type }}}}: {{{{ error.message }}}}"}}}}
    """)


def _run(path: Path, tmp_path: Path) -> tuple[dict, float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path), "-q", "--output", "json",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout), time.monotonic() - began


@pytest.mark.slow
def test_a_plain_def_runs_on_the_runs_thread_and_is_stopped_at_its_timeout(write, tmp_path: Path) -> None:
    path = _diagram(write, "inline_fns_a", """
          - id: call
            type: Function
            with: {function: "inline_fns_a:nap", arguments: {seconds: 0.01}}
            set: {first: "{{ result }}"}
            next: late
          - id: late
            type: Function
            with: {function: "inline_fns_a:nap", arguments: {seconds: 30}, timeout: 0.5}
            on_error: caught
    """)
    result, took = _run(path, tmp_path)
    assert result["variables"]["first"]["thread"] == "MainThread"  # on the run's own thread, not a handler thread
    assert result["status"] == "succeeded" and took < 10
    assert result["variables"]["why"] == "block_timeout: function 'inline_fns_a:nap' took longer than its timeout of " \
                                         "0.5 s; it was abandoned"


@pytest.mark.slow
def test_a_call_that_swallows_the_first_stop_is_stopped_again(write, tmp_path: Path) -> None:
    path = _diagram(write, "inline_fns_b", """
          - id: call
            type: Function
            with: {function: "inline_fns_b:stubborn", arguments: {seconds: 30}, timeout: 0.3}
            on_error: caught
    """)
    result, took = _run(path, tmp_path)
    assert took < 10 and result["variables"]["why"].startswith("block_timeout:")


@pytest.mark.slow
def test_the_runs_deadline_stops_a_call_on_its_thread(write, tmp_path: Path) -> None:
    path = _diagram(write, "inline_fns_c", """
          - id: call
            type: Function
            with: {function: "inline_fns_c:nap", arguments: {seconds: 30}, timeout: 60}
    """, start="timeout: 0.5")
    result, took = _run(path, tmp_path)
    assert took < 10 and result["status"] == "failed"
    assert result["errors"][-1]["type"] == "run_timeout", result["errors"]


@pytest.mark.slow
def test_a_concurrent_loops_calls_still_overlap_on_handler_threads(write, tmp_path: Path) -> None:
    path = _diagram(write, "inline_fns_d", """
          - id: call
            type: Loop
            with: {for_each: [1, 2, 3, 4], concurrency: 4, collect: "{{ slept }}"}
            body: nap
            set: {threads: "{{ collected }}"}
          - id: nap
            type: Function
            with: {function: "inline_fns_d:nap", arguments: {seconds: 1}}
            set: {slept: "{{ result.thread }}"}
            next: call
    """)
    result, took = _run(path, tmp_path)
    assert result["status"] == "succeeded" and took < 3.5  # four one-second naps side by side
    assert all(name.startswith("diagrama-tool:") for name in result["variables"]["threads"])


def test_an_alarm_outside_a_call_is_still_the_previous_handlers_and_the_timer_is_off_after_each() -> None:
    heard: list[int] = []

    def mine(signum: int, _frame: object) -> None:
        heard.append(signum)

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        assert call_inline(lambda n: n + 1, {"n": 1}, 5) == 2
        with pytest.raises(ZeroDivisionError):
            call_inline(lambda: 1 / 0, {}, 5)
        with pytest.raises(HandlerTimeout):
            call_inline(lambda seconds: time.sleep(seconds), {"seconds": 5}, 0.05)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        signal.setitimer(signal.ITIMER_REAL, 0.01)  # someone else's alarm, between calls
        time.sleep(0.1)
        assert heard == [signal.SIGALRM]
        signal.signal(signal.SIGALRM, mine)  # replaced by user code: the next inline call takes it back, and chains it
        with pytest.raises(HandlerTimeout):
            call_inline(lambda seconds: time.sleep(seconds), {"seconds": 5}, 0.05)
    finally:
        signal.signal(signal.SIGALRM, previous)
