"""A run's trace: the event vocabulary, the processor chain, the JSONL file.

Each run builds its own chain once per event name (nothing global): stamp → redact headers
(only where the run can reach Detailed, the one level whose events carry headers) → the
console's line (only for the events the console shows) → observers → orjson render; the sink then
redacts secrets and writes whole lines in batches. A batch goes out
when the run waits (a request, a sleep: the event loop gets control), when a step ends after
a slow block or a while since the last write, at every error, at a run's start and end, and
when it passes `_BATCH_BYTES`; so a crash (SIGKILL) loses at most the lines of the block it was
in. Writing never fails a step: rendering falls back for values orjson refuses, and a failed
write (a full disk) keeps the whole lines, stops the file and is kept in `failure`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets as _secrets
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from engine.format.levels import MessageLevel
from engine.format.redact import REDACTED, Redactor
from engine.format.values import dumps, json_default

__all__ = [
    "EVENT_LEVELS",
    "REDACTED",
    "SECRET_HEADERS",
    "SLOW_STEP_S",
    "Console",
    "Event",
    "RunTrace",
    "Trace",
    "new_run_id",
    "read_events",
]

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization", "cookie",
                            "set-cookie", "x-auth-token"})


class Event:
    """Trace event names: past-tense facts, shared by the executor, `diagrama trace` and tests."""

    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"
    RUN_WAITING = "run_waiting"
    BLOCK_STARTED = "block_started"
    BLOCK_FINISHED = "block_finished"
    BLOCK_FAILED = "block_failed"
    LOOP_PASS_STARTED = "loop_pass_started"
    PROVIDER_CALLED = "provider_called"
    PROVIDER_RETRIED = "provider_retried"
    PROVIDER_FALLBACK = "provider_fallback"
    HTTP_REQUEST = "http_request"
    HTTP_RESPONSE = "http_response"
    HTTP_CALLED = "http_called"
    HTTP_RETRIED = "http_retried"
    TOOLS_SELECTED = "tools_selected"
    PASSAGES_RETRIEVED = "passages_retrieved"
    TOOL_CALLED = "tool_called"
    FUNCTION_CALLED = "function_called"
    TEXT_DELTA = "text_delta"
    SUBDIAGRAM_STARTED = "subdiagram_started"
    SUBDIAGRAM_FINISHED = "subdiagram_finished"
    BLOCKING_CALL = "blocking_call"
    WAIT_NOTIFIED = "wait_notified"


EVENT_LEVELS: dict[str, MessageLevel] = {
    Event.RUN_STARTED: MessageLevel.RELEASE,
    Event.RUN_FINISHED: MessageLevel.RELEASE,
    Event.RUN_WAITING: MessageLevel.RELEASE,
    Event.BLOCK_FAILED: MessageLevel.RELEASE,
    Event.WAIT_NOTIFIED: MessageLevel.RELEASE,  # someone was (or could not be) told a run waits for them
    Event.BLOCKING_CALL: MessageLevel.RELEASE,  # a fault in user code that holds up everything else: always told
    Event.BLOCK_STARTED: MessageLevel.DEBUG,
    Event.BLOCK_FINISHED: MessageLevel.DEBUG,
    Event.LOOP_PASS_STARTED: MessageLevel.DEBUG,
    Event.PROVIDER_CALLED: MessageLevel.DEBUG,
    Event.PROVIDER_RETRIED: MessageLevel.DEBUG,
    Event.PROVIDER_FALLBACK: MessageLevel.DEBUG,
    Event.TOOLS_SELECTED: MessageLevel.DEBUG,
    Event.PASSAGES_RETRIEVED: MessageLevel.DEBUG,
    Event.TOOL_CALLED: MessageLevel.DEBUG,
    Event.HTTP_CALLED: MessageLevel.DEBUG,
    Event.HTTP_RETRIED: MessageLevel.DEBUG,
    Event.FUNCTION_CALLED: MessageLevel.DEBUG,
    Event.TEXT_DELTA: MessageLevel.DEBUG,
    Event.SUBDIAGRAM_STARTED: MessageLevel.DEBUG,
    Event.SUBDIAGRAM_FINISHED: MessageLevel.DEBUG,
    Event.HTTP_REQUEST: MessageLevel.DETAILED,
    Event.HTTP_RESPONSE: MessageLevel.DETAILED,
}

class Console(Protocol):
    """Shows a run's events to a person (the CLI's per-block lines), a line per event it knows.

    `shows(event, redact)` is asked once per event name: the function the trace then calls with
    each event of that name (its fields, values already shortened), or None for an event the
    console does not show. The trace calls it straight from its chain, with no dispatch per event:
    at Debug it runs at every step. `redact` scrubs a rendered line; the console keeps its lines
    until `flush`, which the trace calls whenever it writes its own batch, so that lines and trace
    reach the person and the disk together.
    """

    def shows(self, event: str, redact: Callable[[str], str]) -> Callable[[dict[str, Any]], object] | None: ...

    def flush(self) -> None: ...


class RunTrace(Protocol):
    """Where a run writes its events: its own Trace, or, for a run nested in a step, a lane of its top run's
    (engine.runtime.trace_lane). `file` is the Trace that owns the file: the step loop reads its batch there."""

    run_id: str
    path: Path | None
    redactor: Redactor
    wall_at_zero: float

    @property
    def file(self) -> Trace: ...

    def emit(self, event: str, **fields: Any) -> None: ...

    def record(self, event: str, fields: dict[str, Any]) -> None: ...

    def record_stamped(self, event: str, fields: dict[str, Any]) -> None: ...

    def redact(self, text: str) -> str: ...


_BATCH_BYTES = 16 * 1024
"""A batch of lines is written once it is this large (a few dozen Debug steps)."""
SLOW_STEP_S = 0.001
"""A step at least this long (a request, a tool) writes the batch when it ends; one write is cheap beside it."""
_FLUSH_AFTER_S = 0.05
"""No line waits longer than this much run time behind a step's end (a person watching, a crash)."""
_ONE_LINE = orjson.OPT_APPEND_NEWLINE
"""orjson's option for a rendered event: the line's newline appended in C."""
_FLUSHED_AT = frozenset({Event.RUN_STARTED, Event.BLOCK_FAILED, Event.RUN_FINISHED})
"""Events written at once: the run's start (its pid tells a live run from a dead one), every error, its end."""


def new_run_id() -> str:
    """Sortable by start time, unique enough for concurrent runs."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{_secrets.token_hex(3)}"


def _redact_headers(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: (REDACTED if str(key).lower() in SECRET_HEADERS else _redact_headers(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redact_headers(item) for item in value]
    return value


class _Sink:
    """The logger at the end of the chain: redacts secrets and writes batches of whole lines.

    A write that fails (ENOSPC, EIO) stops the file: the part of a line it wrote is cut
    off again where the file can be truncated, and `write` returns the error (the trace keeps it).
    """

    __slots__ = ("_file", "_size", "pending", "scrub")

    def __init__(self, file: IO[bytes] | None, scrub: Callable[[bytearray], bytes | bytearray]) -> None:
        self._file = file
        self._size = _size_of(file)
        self.pending = bytearray()
        """Rendered lines, each ending in a newline, not yet written (the same buffer for the sink's life).

        One buffer rather than a list of lines: orjson's bytes are freed as soon as they are copied in,
        and keeping a hundred of them alive until the batch is written made each `orjson.dumps` four
        times slower (its buffers no longer come back from the allocator's free lists)."""
        self.scrub = scrub

    def write(self) -> OSError | None:
        """Write the pending lines, secrets redacted: one pass over the batch, as none spans two lines.
        The error that stopped the file, if this write met one."""
        file = self._file
        if file is None or not self.pending:
            return None
        # Scanned where it is; a copy to write (1 µs for a batch) lets the batch be cleared whatever the write does.
        data = bytes(self.scrub(self.pending))
        self.pending.clear()
        done = 0
        try:
            # A raw file writes with one os.write; it may write part of the batch when the
            # disk fills, and the next write then raises ENOSPC.
            view = memoryview(data)
            while done < len(data):
                written = file.write(view[done:])
                if written is None:  # a buffered writer: it wrote everything or raised
                    done = len(data)
                    break
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += written
        except OSError as exc:
            self._stop(file, kept=data.rfind(b"\n", 0, done) + 1)
            return exc
        self._size += done
        return None

    def _stop(self, file: IO[bytes], kept: int) -> None:
        self._file = None
        self.pending.clear()
        # Keep the whole lines written, drop a torn one; devices such as /dev/full refuse to truncate, which is fine.
        with contextlib.suppress(OSError, ValueError):
            file.truncate(self._size + kept)


def _size_of(file: IO[bytes] | None) -> int:
    try:
        return file.tell() if file is not None else 0
    except (OSError, ValueError):
        return 0


def _describe(failure: OSError) -> str:
    if failure.errno == errno.ENOSPC:
        return "disk full (ENOSPC)"
    code = errno.errorcode.get(failure.errno or 0)
    reason = failure.strerror or str(failure)
    return f"{reason} ({code})" if code else reason


def _scrub_headers(event: dict[str, Any]) -> None:
    if "headers" in event or "request" in event or "response" in event:
        for key in ("headers", "request", "response"):
            if key in event:
                event[key] = _redact_headers(event[key])


class Trace:
    """Writes one run's events; no file when `path` is None (events are still built and shown).

    `file` replaces the file at `path` (a test's failing file; the caller closes it).
    `level` is the highest message level the run can reach (the default, or a block's own):
    the chain leaves out what no event at or below it needs.
    """

    def __init__(
        self,
        path: Path | None,
        run_id: str,
        *,
        secrets: Iterable[str] = (),
        console: Console | None = None,
        file: IO[bytes] | None = None,
        level: MessageLevel = MessageLevel.DETAILED,
    ) -> None:
        self.path = path
        self.run_id = run_id
        self._where = str(path) if path is not None else str(getattr(file, "name", "the trace file"))
        self._owned: IO[bytes] | None = None
        opened: OSError | None = None
        if file is None and path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                file = self._owned = open(path, "ab", buffering=0)  # noqa: SIM115  # closed by close()
            except OSError as exc:
                opened = exc
        self.redactor = Redactor(secrets)
        """The run's scrubber (engine.format.redact): the same one cleans its result, store row and files."""
        self._console = console
        self._sink = _Sink(file, self._scrub_secrets)
        self.failure: OSError | None = opened
        """Why the trace file stopped being written (a full disk), or None (the executor looks before every step)."""
        self.pending = self._sink.pending
        """Lines not yet written. The executor writes them at a step's end when the step took SLOW_STEP_S or more,
        or the clock passed `flush_due_at`: a check it makes inline, as it runs after every Debug step."""
        self._scheduled = False
        self.flush_due_at = time.perf_counter() + _FLUSH_AFTER_S
        """When the lines pending now are written at the latest, at a step's end (perf_counter time)."""
        self.wall_at_zero = time.time() - time.perf_counter()
        """The wall clock when perf_counter read zero: an event's timestamp is this plus perf_counter's reading,
        so that timestamps never go back within a trace (the clock may be set back mid-run) and a step's events
        reuse the readings their durations take."""
        self._level = level
        self._observers: list[Callable[[dict[str, Any]], object]] = []
        self._chains: dict[str, tuple[Callable[[dict[str, Any]], object], ...]] = {}
        """Event name → what runs on its fields before they are rendered; made on the event's first use."""

    @property
    def file(self) -> Trace:
        """The Trace that writes the file: this one (a lane of it names it too)."""
        return self

    def _chain(self, event: str) -> tuple[Callable[[dict[str, Any]], object], ...]:
        """The steps an event's fields go through before rendering: decided once per event name, so that
        a step no event of this name needs (the console for `block_started`) costs nothing per event."""
        steps: list[Callable[[dict[str, Any]], object]] = []
        if self._level >= MessageLevel.DETAILED:  # only Detailed events (http_request, http_response) carry headers
            steps.append(_scrub_headers)
        if self._console is not None:
            shown = self._console.shows(event, self.redact)
            if shown is not None:
                steps.append(shown)
        steps.extend(self._observers)
        chain = self._chains[event] = tuple(steps)
        return chain

    def reach(self, level: MessageLevel) -> None:
        """Let the chain serve events up to `level` too (a subdiagram's block at Detailed in a Debug run)."""
        if level > self._level:
            self._level = level
            self._chains.clear()

    def observe(self, observer: Callable[[dict[str, Any]], object]) -> None:
        """Hand each event to `observer` just before it is rendered; what it adds to the event is written too."""
        self._observers.append(observer)
        self._chains.clear()

    def _scrub_secrets(self, lines: bytearray) -> bytes | bytearray:
        return self.redactor.encoded(lines)

    def redact(self, text: str) -> str:
        return self.redactor.text(text)

    def emit(self, event: str, **fields: Any) -> None:
        self.record(event, fields)

    def record(self, event: str, fields: dict[str, Any]) -> None:
        """Emit `event`; `fields`, built by the caller for this event alone, becomes it (no copy)."""
        fields["run_id"] = self.run_id
        fields["event"] = event
        fields["timestamp"] = self.wall_at_zero + time.perf_counter()
        self.record_stamped(event, fields)

    def record_stamped(self, event: str, fields: dict[str, Any]) -> None:
        """`record` for fields built with their `run_id`, `event` and `timestamp` (a step's two events,
        engine.runtime.step_events): a dict grown past its first table is copied into a larger one."""
        chain = self._chains.get(event)
        if chain is None:
            chain = self._chain(event)
        if chain:  # most events of a run without console or observers have none
            for step in chain:
                step(fields)
        try:
            line = orjson.dumps(fields, json_default, _ONE_LINE)  # positional: no keywords to match
        except TypeError:  # 2 ** 70, an object json_default does not know: the writer that never refuses
            line = dumps(fields) + b"\n"
        sink = self._sink  # its `msg`, inline: this runs twice per Debug step
        if sink._file is not None:  # a sink without a file (stopped, or none asked for) keeps nothing
            sink.pending += line
        if event in _FLUSHED_AT or len(sink.pending) >= _BATCH_BYTES:
            self.flush()
        elif not self._scheduled:
            self._schedule()

    def _schedule(self) -> None:
        """Write the batch when the run next waits: the event loop runs ready callbacks before it sleeps."""
        import asyncio  # here, not at the top: blocks import Event, and `validate` needs no event loop

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in a run's event loop: write through
            self.flush()
            return
        self._scheduled = True
        loop.call_soon(self._flush_scheduled)

    def _flush_scheduled(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        """Write the pending lines, and let the console show its own."""
        self.flush_due_at = time.perf_counter() + _FLUSH_AFTER_S
        if self._sink.pending:
            failed = self._sink.write()
            if failed is not None:
                self.failure = failed
        if self._console is not None:
            self._console.flush()

    def failure_message(self) -> str:
        """The failure in words, naming the file: "cannot write the trace runs/x/trace.jsonl: disk full (ENOSPC)"."""
        failure = self.failure
        if failure is None:
            return ""
        return f"cannot write the trace {self._where}: {_describe(failure)}"

    def close(self) -> None:
        self.flush()
        self._sink._file = None  # our own sink
        if self._owned is not None:
            owned, self._owned = self._owned, None
            try:
                owned.close()
            except OSError as exc:
                self.failure = self.failure or exc


def read_events(path: Path) -> list[dict[str, Any]]:
    """Parse a trace file; a torn last line (a crash mid-write) is skipped."""
    events = []
    with path.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                events.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return events
