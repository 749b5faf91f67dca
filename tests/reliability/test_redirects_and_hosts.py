"""Redirects and unreachable hosts: the block must not follow a vendor to another host, nor hang.

A 302/307 to another host would carry the request — and, for 307, the key header
(`x-api-key`, `x-goog-api-key`) with the body — somewhere the user never configured.
The sane outcome is a failed call with a provider error naming the status, after one
attempt, with the other host never reached.
"""

from __future__ import annotations

import uuid

import pytest

from tests.reliability.conftest import LEVELS, Run, assert_attempts_traced, assert_error
from tests.reliability.fakevendor import PATHS, FakeVendorServer, Reply, error_body, ok
from tests.reliability.faults import VENDORS, free_port

CROSS_HOST = [
    *(pytest.param(vendor, status, "fail", id=f"{vendor}-{status}-fail") for vendor in VENDORS for status in (302, 307)),
    *(pytest.param("anthropic", 302, level, id=f"anthropic-302-{level}") for level in LEVELS if level != "fail"),
]


@pytest.mark.parametrize(("vendor", "status", "level"), CROSS_HOST)
def test_redirect_to_another_host_is_not_followed(run_fault: Run, fake_server: FakeVendorServer, vendor: str,
                                                  status: int, level: str) -> None:
    elsewhere = uuid.uuid4().hex[:12]
    fake_server.script(elsewhere, ok(vendor))  # if the block followed, it would "succeed" here
    location = fake_server.base(elsewhere, host="localhost") + PATHS[vendor]
    outcome = run_fault(vendor, level, [Reply(status, error_body(vendor, 400, "moved"), {"location": location})])
    assert fake_server.hits(elsewhere) == [], "the block followed a redirect to another host"
    assert_error(outcome, "provider_error")
    assert outcome.attempts == 1, outcome.explain()
    assert_attempts_traced(outcome)
    assert str(status) in outcome.result.errors[0]["message"]


@pytest.mark.parametrize("vendor", VENDORS)
def test_redirect_loop_on_the_same_host_ends_with_a_provider_error(run_fault: Run, fake_server: FakeVendorServer,
                                                                   vendor: str) -> None:
    test_id = uuid.uuid4().hex[:12]
    location = fake_server.base(test_id) + PATHS[vendor]  # the very URL that was asked
    outcome = run_fault(vendor, "fail", [Reply(302, b"", {"location": location})], test_id=test_id)
    assert_error(outcome, "provider_error")
    assert outcome.attempts == 1, outcome.explain()


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_nothing_listening_is_retried_then_times_out(run_fault: Run, level: str) -> None:
    # Connection refused is a dropped connection: retried with backoff, never past the timeout.
    outcome = run_fault("anthropic", level, [], timeout=1.0, base=f"http://127.0.0.1:{free_port()}")
    assert_error(outcome, "block_timeout")
    retried = outcome.of("provider_retried")
    assert len(retried) >= 1, outcome.explain()
    assert len(outcome.of("http_request")) == len(retried) + 1
