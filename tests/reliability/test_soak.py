"""Memory over time (issue 25): a long-lived studio and a Celery worker under a steady load keep their size.

Sized for CI; `python -m benchmarks.soak` runs the full soak (2,000 validations and 500 runs, 1,000 rows). Before
the fix, the loader's gc.freeze() put every earlier piece of garbage where no collection reaches it: 400
validations and 100 runs grew a studio by 128 MiB.
"""

from __future__ import annotations

import shutil

import pytest

from benchmarks.soak import MiB, studio_soak, worker_soak

pytestmark = pytest.mark.slow  # soaks: thousands of runs against one process


def test_a_studio_keeps_its_size_over_validations_and_runs() -> None:
    figures = studio_soak(validations=300, runs=60, warm=(60, 15))
    assert figures["runs"] == {"succeeded": 60}
    growth = (figures["end"] - figures["warm"]) / MiB
    assert growth <= 40, f"the studio grew {growth:.1f} MiB after warm-up ({figures})"


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is absent (apt-get install redis-server)")
def test_a_celery_worker_keeps_its_size_over_rows() -> None:
    figures = worker_soak(rows=200)
    assert figures is not None
    growth = (figures["end"] - figures["warm"]) / MiB
    assert growth <= 40, f"the worker grew {growth:.1f} MiB after warm-up ({figures})"
