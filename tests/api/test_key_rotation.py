"""Keys rotated without a restart (issue 38, 4): a real `diagrama api` reads its keys file again on SIGHUP and when the
file changes (looked at on a request, at most once a second); an added key works at once, a removed one is refused
from the next request, a file that no longer reads keeps the keys from before and the log names its file and line;
the keys file's `admin` flag makes an admin key. Keys never reach the log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from structlog.testing import capture_logs

from engine.errors import UsageError
from engine.web.service.keys import ApiKey, digest, keys_from_file, new_key
from engine.web.service.rotation import LiveKeys
from tests.api.conftest import KEY, free_port

ROOT = Path(__file__).resolve().parents[2]
DIGEST = f"sha256:{'a' * 64}"


def _line(key_id: str, key: str, extra: str = "") -> str:
    return f"{key_id} sha256:{digest(key).hex()}{extra}\n"


@pytest.mark.parametrize(("words", "rpm", "admin"), [
    ("", None, False), (" admin", None, True), (" rpm=5 admin", 5.0, True), (" admin rpm=5", 5.0, True),
])
def test_a_keys_file_line_may_flag_an_admin_key(tmp_path: Path, words: str, rpm: float | None, admin: bool) -> None:
    (tmp_path / "keys").write_text(f"alice {DIGEST}{words}\n")
    (found,) = keys_from_file(tmp_path / "keys")
    assert (found.rpm, found.admin) == (rpm, admin)


@pytest.mark.parametrize(("words", "said"), [
    (" admin admin", "each at most once, not 'admin'"),
    (" rpm=1 rpm=2", "each at most once, not 'rpm=2'"),
    (" root", "not 'root'"),
    (" admin rpm=5 extra", "ID sha256:HEX [rpm=N] [admin]"),
])
def test_a_bad_word_after_the_digest_is_named_with_file_and_line(tmp_path: Path, words: str, said: str) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# ok\nalice {DIGEST}{words}\n")
    with pytest.raises(UsageError) as raised:
        keys_from_file(path)
    assert str(raised.value).startswith(f"{path}:2:") and said in str(raised.value)


def test_the_file_is_looked_at_once_a_second_at_most_and_a_bad_one_keeps_the_keys(tmp_path: Path) -> None:
    first, second = new_key("first")[0], new_key("second")[0]
    path = tmp_path / "keys"
    path.write_text(_line("first", first))
    now = [100.0]
    ring = LiveKeys([ApiKey("env", digest(KEY))], path, clock=lambda: now[0])
    path.write_text(_line("second", second))
    assert ring.identify(second) is None  # changed within the second: not looked at yet
    now[0] += 1.0
    assert ring.identify(second) is not None and ring.identify(first) is None  # added works, removed is refused
    assert ring.identify(KEY) is not None  # the environment's keys stay
    path.write_text(_line("second", second) + "third sha256:abc\n")
    now[0] += 1.0
    with capture_logs() as logs:
        assert ring.identify(second) is not None  # the bad file is not taken: the keys from before stay
    (logged,) = logs
    assert logged["event"] == "keys_not_reloaded" and logged["log_level"] == "error"
    assert logged["error"].startswith(f"{path}:2:") and second not in str(logged)


@pytest.fixture
def api_process(tmp_path: Path, robots_dir: Path) -> Iterator[Callable[[Path], tuple[str, subprocess.Popen[bytes], Path]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(keys: Path) -> tuple[str, subprocess.Popen[bytes], Path]:
        port, log = free_port(), tmp_path / "api.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "engine.cli", "api", str(robots_dir), "--keys-file", str(keys), "--port",
                 str(port), "--runs-dir", str(tmp_path / "runs"), "--offline", "--log-format", "json"],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=out,
                env={**os.environ, "DIAGRAMA_API_KEYS": "", "DIAGRAMA_STORE": ""})
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        _until(lambda: _answers(url), process)
        return url, process, log

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=30)


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/openapi.json", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def _until(condition: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, "the server stopped"
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def _logged(log: Path, event: str) -> list[dict[str, object]]:
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines() if line.startswith(b"{")]
    return [line for line in lines if line.get("event") == event]


def _status(url: str, key: str) -> int:
    return httpx.get(f"{url}/v1/robots", headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code


@pytest.mark.slow
def test_a_served_api_takes_new_keys_on_sighup_and_when_the_file_changes(
        api_process: Callable[[Path], tuple[str, subprocess.Popen[bytes], Path]], tmp_path: Path) -> None:
    ana, bea, cy = new_key("ana")[0], new_key("bea")[0], new_key("cy")[0]
    keys = tmp_path / "keys"
    keys.write_text(_line("ana", ana))
    url, process, log = api_process(keys)
    assert (_status(url, ana), _status(url, bea)) == (200, 401)

    def hangup_and_wait(event: str) -> None:
        before = len(_logged(log, event))
        process.send_signal(signal.SIGHUP)
        _until(lambda: len(_logged(log, event)) > before, process)

    keys.write_text(_line("ana", ana) + _line("bea", bea, " admin"))
    hangup_and_wait("keys_reloaded")
    assert _status(url, bea) == 200  # added: works at once
    # bea is an admin key (the file's flag): it sees ana's run, which no other key would.
    run_id = httpx.post(f"{url}/v1/robots/counter/runs", json={}, headers={"Authorization": f"Bearer {ana}"},
                        timeout=30).json()["run_id"]
    assert httpx.get(f"{url}/v1/runs/{run_id}", headers={"Authorization": f"Bearer {bea}"}).status_code == 200

    keys.write_text(_line("ana", ana) + "bea sha256:not-a-digest\n")
    hangup_and_wait("keys_not_reloaded")
    (refused,) = _logged(log, "keys_not_reloaded")
    assert str(refused["error"]).startswith(f"{keys}:2:") and refused["level"] == "error"
    assert (_status(url, ana), _status(url, bea)) == (200, 200)  # the keys from before the bad file

    keys.write_text(_line("ana", ana))
    hangup_and_wait("keys_reloaded")
    assert _status(url, bea) == 401  # removed: refused from the next request

    keys.write_text(_line("ana", ana) + _line("cy", cy))  # no signal: a request finds the file changed
    _until(lambda: _status(url, cy) == 200, process)
    assert process.poll() is None
    text = log.read_text()
    assert ana not in text and bea not in text and cy not in text
