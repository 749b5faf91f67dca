"""`callback_url`: a run's answer POSTed to a real receiver on a loopback port when it ends, signed with the
server's secret over the timestamp and the exact body, tried again on a dropped connection or a 5xx; refused at
request time for a host off the allow-list (however its address is written) or without a secret."""

from __future__ import annotations

import hashlib
import hmac
import re
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.errors import UsageError
from engine.web.service.callbacks import TRIES
from tests.api.conftest import AUTH, GATES, Served
from tests.api.test_durable_api import add_durable_robots

SECRET = "callback-secret-0123456789"


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A loopback HTTP server: what it was sent, and how it answers each request to a path, in turn (a status, or
    `drop` to close the connection unanswered); past its list, 200."""

    port: int
    script: dict[str, list[int | str]] = field(default_factory=dict)
    deliveries: list[Delivery] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, count: int, path: str) -> list[Delivery]:
        """The deliveries to `path`, once there are `count` (30 s at most: the test fails then, not hangs)."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.to(path)) >= count, timeout=30)
        return self.to(path)

    def to(self, path: str) -> list[Delivery]:
        return [d for d in self.deliveries if d.path == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            with found.arrived:
                found.deliveries.append(Delivery(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                script = found.script.get(self.path, [])
                action = script.pop(0) if script else 200
                found.arrived.notify_all()
            if action == "drop":
                self.close_connection = True
                self.connection.close()
                return
            self.send_response(int(action))
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield found
    server.shutdown()
    server.server_close()


def _verified(delivery: Delivery) -> bool:
    """The signature as a receiver checks it: HMAC-SHA256 over `TIMESTAMP.BODY`, compared in constant time."""
    timestamp = delivery.headers["x-diagrama-timestamp"]
    expected = hmac.new(SECRET.encode(), timestamp.encode() + b"." + delivery.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(delivery.headers["x-diagrama-signature"], f"sha256={expected}")


def test_a_run_that_ends_is_posted_to_its_callback_signed(make_app: Callable[..., Any], serve: Callable[..., Served],
                                                          receiver: Receiver) -> None:
    served = serve(make_app(callback_secret=SECRET, callback_hosts=(f"127.0.0.1:{receiver.port}",)))
    url = f"http://127.0.0.1:{receiver.port}/hooks/done?ticket=7"
    ran = httpx.post(f"{served.url}/v1/robots/counter/runs", json={"callback_url": url}, headers=AUTH, timeout=30)
    [delivery] = receiver.wait_for(1, "/hooks/done?ticket=7")
    assert ran.status_code == 200
    answered = httpx.get(f"{served.url}/v1/runs/{ran.json()['run_id']}", headers=AUTH)
    assert delivery.body == answered.content  # the same JSON as GET /v1/runs/{id}, byte for byte
    assert delivery.headers["content-type"] == "application/json"
    assert delivery.headers["x-diagrama-run-id"] == ran.json()["run_id"]
    assert delivery.headers["x-diagrama-timestamp"].isdigit()
    assert _verified(delivery)
    tampered = Delivery(delivery.path, delivery.headers, delivery.body.replace(b"succeeded", b"failed"))
    assert not _verified(tampered)
    assert SECRET not in delivery.headers.values() and SECRET.encode() not in delivery.body


@pytest.mark.slow
def test_a_dropped_connection_and_5xx_answers_are_tried_again_without_holding_the_run(
        make_app: Callable[..., Any], serve: Callable[..., Served], receiver: Receiver) -> None:
    served = serve(make_app(callback_secret=SECRET, callback_hosts=(f"127.0.0.1:{receiver.port}",)))
    receiver.script = {"/flaky": [503, "drop", 502], "/down": [503] * TRIES}
    base = f"http://127.0.0.1:{receiver.port}"
    flaky = httpx.post(f"{served.url}/v1/robots/echoer/runs", json={"callback_url": f"{base}/flaky"}, headers=AUTH,
                       timeout=30)
    down = httpx.post(f"{served.url}/v1/robots/echoer/runs", json={"callback_url": f"{base}/down", "wait": False},
                      headers=AUTH, timeout=30)
    # Both answered before any callback was through (the first try of each is refused): the runs never wait on them.
    assert flaky.json()["status"] == "succeeded" and down.status_code == 202
    tries = receiver.wait_for(4, "/flaky")
    assert len(tries) == 4 and all(_verified(t) for t in tries)
    assert {t.body for t in tries} == {httpx.get(f"{served.url}/v1/runs/{flaky.json()['run_id']}", headers=AUTH).content}
    given_up = receiver.wait_for(TRIES, "/down")
    assert len(given_up) == TRIES and all(_verified(t) for t in given_up)


def test_a_waiting_run_is_called_back_and_again_when_its_resume_ends(
        make_app: Callable[..., Any], robots_dir: Path, serve: Callable[..., Served], receiver: Receiver) -> None:
    add_durable_robots(robots_dir)
    served = serve(make_app(callback_secret=SECRET, callback_hosts=(f"127.0.0.1:{receiver.port}",)))
    base = f"http://127.0.0.1:{receiver.port}"
    asked = httpx.post(f"{served.url}/v1/robots/approve/runs", json={"callback_url": f"{base}/asked", "wait": False},
                       headers=AUTH, timeout=30).json()
    [waiting] = receiver.wait_for(1, "/asked")
    assert httpx.Response(200, content=waiting.body).json()["status"] == "waiting"
    assert httpx.Response(200, content=waiting.body).json()["waiting"]["block"] == "ask"
    resumed = httpx.post(f"{served.url}/v1/runs/{asked['run_id']}/resume",
                         json={"answer": {"approved": True}, "callback_url": f"{base}/answered"}, headers=AUTH,
                         timeout=30)
    [done] = receiver.wait_for(1, "/answered")
    assert resumed.json()["status"] == "succeeded"
    assert httpx.Response(200, content=done.body).json()["status"] == "succeeded" and _verified(done)


@pytest.mark.slow
def test_a_callback_url_the_server_cannot_call_is_refused_naming_it(make_app: Callable[..., Any],
                                                                    serve: Callable[..., Served]) -> None:
    GATES.clear()
    served = serve(make_app(callback_secret=SECRET, callback_hosts=("127.0.0.1:9", "localhost:9", "*.hooks.example")))
    unsigned = serve(make_app())
    refused = {url: httpx.post(f"{served.url}/v1/robots/echoer/runs", json={"callback_url": url}, headers=AUTH)
               for url in ("http://127.0.0.1:10/x",       # another port
                           "http://2130706433:9/x",       # 127.0.0.1 as one number
                           "http://127.1:9/x",            # ... with its zeros left out
                           "http://0x7f.0.0.1:9/x",       # ... in hexadecimal
                           "http://[::ffff:127.0.0.1]:9/x",  # ... as IPv6
                           "http://127.0.0.1:9@evil.example/x",  # a user name that reads as the host
                           "http://hooks.example/x",      # the wildcard's own domain is not its subdomain
                           "ftp://127.0.0.1:9/x", "not a url", "http://")}
    for url, answer in refused.items():
        assert answer.status_code == 400, url
        assert answer.json()["error"] == "callback_url cannot be called back", url
        assert len(answer.json()["problems"]) == 1 and answer.json()["problems"][0].startswith("callback_url: "), url
    assert "is not one this server calls back" in refused["http://2130706433:9/x"].json()["problems"][0]
    allowed = httpx.post(f"{served.url}/v1/robots/echoer/runs", json={"callback_url": "http://localhost:9/x"},
                         headers=AUTH)
    assert allowed.status_code == 200  # nothing listens there: its delivery fails on its own, later; the run is not held
    no_secret = httpx.post(f"{unsigned.url}/v1/robots/echoer/runs", json={"callback_url": "http://127.0.0.1:9/x"},
                           headers=AUTH)
    assert no_secret.status_code == 400
    assert "no callback secret" in no_secret.json()["problems"][0]


def test_a_short_secret_or_a_host_that_is_no_host_stops_the_server_at_its_start(make_app: Callable[..., Any]) -> None:
    with pytest.raises(UsageError, match="--callback-secret is shorter than 16 characters"):
        make_app(callback_secret="short")
    with pytest.raises(UsageError, match="DIAGRAMA_CALLBACK_SECRET is shorter"):
        make_app(environ={"DIAGRAMA_API_KEYS": "ci=dgk_test-key-0123456789abcdef", "DIAGRAMA_CALLBACK_SECRET": "x"})
    with pytest.raises(UsageError, match=re.escape("--callback-host: 'https://hooks.example' is a URL")):
        make_app(callback_secret=SECRET, callback_hosts=("https://hooks.example",))
    with pytest.raises(UsageError, match=re.escape("DIAGRAMA_CALLBACK_HOSTS: '*': a wildcard is only")):
        make_app(environ={"DIAGRAMA_API_KEYS": "ci=dgk_test-key-0123456789abcdef",
                          "DIAGRAMA_CALLBACK_HOSTS": "hooks.example, *"})


def test_a_callback_names_no_server_folder_to_a_key_that_is_not_an_admins(
        make_app: Callable[..., Any], serve: Callable[..., Served], receiver: Receiver, robots_dir: Path) -> None:
    from tests.api.test_shown import LEAKY, LEAKY_CODE

    (robots_dir / "leaky.yaml").write_text(textwrap.dedent(LEAKY).lstrip())
    (robots_dir / "shown_leaky_fns.py").write_text(LEAKY_CODE)
    served = serve(make_app(callback_secret=SECRET, callback_hosts=(f"127.0.0.1:{receiver.port}",)))
    ran = httpx.post(f"{served.url}/v1/robots/leaky/runs", headers=AUTH, timeout=30,
                     json={"callback_url": f"http://127.0.0.1:{receiver.port}/leaky"})
    [delivery] = receiver.wait_for(1, "/leaky")
    assert ran.json()["status"] == "failed" and str(robots_dir) not in ran.text
    assert delivery.body == httpx.get(f"{served.url}/v1/runs/{ran.json()['run_id']}", headers=AUTH).content
    assert str(robots_dir).encode() not in delivery.body and b"cannot read data/prices.csv" in delivery.body


def test_diagrama_api_refuses_a_callback_option_that_cannot_serve(robots_dir: Path) -> None:
    from click.testing import CliRunner

    from engine.cli import app

    short = CliRunner().invoke(app, ["api", str(robots_dir), "--no-auth", "--callback-secret", "tiny"],
                               env={"DIAGRAMA_API_KEYS": ""})
    no_host = CliRunner().invoke(app, ["api", str(robots_dir), "--no-auth", "--callback-secret", SECRET,
                                       "--callback-host", "*"], env={"DIAGRAMA_API_KEYS": ""})
    assert short.exit_code == 2 and "--callback-secret is shorter than 16 characters" in short.stderr, short.output
    assert "tiny" not in short.output  # the secret itself is never shown
    assert no_host.exit_code == 2 and "--callback-host: '*': a wildcard is only" in no_host.stderr, no_host.output
