"""A run's trace: the event vocabulary, the processor chain, the JSONL file.

Each run binds its own chain (nothing global): stamp → redact headers → console tee →
JSON render → redact secrets. Each event line leaves in one unbuffered write, whole or
not at all, so a crash or Ctrl-C still leaves every event emitted before it on disk.
Writing never fails a step: rendering falls back for values orjson refuses, and a
failed write (a full disk) stops the file and is kept in `failure` for the executor.
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
from typing import IO, Any

import orjson

from engine.format.redact import REDACTED, Redactor
from engine.format.spec import MessageLevel
from engine.format.values import dumps

__all__ = [
    "EVENT_LEVELS",
    "REDACTED",
    "SECRET_HEADERS",
    "Console",
    "Event",
    "Trace",
    "new_run_id",
    "read_events",
]

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization"})


class Event:
    """Trace event names: past-tense facts, shared by the executor, `diagrama trace` and tests."""

    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"
    BLOCK_STARTED = "block_started"
    BLOCK_FINISHED = "block_finished"
    BLOCK_FAILED = "block_failed"
    LOOP_PASS_STARTED = "loop_pass_started"
    PROVIDER_CALLED = "provider_called"
    PROVIDER_RETRIED = "provider_retried"
    HTTP_REQUEST = "http_request"
    HTTP_RESPONSE = "http_response"
    TOOLS_SELECTED = "tools_selected"
    TOOL_CALLED = "tool_called"


EVENT_LEVELS: dict[str, MessageLevel] = {
    Event.RUN_STARTED: MessageLevel.RELEASE,
    Event.RUN_FINISHED: MessageLevel.RELEASE,
    Event.BLOCK_FAILED: MessageLevel.RELEASE,
    Event.BLOCK_STARTED: MessageLevel.DEBUG,
    Event.BLOCK_FINISHED: MessageLevel.DEBUG,
    Event.LOOP_PASS_STARTED: MessageLevel.DEBUG,
    Event.PROVIDER_CALLED: MessageLevel.DEBUG,
    Event.PROVIDER_RETRIED: MessageLevel.DEBUG,
    Event.TOOLS_SELECTED: MessageLevel.DEBUG,
    Event.TOOL_CALLED: MessageLevel.DEBUG,
    Event.HTTP_REQUEST: MessageLevel.DETAILED,
    Event.HTTP_RESPONSE: MessageLevel.DETAILED,
}

Console = Callable[[Mapping[str, Any], Callable[[str], str]], None]
"""console(event, redact): shows an event to a person; `redact` scrubs a rendered line."""


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
    """The logger at the end of the chain: one write per event line, whole lines only.

    A write that fails (ENOSPC, EIO) stops the file: a partly written line is cut
    off again where the file can be truncated, and the error is kept in `failure`.
    """

    __slots__ = ("_file", "_size", "count", "failure")

    def __init__(self, file: IO[bytes] | None) -> None:
        self._file = file
        self._size = _size_of(file)
        self.count = 0
        self.failure: OSError | None = None

    def msg(self, line: bytes) -> None:
        self.count += 1
        file = self._file
        if file is None:
            return
        data = line + b"\n"
        try:
            _write_all(file, data)
        except OSError as exc:
            self._stop(file, exc)
            return
        self._size += len(data)

    def _stop(self, file: IO[bytes], exc: OSError) -> None:
        self._file = None
        self.failure = exc
        # Drop a torn line; devices such as /dev/full refuse to truncate, which is fine.
        with contextlib.suppress(OSError, ValueError):
            file.truncate(self._size)


def _size_of(file: IO[bytes] | None) -> int:
    try:
        return file.tell() if file is not None else 0
    except (OSError, ValueError):
        return 0


def _write_all(file: IO[bytes], data: bytes) -> None:
    # A raw file writes with one os.write; it may write part of a line when the disk
    # fills, and the next write then raises ENOSPC.
    view = memoryview(data)
    while view:
        written = file.write(view)
        if written is None:  # a buffered writer: it wrote everything or raised
            return
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _describe(failure: OSError) -> str:
    if failure.errno == errno.ENOSPC:
        return "disk full (ENOSPC)"
    code = errno.errorcode.get(failure.errno or 0)
    reason = failure.strerror or str(failure)
    return f"{reason} ({code})" if code else reason


class Trace:
    """Writes one run's events; a no-op file when `path` is None (events still counted).

    `file` replaces the file at `path` (a test's failing file; the caller closes it).
    """

    def __init__(
        self,
        path: Path | None,
        run_id: str,
        *,
        secrets: Iterable[str] = (),
        console: Console | None = None,
        file: IO[bytes] | None = None,
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
        self._sink = _Sink(file)
        self._sink.failure = opened
        processors: list[Any] = [self._stamp, self._scrub_headers]
        if console is not None:
            processors.append(self._tee)
        processors += [self._render, self._scrub_secrets]
        # The chain runs as structlog's BoundLogger would run it, minus the per-call
        # context copy and method proxying, which cost more than the rest of an event.
        self._processors = tuple(processors)

    @staticmethod
    def _stamp(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        event["timestamp"] = time.time()
        return event

    @staticmethod
    def _scrub_headers(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        if "headers" in event or "request" in event or "response" in event:
            for key in ("headers", "request", "response"):
                if key in event:
                    event[key] = _redact_headers(event[key])
        return event

    def _tee(self, _logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        assert self._console is not None
        self._console(event, self.redact)
        return event

    @staticmethod
    def _render(_logger: Any, _name: str, event: dict[str, Any]) -> bytes:
        return dumps(event)  # never raises: 2 ** 70 and unknown objects have a fallback

    def _scrub_secrets(self, _logger: Any, _name: str, line: bytes) -> bytes:
        return self.redactor.encoded(line)

    def redact(self, text: str) -> str:
        return self.redactor.text(text)

    def emit(self, event: str, **fields: Any) -> None:
        fields["run_id"] = self.run_id
        fields["event"] = event
        rendered: Any = fields
        for processor in self._processors:
            rendered = processor(self._sink, "msg", rendered)
        self._sink.msg(rendered)

    @property
    def count(self) -> int:
        return self._sink.count

    @property
    def failure(self) -> OSError | None:
        """Why the trace file stopped being written (a full disk), or None."""
        return self._sink.failure

    def failure_message(self) -> str:
        """The failure in words, naming the file: "cannot write the trace runs/x/trace.jsonl: disk full (ENOSPC)"."""
        failure = self._sink.failure
        if failure is None:
            return ""
        return f"cannot write the trace {self._where}: {_describe(failure)}"

    def close(self) -> None:
        self._sink._file = None  # our own sink
        if self._owned is not None:
            owned, self._owned = self._owned, None
            try:
                owned.close()
            except OSError as exc:
                self._sink.failure = self._sink.failure or exc


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
