"""A diagram's `secrets:` never leave a run: HttpRequest sends a secret to a loopback server that echoes it
back in every form (a header, a query value, JSON text, an error body), and real `diagrama` processes must
then keep it out of their JSON and text output, the trace, `diagrama trace` and `runs`, batch results, the
run store's files and a failing scenario's report. The secret's name is no key's (`SHOP_CREDENTIAL`), so
only its listing in `secrets:` can tell the redactor about it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECRET = 'cred/ential+"value" &more-5be1'
PASSWORD = "pa ss+w0rd!x9Qé"
"""A second secret, sent where httpx spells it its own way: in a URL's path (`pa%20ss+w0rd!x9Q%C3%A9`: `+` and
`!` left as they are) and as a URL's password, which becomes a Basic credential (base64 of `robot:<password>`)."""


class _Echo(BaseHTTPRequestHandler):
    """Echoes what it got; `/denied` answers 401 with the credential quoted in the error body."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
        answer = {"path": self.path, "credential": self.headers.get("x-credential"), "body": body,
                  "authorization": self.headers.get("authorization")}
        status = 401 if self.path.startswith("/denied") else 200
        if status == 401:
            answer = {"error": f"credential {self.headers.get('x-credential')} is not valid"}
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


DIAGRAM = """\
diagram: credential
allowed_hosts: [127.0.0.1]
secrets: [SHOP_CREDENTIAL, SHOP_PASSWORD]
blocks:
  - id: start
    type: Start
    message_level: Detailed
    inputs: {base: ""}
    next: send
  - id: send
    type: HttpRequest
    with:
      method: POST
      url: "{{ base }}/orders"
      query: {credential: "{{ secret('SHOP_CREDENTIAL') }}"}
      headers: {X-Credential: "{{ secret('SHOP_CREDENTIAL') }}"}
      json: {credential: "{{ secret('SHOP_CREDENTIAL') }}"}
    set: {echoed: "{{ json }}", raw: "{{ text }}", mine: "{{ secret('SHOP_CREDENTIAL') }}"}
    next: login
  - id: login
    type: HttpRequest
    with:
      method: POST
      url: "{{ base | replace('http://', 'http://robot:' ~ secret('SHOP_PASSWORD') ~ '@') }}/login/{{ secret('SHOP_PASSWORD') }}"
    set: {login: "{{ json }}"}
    next: denied
  - id: denied
    type: HttpRequest
    with:
      method: POST
      url: "{{ base }}/denied"
      headers: {X-Credential: "{{ secret('SHOP_CREDENTIAL') }}"}
"""

SCENARIO = f"""\
scenario: the credential is echoed and the expectations are wrong
diagram: credential.yaml
inputs: {{base: "http://127.0.0.1:9"}}
secrets: {{SHOP_CREDENTIAL: {json.dumps(SECRET)}, SHOP_PASSWORD: {json.dumps(PASSWORD)}}}
replies:
  send: [{{status: 200, json: {{credential: {json.dumps(SECRET)}}}}}]
  login: [{{status: 200, json: {{path: {json.dumps("/login/" + quote(PASSWORD, safe="!+"))}}}}}]
  denied: [{{status: 401, json: {{error: {json.dumps("bad " + SECRET)}}}}}]
expect:
  status: succeeded
  variables: {{echoed: "something else"}}
  http_requests: [{{block: send, method: GET}}]
"""


def forms() -> dict[str, str]:
    """The secrets as they could leak: whole, escaped in JSON (once and twice), percent-encoded, a piece of each,
    the password as httpx writes it in a path, and the middle of its Basic credential's base64."""
    escaped = json.dumps(SECRET)[1:-1]
    basic = base64.b64encode(f"robot:{PASSWORD}".encode()).decode()
    return {"whole": SECRET, "JSON-escaped": escaped, "JSON-escaped twice": json.dumps(escaped)[1:-1],
            "query-encoded": quote_plus(SECRET), "path-encoded": quote(SECRET, safe=""), "middle": "ential+\"value",
            "password": PASSWORD, "password in a path": quote(PASSWORD, safe="!+"), "password's middle": "ss+w0rd!x9",
            "password path-encoded": quote(PASSWORD, safe=""), "password in Basic": basic[4:-4]}


def diagrama(folder: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=folder, env=env)
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


@pytest.mark.slow
def test_no_secret_reaches_any_output(tmp_path: Path, echo_server: str) -> None:
    (tmp_path / "credential.yaml").write_text(DIAGRAM, encoding="utf-8")
    (tmp_path / "credential.scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "rows.csv").write_text(f"base\n{echo_server}\n{echo_server}\n", encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name != "DIAGRAMA_STORE"}
    env.update({"SHOP_CREDENTIAL": SECRET, "SHOP_PASSWORD": PASSWORD, "PYTHONPATH": str(ROOT)})
    runs = str(tmp_path / "runs")
    base = ["-i", f"base={echo_server}"]
    commands = {
        "run --output json": ("run", "credential.yaml", *base, "--runs-dir", runs, "--output", "json"),
        "run (text)": ("run", "credential.yaml", *base, "--runs-dir", runs),
        "batch (jsonl)": ("batch", "credential.yaml", "--inputs", "rows.csv", "--runs-dir", runs, "--output",
                          "results.jsonl", "--collect", "echoed,raw,mine"),
        "diagrama test (failing scenario)": ("test", "credential.scenario.yaml", "--runs-dir", runs),
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        surfaces = dict(zip(commands, pool.map(lambda args: diagrama(tmp_path, env, *args), commands.values()),
                            strict=True))
    as_json = surfaces["run --output json"]
    run_id = as_json.split('"run_id":"', 1)[1].split('"', 1)[0]
    for name, args in {"diagrama runs": ("runs", "--runs-dir", runs),
                       "diagrama trace": ("trace", run_id, "--runs-dir", runs, "--show-payloads"),
                       "diagrama trace --json": ("trace", run_id, "--runs-dir", runs, "--json")}.items():
        surfaces[name] = diagrama(tmp_path, env, *args)
    surfaces["results.jsonl"] = (tmp_path / "results.jsonl").read_text()
    for path in sorted(Path(runs).rglob("*")):  # traces, and the run store with its WAL
        if path.is_file():
            surfaces[f"file {path.relative_to(runs)}"] = path.read_bytes().decode("utf-8", "replace")

    # The server was reached and echoed, the runs went as planned: the checks below are not vacuous.
    assert '"status":"failed"' in as_json and "http_error" in as_json and "exit 1" in as_json, as_json
    assert "FAIL" in surfaces["diagrama test (failing scenario)"], surfaces["diagrama test (failing scenario)"]
    assert "answered 401" in surfaces["run (text)"] and "http_called" in surfaces["diagrama trace --json"]
    assert '"authorization":"Basic [REDACTED]"' in surfaces["diagrama trace"], surfaces["diagrama trace"]
    leaks = [f"{surface}: {what}" for surface, text in surfaces.items() for what, value in forms().items()
             if value in text]
    assert not leaks, "the secret left the run:\n" + "\n".join(leaks)
    for surface in ("run --output json", "diagrama test (failing scenario)", "results.jsonl", "diagrama trace"):
        assert "[REDACTED]" in surfaces[surface], surfaces[surface]
