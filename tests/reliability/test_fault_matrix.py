"""Every fault × every error level: the run's status, the error type, attempts, wall time, the trace.

Which combinations run (to stay fast on a 2-core machine):

- ClaudeRequest: every fault. A fault that ends in an error runs at all three levels
  (Ignore; Handle with on_error; Handle without on_error). A fault the block recovers
  from runs once, with an on_error handler in place: a spurious error would show as a
  detour to the handler, and the level cannot matter when nothing fails.
- GroqChatRequest and GeminiRequest: the retry faults and the body-shape faults (where the
  vendor's wire format, error body or hints matter), each error fault at one level,
  taken in turn (the levels are the executor's, the same for every block), so that
  every level meets every vendor.
"""

from __future__ import annotations

import re

import pytest

from tests.reliability.conftest import (
    LEVELS,
    FaultRunner,
    Outcome,
    Run,
    assert_attempts_traced,
    assert_error,
    assert_success,
)
from tests.reliability.fakevendor import ANSWER, vendor_error_type
from tests.reliability.faults import BODY, FAULTS, RETRY, TRANSPORT, VENDORS, Fault

pytestmark = pytest.mark.slow  # every fault against a real loopback server


def _levels(vendor: str, fault: Fault) -> tuple[str, ...]:
    if fault.error is None:
        return ("handle",)
    if vendor == "anthropic":
        return LEVELS
    turn = FAULTS.index(fault) + VENDORS.index(vendor)
    return (LEVELS[turn % len(LEVELS)],)


COMBINATIONS = [
    (vendor, fault, level)
    for fault in FAULTS
    for vendor in fault.vendors
    if vendor == "anthropic" or fault.tags & (RETRY | BODY)
    for level in _levels(vendor, fault)
]


def _key(vendor: str, fault: Fault, level: str) -> str:
    return f"{vendor}-{fault.name}-{level}"


def _waits(fault: Fault) -> bool:
    """Mostly waiting (a timeout, a backoff, a hint) and light on CPU: run side by side with the others."""
    return fault.slow and not fault.name.startswith("oversized")


@pytest.fixture(scope="module")
def waiting_outcomes(fault_runner: FaultRunner) -> dict[str, Outcome | BaseException]:
    """Every waiting combination, run once, side by side (each timed on its own)."""
    return fault_runner.run_all({
        _key(vendor, fault, level): (vendor, level, fault.steps(vendor), {"timeout": fault.timeout})
        for vendor, fault, level in COMBINATIONS if _waits(fault)
    })


@pytest.mark.parametrize(("vendor", "fault", "level"),
                         [pytest.param(*combination, id=_key(*combination)) for combination in COMBINATIONS])
def test_fault(request: pytest.FixtureRequest, run_fault: Run, vendor: str, fault: Fault, level: str) -> None:
    if _waits(fault):
        outcome = request.getfixturevalue("waiting_outcomes")[_key(vendor, fault, level)]
        if isinstance(outcome, BaseException):
            raise outcome
    else:
        outcome = run_fault(vendor, level, fault.steps(vendor), timeout=fault.timeout)
    check(outcome, fault)


def check(outcome: Outcome, fault: Fault) -> None:
    why = outcome.explain()
    if fault.error is None:
        assert_success(outcome, ANSWER)
        made = outcome.attempts
    else:
        error = assert_error(outcome, fault.error)
        made = assert_attempts_traced(outcome)
        message = error["message"]
        if fault.error == "block_timeout":
            # docs/VENDORS.md, Retries: "a timeout error that names it and the limit"
            assert "ask" in message and f"{fault.timeout:g}" in message, message
        if fault.vendor_status is not None:
            # docs/VENDORS.md, Retries: other 4xx "fail at once with the vendor's error type and message"
            assert vendor_error_type(outcome.vendor, fault.vendor_status) in message, message
            assert "scripted failure" in message, message
    if fault.attempts is not None:
        assert outcome.attempts == fault.attempts, why
    assert made >= fault.min_attempts, why
    assert all(hit.vendor == outcome.vendor for hit in outcome.hits), [h.path for h in outcome.hits]
    if fault.hint is not None:
        waits = [event["wait_s"] for event in outcome.of("provider_retried")]
        assert waits == [pytest.approx(fault.hint, abs=0.01)], f"waits {waits}, the vendor asked for {fault.hint}"
        assert outcome.wall >= fault.hint * 0.95, why
    if fault.error == "block_timeout" and fault.attempts == 1 and fault.tags & TRANSPORT:
        # One attempt that hangs: the block waits its whole timeout, not less.
        assert outcome.wall >= fault.timeout * 0.9, why
        assert re.search(r"timed out|timeout", outcome.result.errors[0]["message"]), why
