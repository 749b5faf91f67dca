"""The response cache (issue 39, item 3): a repeated request is answered from disk, the vendor is not called.

Against the fake vendor server, which counts the requests it gets: a second identical run makes none and gives the
same result and trace (apart from `cached: true`); a streamed answer replays the same pieces; a changed request
misses; errors, cut streams and bodies that cannot be read are not kept; the key never reaches the cache's files;
two processes writing one entry leave a whole one; offline runs leave the cache alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import engine
from engine.cli import app as cli_main
from engine.providers.response_cache import CACHE_EXTENSION, Entry, ResponseCache, open_cache
from tests.reliability.conftest import diagram_yaml
from tests.reliability.fakevendor import ENV, KEYS, VENDORS, FakeVendorServer, Reply, Reset, error_body, ok

STREAMS = Path(__file__).parents[1] / "vendors" / "streams"
VOLATILE = frozenset({"timestamp", "offset_ms", "run_id", "duration_ms", "trace"})
"""Fields that differ between two runs of one diagram whatever the cache does."""


def _entries(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


def _stable(value: Any) -> Any:
    """An event (or a part of one) without the fields that differ between any two runs."""
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in VOLATILE}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


class Robot:
    """One diagram against one test id of the fake server, run as often as a test likes."""

    def __init__(self, server: FakeVendorServer, blocks: engine.BlockRegistry, folder: Path, vendor: str,
                 extra: str = "", test_id: str | None = None) -> None:
        self.server, self.blocks, self.vendor = server, blocks, vendor
        self.test_id = test_id or uuid.uuid4().hex[:12]
        self.folder = folder / uuid.uuid4().hex[:8]
        self.folder.mkdir(parents=True)
        path = self.folder / "diagram.yaml"
        path.write_text(diagram_yaml(vendor, "fail", 5.0, extra, base_url=server.base(self.test_id)), encoding="utf-8")
        self.diagram = engine.load(path, blocks)

    def run(self, services: engine.Services) -> tuple[engine.RunResult, list[dict[str, Any]]]:
        result = asyncio.run(engine.run_async(self.diagram, {}, registry=self.blocks, runs_dir=self.folder / "runs",
                                              services=services))
        assert result.trace is not None
        return result, engine.read_events(result.trace)

    def hits(self) -> int:
        return sum(1 for hit in self.server.hits(self.test_id) if hit.vendor == self.vendor)


def _finished(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(event for event in events if event["event"] == "run_finished")


def _called(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == "provider_called"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_second_run_is_answered_from_the_cache(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                                                 tmp_path: Path, vendor: str) -> None:
    robot = Robot(fake_server, blocks, tmp_path, vendor)
    fake_server.script(robot.test_id, ok(vendor))
    cache = open_cache(tmp_path / "cache")
    first, first_events = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache))
    assert first.succeeded, first.errors
    assert robot.hits() == 1 and len(_entries(cache.folder)) == 1
    assert "cached" not in _called(first_events)[0]

    # A fresh process's view: a new cache object on the same folder, new services.
    second, second_events = robot.run(engine.Services(environ=dict(KEYS), response_cache=open_cache(cache.folder)))
    assert robot.hits() == 1, "the second run called the vendor"
    assert second.succeeded and second.variables == first.variables and second.path == first.path
    called = _called(second_events)[0]
    assert called.pop("cached") is True
    assert called["usage"] == _called(first_events)[0]["usage"]  # as the vendor said; the cost code counts it 0
    assert called.pop("cost") == {"usd": 0.0}  # nothing was spent
    _called(first_events)[0].pop("cost")  # whatever the first cost (its model's price, or unknown)
    assert second.cost == {"usd": 0.0, "requests": 1, "unknown_steps": 0}
    assert _finished(second_events).pop("cost") == second.cost
    _finished(first_events).pop("cost")
    assert _stable(second_events) == _stable(first_events)


@pytest.mark.parametrize(("vendor", "recorded"), [("anthropic", "anthropic_text_citations"), ("groq", "groq_text")])
def test_a_streamed_answer_replays_the_same_pieces(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                                                   tmp_path: Path, vendor: str, recorded: str) -> None:
    sse = (STREAMS / f"{recorded}.sse").read_bytes()
    robot = Robot(fake_server, blocks, tmp_path, vendor, extra="      stream: true\n")
    fake_server.script(robot.test_id, Reply(200, sse, content_type="text/event-stream"))
    cache = open_cache(tmp_path / "cache")
    runs = []
    for _ in range(2):
        pieces: list[tuple[str, str]] = []
        services = engine.Services(environ=dict(KEYS), response_cache=cache)
        services.text_observers.append(lambda block, piece, pieces=pieces: pieces.append((block, piece)))
        result, events = robot.run(services)
        assert result.succeeded, result.errors
        runs.append((result.variables, pieces, events))
    assert robot.hits() == 1
    (first, first_pieces, first_events), (second, second_pieces, second_events) = runs
    assert len(first_pieces) > 1 and second_pieces == first_pieces and second == first
    entry = cache.get(next(path.name for path in _entries(cache.folder)))
    assert entry is not None and entry.body == sse  # the stream's bytes as they came
    assert _called(second_events)[0].pop("cached") is True
    assert _called(second_events)[0].pop("cost") == {"usd": 0.0}  # nothing was spent
    _called(first_events)[0].pop("cost")
    assert _finished(second_events).pop("cost")["usd"] == 0.0
    _finished(first_events).pop("cost")
    assert _stable(second_events) == _stable(first_events)


def test_a_changed_request_misses(fake_server: FakeVendorServer, blocks: engine.BlockRegistry, tmp_path: Path) -> None:
    cache = open_cache(tmp_path / "cache")
    plain = Robot(fake_server, blocks, tmp_path, "groq")
    fake_server.script(plain.test_id, ok("groq"))
    warmer = Robot(fake_server, blocks, tmp_path, "groq", extra="      temperature: 0.5\n", test_id=plain.test_id)
    for robot in (plain, warmer, plain, warmer):
        result, _ = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache))
        assert result.succeeded, result.errors
    assert plain.hits() == 2 and len(_entries(cache.folder)) == 2  # one request each, then both from the cache


def test_the_key_never_reaches_the_cache(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                                         tmp_path: Path) -> None:
    cache = open_cache(tmp_path / "cache")
    for vendor in VENDORS:
        robot = Robot(fake_server, blocks, tmp_path, vendor)
        fake_server.script(robot.test_id, ok(vendor))
        for _ in range(2):
            result, _ = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache))
            assert result.succeeded, result.errors
        assert robot.hits() == 1
        assert any(key.encode() in hit.body + str(hit.headers).encode()
                   for hit in fake_server.hits(robot.test_id) for key in KEYS.values()), "the key was sent"
    files = _entries(cache.folder)
    assert len(files) == 3
    for path in files:
        data = path.read_bytes()
        for key in KEYS.values():
            assert key.encode() not in data and key not in path.name


def test_an_entry_holding_a_credential_is_not_written(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    request = httpx.Request("POST", "https://vendor.example/v1?key=AIzaQueryKey0123&alt=sse", content=b"{}",
                            headers={"authorization": "Bearer gsk_header_key_0123", "anthropic-version": "1"})
    key, credentials = ResponseCache.key("gemini", request)
    assert {"AIzaQueryKey0123", "gsk_header_key_0123"} <= set(credentials)
    assert not cache.put(key, Entry(200, [], b'{"echo": "gsk_header_key_0123"}'), credentials)
    assert _entries(tmp_path) == []
    other = httpx.Request("POST", "https://vendor.example/v1?key=AnotherKey9999&alt=sse", content=b"{}",
                          headers={"authorization": "Bearer another_key_9999", "anthropic-version": "1"})
    assert ResponseCache.key("gemini", other)[0] == key  # the key is not part of the key
    versioned = httpx.Request("POST", "https://vendor.example/v1?alt=sse", content=b"{}",
                              headers={"anthropic-version": "2"})
    assert ResponseCache.key("gemini", versioned)[0] != key  # a header that shapes the answer is


@pytest.mark.slow
@pytest.mark.parametrize("vendor", ["anthropic", "gemini"])
def test_errors_and_cut_answers_are_not_kept(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                                             tmp_path: Path, vendor: str) -> None:
    cache = open_cache(tmp_path / "cache")

    async def no_wait(_seconds: float) -> None:  # a reset connection is retried: its backoff is not this test's
        await asyncio.sleep(0)

    for step in (Reply(400, error_body(vendor, 400)), Reply(200, b'{"not": "an answer'), Reset(vendor)):
        robot = Robot(fake_server, blocks, tmp_path, vendor)
        fake_server.script(robot.test_id, step)
        for _ in range(2):
            result, _ = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache, sleep=no_wait))
            assert not result.succeeded
        assert robot.hits() >= 2, f"{step!r} was answered from the cache"
    assert _entries(cache.folder) == []
    # A 500 then a 200: the 200 is kept, and a second run asks nobody.
    robot = Robot(fake_server, blocks, tmp_path, vendor)
    fake_server.script(robot.test_id, Reply(500, error_body(vendor, 500), headers={"retry-after-ms": "1"}), ok(vendor))
    for _ in range(2):
        result, _ = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache))
        assert result.succeeded, result.errors
    assert robot.hits() == 2 and len(_entries(cache.folder)) == 1


def test_a_cut_stream_is_not_kept(fake_server: FakeVendorServer, blocks: engine.BlockRegistry, tmp_path: Path) -> None:
    sse = (STREAMS / "anthropic_text_citations.sse").read_bytes()
    cut = sse[:sse.index(b"event: message_delta")]  # the vendor's end of the reply never comes
    assert b"text_delta" in cut
    robot = Robot(fake_server, blocks, tmp_path, "anthropic", extra="      stream: true\n")
    fake_server.script(robot.test_id, Reply(200, cut, content_type="text/event-stream"))
    cache = open_cache(tmp_path / "cache")
    for _ in range(2):
        result, _ = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache))
        assert not result.succeeded
        assert result.errors[0]["type"] == "stream_interrupted", result.errors
    assert robot.hits() == 2 and _entries(cache.folder) == []


def test_offline_runs_leave_the_cache_alone(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                                            tmp_path: Path) -> None:
    robot = Robot(fake_server, blocks, tmp_path, "anthropic")
    cache = open_cache(tmp_path / "cache")
    for _ in range(2):
        result, events = robot.run(engine.Services(environ={}, offline=True, response_cache=cache))
        assert result.succeeded, result.errors
        assert "cached" not in _called(events)[0]
    assert robot.hits() == 0 and _entries(cache.folder) == []


_WRITER = textwrap.dedent("""\
    import sys
    from engine.providers.response_cache import Entry, open_cache
    cache = open_cache(sys.argv[1])
    body = bytes(range(256)) * 4096  # 1 MiB: a torn write would show
    for _ in range(int(sys.argv[2])):
        assert cache.put("ab" + "0" * 62, Entry(200, [("content-type", "application/octet-stream")], body), [])
""")


@pytest.mark.slow
def test_two_processes_writing_one_entry_leave_a_whole_one(tmp_path: Path) -> None:
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), "40"]) for _ in range(2)]
    cache = ResponseCache(tmp_path)
    body = bytes(range(256)) * 4096
    path = tmp_path / "ab" / ("ab" + "0" * 62)
    seen = 0
    while any(writer.poll() is None for writer in writers):
        if path.exists():
            entry = cache.get(path.name)
            assert entry is not None and entry.body == body, "a reader met a torn entry"
            seen += 1
    assert [writer.wait() for writer in writers] == [0, 0]
    entry = cache.get(path.name)
    assert entry is not None and entry.body == body and entry.status == 200
    assert _entries(tmp_path) == [path], "a temporary file was left behind"


def test_run_and_batch_take_cache(fake_server: FakeVendorServer, blocks: engine.BlockRegistry, tmp_path: Path) -> None:
    test_id = uuid.uuid4().hex[:12]
    fake_server.script(test_id, ok("groq"))
    diagram = tmp_path / "ask.yaml"
    diagram.write_text(diagram_yaml("groq", "fail", 5.0), encoding="utf-8")
    env = {**KEYS, ENV["groq"]: fake_server.base(test_id)}
    cache = tmp_path / "cache"
    lines = []
    for _ in range(2):
        outcome = CliRunner().invoke(cli_main, ["run", str(diagram), "--cache", str(cache), "--output", "json",
                                                "--runs-dir", str(tmp_path / "runs")], env=env)
        assert outcome.exit_code == 0, outcome.output
        lines.append([line for line in outcome.output.splitlines() if line.startswith("    llama")])
    assert len(fake_server.hits(test_id)) == 1 and len(_entries(cache)) == 1
    assert [len(found) for found in lines] == [1, 1], lines
    assert "(cached)" not in lines[0][0] and lines[1][0].endswith("(cached)")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("{}\n{}\n{}\n", encoding="utf-8")
    outcome = CliRunner().invoke(cli_main, ["batch", str(diagram), "--inputs", str(rows), "--cache", str(cache),
                                            "--runs-dir", str(tmp_path / "runs")], env=env)
    assert outcome.exit_code == 0, outcome.output
    assert len(fake_server.hits(test_id)) == 1, "the batch called the vendor"


def test_a_response_from_the_cache_says_so(tmp_path: Path) -> None:
    """The client's side alone: an answer kept once is handed back with a note that it came from the cache."""
    calls: list[httpx.Request] = []

    def vendor(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, json={"ok": True})

    async def twice() -> list[bool]:
        from engine.providers.response_cache import CachingClient

        cache = open_cache(tmp_path)
        async with CachingClient(cache, "groq", transport=httpx.MockTransport(vendor)) as client:
            cached = []
            for _ in range(2):
                response = await client.send(client.build_request("POST", "https://x.example/v1", content=b"{}"),
                                             stream=True)
                await response.aread()
                note = response.extensions[CACHE_EXTENSION]
                note.keep()
                cached.append(note.cached)
                assert response.json() == {"ok": True}
            return cached

    assert asyncio.run(twice()) == [False, True] and len(calls) == 1


class _CountedSlots:
    """Vendor slots that count how often a request waited for one (as `--rpm` would make it wait)."""

    def __init__(self) -> None:
        self.taken: list[str] = []

    @contextlib.asynccontextmanager
    async def slot(self, vendor: str) -> AsyncIterator[None]:
        self.taken.append(vendor)
        yield


def test_an_answer_from_the_cache_takes_no_vendor_slot(fake_server: FakeVendorServer, blocks: engine.BlockRegistry,
                                                       tmp_path: Path) -> None:
    robot = Robot(fake_server, blocks, tmp_path, "gemini")
    fake_server.script(robot.test_id, ok("gemini"))
    cache = open_cache(tmp_path / "cache")
    taken = []
    for _ in range(2):
        slots = _CountedSlots()
        result, _ = robot.run(engine.Services(environ=dict(KEYS), response_cache=cache, limits=slots))
        assert result.succeeded, result.errors
        taken.append(slots.taken)
    assert taken == [["gemini"], []] and robot.hits() == 1


def test_http_request_calls_always_go_out(blocks: engine.BlockRegistry, tmp_path: Path) -> None:
    """An HttpRequest may change things on the far side: the cache never answers for it."""
    seen: list[httpx.Request] = []

    def shop(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"id": 42, "status": "shipped"})

    path = tmp_path / "http.yaml"
    path.write_text(textwrap.dedent("""\
        diagram: http
        allowed_hosts: [api.shop.test]
        blocks:
          - id: start
            type: Start
            next: call
          - id: call
            type: HttpRequest
            with: {url: "https://api.shop.test/orders/42"}
            set: {status: "{{ json.status }}"}
    """), encoding="utf-8")
    diagram = engine.load(path, blocks)
    cache = open_cache(tmp_path / "cache")
    for _ in range(2):
        services = engine.Services(environ={}, transports={"http": httpx.MockTransport(shop)}, response_cache=cache)
        result = asyncio.run(engine.run_async(diagram, {}, registry=blocks, runs_dir=tmp_path / "runs",
                                              services=services))
        assert result.succeeded and result.variables["status"] == "shipped", result.errors
    assert len(seen) == 2 and _entries(cache.folder) == []


def test_clear_removes_every_entry(tmp_path: Path) -> None:
    cache = open_cache(tmp_path / "cache")
    for index in range(3):
        assert cache.put(f"{index:02x}" + "0" * 62, Entry(200, [], b"{}"), [])
    assert cache.clear() == 3 and _entries(cache.folder) == [] and cache.folder.is_dir()


def test_an_answer_from_the_cache_is_told_to_open_telemetry() -> None:
    from engine.runs.otel_genai import chat_attributes

    event = {"vendor": "groq", "model": "m", "usage": {"input_tokens": 3, "output_tokens": 2}, "finish": "stop"}
    assert "diagrama.cached" not in chat_attributes(event)
    assert chat_attributes({**event, "cached": True})["diagrama.cached"] is True
