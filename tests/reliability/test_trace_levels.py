"""A failing call at the quieter message levels still leaves a complete, valid trace.

README, "A diagram, by example" (message levels): at Release the trace keeps only the run's
start, end, status and errors; Debug adds each block's start and end (and the retries);
Detailed adds the HTTP requests and responses.
"""

from __future__ import annotations

import pytest

from tests.reliability.conftest import LEVELS, Run, assert_error
from tests.reliability.fakevendor import Reply, Stall, error_body


@pytest.mark.parametrize("level", LEVELS)
def test_release_trace_keeps_start_errors_and_end(run_fault: Run, level: str) -> None:
    outcome = run_fault("anthropic", level, [Reply(429, error_body("anthropic", 429), {"retry-after-ms": "10"})],
                        message_level="Release")
    assert_error(outcome, "provider_error")
    assert outcome.attempts >= 3
    assert {event["event"] for event in outcome.events} <= {"run_started", "block_failed", "run_finished"}
    assert not outcome.of("http_request") and not outcome.of("provider_retried")


def test_debug_trace_counts_the_retries_without_http_bodies(run_fault: Run) -> None:
    outcome = run_fault("groq", "fail", [Reply(503, error_body("groq", 503), {"retry-after-ms": "10"})],
                        message_level="Debug")
    assert_error(outcome, "provider_error")
    assert len(outcome.of("provider_retried")) == outcome.attempts - 1 >= 2
    assert not outcome.of("http_request") and not outcome.of("http_response")
    assert next(e["event"] for e in outcome.events if e.get("block") == "ask") == "block_started"


@pytest.mark.slow
def test_release_trace_of_a_timed_out_call(run_fault: Run) -> None:
    outcome = run_fault("gemini", "fail", [Stall()], timeout=1.0, message_level="Release")
    assert_error(outcome, "block_timeout")
    assert outcome.wall >= 0.9
