"""A keys file that is no UTF-8 text, and limits that are no number of requests (`nan`, `inf`, negative), are refused
before the server serves, naming the file, the line and what is wrong: never a traceback, never a key without a limit
(security review, finding B)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from engine.cli import app as cli
from engine.errors import UsageError
from engine.web.service.keys import ApiKey, LocalRateLimits, keys_from_file
from tests.api.conftest import free_port

DIGEST = f"sha256:{'a' * 64}"
ROOT = Path(__file__).resolve().parents[2]


def test_a_keys_file_that_is_not_utf8_is_a_usage_error_naming_the_file_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_bytes(b"# the callers\n" + f"alice {DIGEST}\n".encode() + b"b\xf6b " + DIGEST.encode() + b"\n")
    with pytest.raises(UsageError) as raised:
        keys_from_file(path)
    said = str(raised.value)
    assert said.startswith(f"{path}:3:") and "UTF-8" in said and "0xf6" in said


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "infinity", "1e400", "-5", "0", "-0"])
def test_a_keys_file_rpm_that_is_no_finite_positive_number_is_refused_naming_file_line_and_value(
        tmp_path: Path, value: str) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# ok\nalice {DIGEST} rpm={value}\n")
    with pytest.raises(UsageError) as raised:
        keys_from_file(path)
    said = str(raised.value)
    assert said.startswith(f"{path}:2:") and f"rpm={value}" in said


def test_a_keys_file_rpm_that_is_a_finite_positive_number_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"alice {DIGEST} rpm=0.5\nbob sha256:{'b' * 64} rpm=1200\n")
    assert [key.rpm for key in keys_from_file(path)] == [0.5, 1200.0]


def test_a_key_and_the_rate_limiter_take_no_limit_that_is_not_finite() -> None:
    with pytest.raises(ValueError, match="rate limit"):
        ApiKey("alice", b"\0" * 32, float("nan"))

    async def go() -> None:
        await LocalRateLimits().take("alice", float("nan"))

    with pytest.raises(ValueError, match="nan"):
        asyncio.run(go())


@pytest.mark.parametrize("rpm", [float("nan"), float("inf"), -1.0])
def test_the_app_refuses_a_server_rpm_that_is_no_finite_number_at_least_0(make_app: Callable[..., Any],
                                                                        rpm: float) -> None:
    with pytest.raises(UsageError, match="rpm"):
        make_app(rpm=rpm)


def test_a_server_rpm_of_0_is_no_limit_and_a_finite_one_limits(make_app: Callable[..., Any],
                                                               client: Callable[..., httpx.AsyncClient]) -> None:
    async def statuses(app: Any) -> list[int]:
        async with client(app) as caller:
            return [(await caller.get("/v1/robots")).status_code for _ in range(4)]

    assert asyncio.run(statuses(make_app(rpm=0))) == [200] * 4
    assert asyncio.run(statuses(make_app(rpm=2))) == [200, 200, 429, 429]


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_the_api_commands_rpm_is_a_finite_number_at_least_0(robots_dir: Path, value: str) -> None:
    result = CliRunner().invoke(cli, ["api", str(robots_dir), "--rpm", value, "--port", str(free_port())],
                                env={"DIAGRAMA_API_KEYS": ""})
    assert result.exit_code == 2, result.output
    assert "--rpm" in result.output and "Traceback" not in result.output


@pytest.mark.slow
@pytest.mark.parametrize(("content", "said"), [
    (b"b\xf6b " + DIGEST.encode() + b"\n", "UTF-8"),
    (f"alice {DIGEST} rpm=nan\n".encode(), "rpm=nan"),
    (f"alice {DIGEST} rpm=inf\n".encode(), "rpm=inf"),
])
def test_diagrama_api_with_a_bad_keys_file_exits_2_with_one_line_and_no_traceback(
        robots_dir: Path, tmp_path: Path, content: bytes, said: str) -> None:
    keys = tmp_path / "keys"
    keys.write_bytes(content)
    # A timeout: a server that took the file would serve until killed.
    done = subprocess.run([sys.executable, "-m", "engine.cli", "api", str(robots_dir), "--keys-file", str(keys),
                           "--port", str(free_port()), "--runs-dir", str(tmp_path / "runs"), "--offline"],
                          capture_output=True, text=True, check=False, cwd=ROOT, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "DIAGRAMA_API_KEYS": "", "COLUMNS": "400"})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(keys) in lines[0] and said in lines[0]
