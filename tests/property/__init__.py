"""Property-based tests (Hypothesis): the loader and the template sandbox under hostile input.

Each test takes its settings from `budget()`: the `diagrama-ci` profile (a fixed seed, fixed example
counts) keeps this folder under 30 seconds on a 2-core machine, the same on every run. For a longer,
random search set DIAGRAMA_HYPOTHESIS_PROFILE=diagrama-long.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings

settings.register_profile(
    "diagrama-ci",
    derandomize=True,  # a fixed seed: CI sees the same examples on every run
    database=None,
    max_examples=100,
    deadline=2000,  # milliseconds per example: the time bound the sandbox must keep
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("diagrama-long", settings.get_profile("diagrama-ci"), derandomize=False, max_examples=3000)

PROFILE = os.environ.get("DIAGRAMA_HYPOTHESIS_PROFILE", "diagrama-ci")


def budget(**overrides: Any) -> settings:
    """The profile's settings, with a test's own overrides (a CI example count scales with the profile)."""
    profile = settings.get_profile(PROFILE)
    if "max_examples" in overrides and PROFILE != "diagrama-ci":
        overrides["max_examples"] = profile.max_examples
    return settings(profile, **overrides)
