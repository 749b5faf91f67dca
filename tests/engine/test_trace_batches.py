"""The trace and the console lines in batches: what reaches the disk and the person, and when.

Lines are written when the run waits, after a slow step, at errors and at the run's ends;
a crash loses at most the block it was in. No assertion here is about time.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from engine import Block, BlockRegistry, Event, RunContext, Services, execute
from engine.cli.run import console_printer
from engine.runtime.trace import REDACTED
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    """A trace file that keeps each write apart."""

    name = "recorded/trace.jsonl"

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.writes.append(bytes(data))
        return len(data)

    def tell(self) -> int:
        return sum(map(len, self.writes))

    def truncate(self, size: int) -> int:
        return size


def chain(length: int, last: str = "") -> str:
    lines = ["diagram: chain", "blocks:", "  - {id: start, type: Start, message_level: Debug, next: b0}"]
    for index in range(length):
        following = f"b{index + 1}" if index < length - 1 else (last and "last")
        lines.append(f"  - {{id: b{index}, type: Set, set: {{n: {index}}}{', next: ' + following if following else ''}}}")
    if last:
        lines.append(f"  - {{id: last, {last}}}")
    return "\n".join(lines) + "\n"


def test_fast_steps_share_writes_and_every_write_is_whole_lines(write, runner: Runner) -> None:
    disk = Recorder()
    result = runner.run(write(chain(300)), trace_file=disk)
    assert result.succeeded
    events = [json.loads(line) for line in b"".join(disk.writes).splitlines()]
    assert len(events) == 2 + 2 * 301  # run_started, two events a step, run_finished
    assert events[0]["event"] == Event.RUN_STARTED and events[-1]["event"] == Event.RUN_FINISHED
    assert len(disk.writes) < len(events) // 10  # batches, not a write per line
    assert all(data.endswith(b"\n") for data in disk.writes)
    assert disk.writes[0].count(b"\n") == 1  # run_started goes out alone, at once: its pid marks a live run


def test_an_error_is_written_when_it_happens(write, runner: Runner) -> None:
    disk = Recorder()
    result = runner.run(write(chain(5, last="type: Fail, with: {message: broke}")), trace_file=disk)
    assert result.status == "failed"
    failed = [data for data in disk.writes if b'"event":"block_failed"' in data]
    assert len(failed) == 1 and failed[0].endswith(b"\n")
    assert b'"event":"block_failed"' in failed[0].splitlines()[-1]  # the batch ends with the error


def test_the_lines_so_far_are_on_disk_while_a_block_waits(write, runner: Runner) -> None:
    path = write(chain(20, last="type: Sleep, with: {seconds: 60}"))
    diagram = runner.load(path)
    trace = runner.runs_dir / "waiting" / "trace.jsonl"

    async def watch() -> list[dict[str, Any]]:
        task = asyncio.create_task(execute(diagram, runs_dir=runner.runs_dir, run_id="waiting"))
        try:
            for _ in range(2000):
                await asyncio.sleep(0.01)
                lines = trace.read_bytes().splitlines() if trace.exists() else []
                events = [json.loads(line) for line in lines]
                if any(e["event"] == Event.BLOCK_STARTED and e["block"] == "last" for e in events):
                    return events
            raise AssertionError("the waiting block never showed in the trace")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    events = asyncio.run(watch())
    finished = {e["block"] for e in events if e["event"] == Event.BLOCK_FINISHED}
    assert finished == {"start", *(f"b{index}" for index in range(20))}


@pytest.mark.slow
def test_a_killed_run_loses_at_most_the_block_it_was_in(write, tmp_path: Path) -> None:
    path = write(chain(40, last="type: Sleep, with: {seconds: 60}"))
    runs_dir = tmp_path / "runs"
    script = textwrap.dedent(f"""
        import asyncio
        from pathlib import Path
        from blocks.registry import BUILTIN_BLOCKS
        from engine import BlockRegistry, execute
        from engine.compile.loader import load_diagram
        from tests.conftest import TEST_BLOCKS
        diagram = load_diagram(Path({str(path)!r}), BlockRegistry((*BUILTIN_BLOCKS, *TEST_BLOCKS)))
        asyncio.run(execute(diagram, runs_dir=Path({str(runs_dir)!r}), run_id="killed"))
    """)
    process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    trace = runs_dir / "killed" / "trace.jsonl"
    try:
        deadline = time.monotonic() + 60
        while b'"block":"last"' not in (trace.read_bytes() if trace.exists() else b""):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the run never reached its last block"
            time.sleep(0.02)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        if process.stderr:
            process.stderr.close()
    data = trace.read_bytes()
    assert data.endswith(b"\n")
    events = [json.loads(line) for line in data.splitlines()]  # every line whole JSON
    assert events[0]["event"] == Event.RUN_STARTED
    for block in ("start", *(f"b{index}" for index in range(40))):  # every block before the current one, whole
        assert [e["event"] for e in events if e.get("block") == block] == [Event.BLOCK_STARTED, Event.BLOCK_FINISHED]


class Leaky(Block):
    """Test block: sends a request whose headers and body hold the run's key."""

    async def run(self, inputs: Any, context: RunContext) -> dict[str, Any]:
        key = context.services.environ["VENDOR_API_KEY"]
        context.emit(Event.HTTP_REQUEST, method="POST", url="https://vendor.test/v1", attempt=1,
                     headers={"Authorization": "Bearer opaque-header-value"}, body={"echo": key})
        return {}


def test_a_detailed_block_in_a_release_run_still_has_its_headers_and_keys_scrubbed(write, tmp_path: Path) -> None:
    from blocks.registry import BUILTIN_BLOCKS
    from tests.conftest import TEST_BLOCKS

    runner = Runner(BlockRegistry((*BUILTIN_BLOCKS, *TEST_BLOCKS, Leaky)), tmp_path)
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, message_level: Release, next: leak}
          - {id: leak, type: Leaky, message_level: Detailed}
    """)
    services = Services(environ={"VENDOR_API_KEY": "k-0123456789abcdef"})
    result = runner.run(path, services=services)
    assert result.succeeded
    text = result.trace.read_text() if result.trace else ""
    assert "opaque-header-value" not in text and "k-0123456789abcdef" not in text
    request = next(e for e in runner.events(result) if e["event"] == Event.HTTP_REQUEST)
    assert request["headers"] == {"Authorization": REDACTED} and request["body"] == {"echo": REDACTED}


def test_console_lines_read_as_before_and_are_scrubbed(write, runner: Runner) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, message_level: Debug, next: count}
          - {id: count, type: Set, set: {i: 1}, next: fail}
          - {id: fail, type: Fail, with: {message: "key k-0123456789abcdef leaked"}}
    """)
    shown = io.StringIO()
    services = Services(environ={"VENDOR_API_KEY": "k-0123456789abcdef"})
    result = runner.run(path, services=services, console=console_printer(shown), run_id="r1")
    assert result.status == "failed"
    lines = shown.getvalue().splitlines()
    assert lines[0] == "run r1 of d"
    assert lines[1].startswith("  ✓ start (Start) ") and lines[1].endswith(" ms → count")
    assert lines[2].startswith("  ✓ count (Set) ") and lines[2].endswith(" ms → fail")
    assert lines[3] == f"  ! fail: test_failure: key {REDACTED} leaked"
    assert lines[4].startswith("  ✗ fail (Fail) ")
    assert lines[5].startswith("run failed in ") and lines[5].endswith(" ms, 3 steps")


@pytest.mark.parametrize("duration", [0.0, 0.0001, 0.0499, 0.04999999, 0.05, 0.0501, 0.95, 12.3456, 1e6])
def test_a_block_line_shows_its_duration_as_one_decimal(duration: float) -> None:
    shown = io.StringIO()
    lines = console_printer(shown)
    finished = lines.shows(Event.BLOCK_FINISHED, str)
    assert finished is not None and lines.shows(Event.BLOCK_STARTED, str) is None  # not a line of its own
    finished({"block": "b", "block_type": "Set", "status": "succeeded", "duration_ms": duration, "next": "c"})
    finished({"block": "c", "block_type": "Set", "status": "ignored", "duration_ms": duration, "next": None})
    lines.flush()
    assert shown.getvalue().splitlines() == [f"  ✓ b (Set) {duration:.1f} ms → c", f"  ~ c (Set) {duration:.1f} ms"]


@pytest.mark.slow
def test_debug_lines_reach_stderr_when_it_is_a_pipe(write, tmp_path: Path) -> None:
    path = write(chain(30))
    done = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path), "--output", "json",
                           "--runs-dir", str(tmp_path / "runs")],
                          cwd=ROOT, capture_output=True, text=True, encoding="utf-8", check=False,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("run ") and lines[-1].startswith("run succeeded in ")
    assert [line.split()[1] for line in lines[1:-1]] == ["start", *(f"b{index}" for index in range(30))]
    assert json.loads(done.stdout)["status"] == "succeeded"
