"""The same faults reached through the vendors' `*_BASE_URL` variables (README, "Request blocks").

Each run here has its own Services (its own environment), as `diagrama run` would.
"""

from __future__ import annotations

import pytest

from tests.reliability.conftest import Run, assert_error, assert_success
from tests.reliability.fakevendor import ANSWER, PATHS, Reply, error_body, ok
from tests.reliability.faults import VENDORS


@pytest.mark.parametrize("vendor", VENDORS)
def test_rate_limit_then_success_through_the_environment(run_fault: Run, vendor: str) -> None:
    outcome = run_fault(vendor, "handle", [Reply(429, error_body(vendor, 429), {"retry-after-ms": "100"}), ok(vendor)],
                        via_environment=True)
    assert_success(outcome, ANSWER)
    assert outcome.attempts == 2
    assert [hit.path for hit in outcome.hits] == [PATHS[vendor]] * 2


@pytest.mark.parametrize("vendor", VENDORS)
def test_server_error_until_attempts_run_out_through_the_environment(run_fault: Run, vendor: str) -> None:
    outcome = run_fault(vendor, "fail", [Reply(500, error_body(vendor, 500), {"retry-after-ms": "10"})],
                        via_environment=True)
    assert_error(outcome, "provider_error")
    assert outcome.attempts >= 3


def test_gemini_v1beta_overloaded_then_success(run_fault: Run) -> None:
    outcome = run_fault("gemini", "handle", [Reply(503, error_body("gemini", 503), {"retry-after-ms": "50"}),
                                             ok("gemini")], extra="      api_version: v1beta\n")
    assert_success(outcome, ANSWER)
    assert [hit.path for hit in outcome.hits] == [PATHS["gemini"].replace("/v1/", "/v1beta/")] * 2
