"""Who may call the robots: no key, a wrong key and a right one; the per-key limit; the keys file; refusing to start
without keys."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from engine.cli import app as cli
from engine.errors import UsageError
from engine.web.service.keys import KeyRing, keys_from_environ, keys_from_file, new_key
from tests.api.conftest import AUTH, KEY, OTHER_KEY


def test_a_request_without_a_key_or_with_a_wrong_one_is_refused_and_a_right_one_answered(
        client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> list[httpx.Response]:
        async with client(**{"X-Nothing": "1"}) as anonymous:
            none = await anonymous.get("/v1/robots")
            wrong = await anonymous.get("/v1/robots", headers={"Authorization": f"Bearer {KEY}x"})
            basic = await anonymous.get("/v1/robots", headers={"Authorization": f"Basic {KEY}"})
            right = await anonymous.get("/v1/robots", headers=AUTH)
            other = await anonymous.get("/v1/robots", headers={"Authorization": f"Bearer {OTHER_KEY}"})
        return [none, wrong, basic, right, other]

    none, wrong, basic, right, other = asyncio.run(go())
    for refused in (none, wrong, basic):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert refused.json()["error"].startswith("send a key")
        assert KEY not in refused.text
    assert right.status_code == 200 and other.status_code == 200
    assert "counter" in [robot["name"] for robot in right.json()["robots"]]


def test_the_openapi_document_needs_no_key(client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> httpx.Response:
        async with client(**{"X-Nothing": "1"}) as anonymous:
            return await anonymous.get("/openapi.json")

    answered = asyncio.run(go())
    assert answered.status_code == 200 and answered.json()["openapi"].startswith("3.1")


def test_past_its_requests_a_minute_a_key_gets_429_with_retry_after_and_other_keys_do_not(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app(rpm=3)

    async def go() -> tuple[list[int], httpx.Response, int]:
        async with client(app) as caller:
            statuses = [(await caller.get("/v1/robots")).status_code for _ in range(3)]
            refused = await caller.get("/v1/robots")
            other = await caller.get("/v1/robots", headers={"Authorization": f"Bearer {OTHER_KEY}"})
        return statuses, refused, other.status_code

    statuses, refused, other = asyncio.run(go())
    assert statuses == [200, 200, 200]
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1  # a token comes back after 20 s at 3 a minute
    assert "'ci'" in refused.json()["error"]
    assert other == 200


def test_the_keys_file_holds_digests_with_ids_and_own_limits(tmp_path: Path) -> None:
    key, line = new_key("alice")
    assert line == f"alice sha256:{hashlib.sha256(key.encode()).hexdigest()}"
    assert key not in line
    (tmp_path / "keys").write_text(f"# the callers\n{line} rpm=5\nbob sha256:{'0' * 64}\n")
    keys = keys_from_file(tmp_path / "keys")
    assert [(k.key_id, k.rpm) for k in keys] == [("alice", 5.0), ("bob", None)]
    ring = KeyRing(keys)
    found = ring.identify(key)
    assert found is not None and found.key_id == "alice"
    assert ring.identify(key + "x") is None


@pytest.mark.parametrize(("text", "said"), [
    ("alice dgk_thisisaplainkeynotadigest\n", "never the key itself"),
    ("alice sha256:abc\n", "never the key itself"),
    ("alice\n", "ID sha256:HEX"),
    (f"alice sha256:{'a' * 64} rpm=fast\n", "rpm=N"),
])
def test_a_bad_keys_file_line_is_named_by_file_and_line(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "keys"
    path.write_text("# ok\n" + text)
    with pytest.raises(UsageError) as raised:
        keys_from_file(path)
    assert f"{path}:2:" in str(raised.value) and said in str(raised.value)
    assert "dgk_thisisaplainkeynotadigest" not in str(raised.value)


def test_keys_from_the_environment_get_ids_and_short_ones_are_refused() -> None:
    keys, plain = keys_from_environ({"DIAGRAMA_API_KEYS": f"ci={KEY}, {OTHER_KEY}"})
    assert keys[0].key_id == "ci" and keys[1].key_id.startswith("key-") and plain == [KEY, OTHER_KEY]
    with pytest.raises(UsageError, match="shorter than 16"):
        keys_from_environ({"DIAGRAMA_API_KEYS": "ci=short"})


def test_the_app_refuses_to_start_without_keys_unless_no_auth(make_app: Callable[..., Any]) -> None:
    with pytest.raises(UsageError, match="no API keys"):
        make_app(environ={})
    assert make_app(environ={}, no_auth=True) is not None


def test_no_auth_is_refused_on_a_network_address(robots_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["api", str(robots_dir), "--no-auth", "--host", "0.0.0.0"],
                                env={"DIAGRAMA_API_KEYS": ""})
    assert result.exit_code == 2
    assert "--no-auth serves only a loopback address" in result.output


def test_api_key_prints_a_key_and_the_line_to_keep(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["api-key", "ci-bot"])
    assert result.exit_code == 0
    key = result.output.split("key: ", 1)[1].split()[0]
    line = result.output.split("keys-file line: ", 1)[1].strip()
    (tmp_path / "keys").write_text(line + "\n")
    found = KeyRing(keys_from_file(tmp_path / "keys")).identify(key)
    assert found is not None and found.key_id == "ci-bot"
