"""Issue 37's attacks as an attacker runs them: whole `diagrama` processes, their status, wall time and peak memory.

    python -m benchmarks.attacks_round4                  # this checkout
    python -m benchmarks.attacks_round4 --code /tmp/base # another checkout's code (a worktree of an older commit)
    python -m benchmarks.attacks_round4 --only bomb,pattern

Each case writes its diagram (and what it needs: a module, a loopback server) into a temporary folder and runs
`diagrama` on it as its own process under GNU time (peak resident memory), with a limit of `--limit` seconds (a
case past it is reported `killed`, as a hung process is). The figures for the closing note's table:

- `exit`: a Function's `sys.exit(3)` (the waiting code before), a bare `except:` coroutine abandoned (it spun);
- `bomb`: a 1.9 KB `Content-Encoding: gzip, gzip` body that decodes to 1 GiB;
- `secret`: a secret sent in a URL's path and as its password: how many of its spellings the trace keeps;
- `pattern`: a 28-character answer to an e-mail-like form pattern (Python's `re` backtracks on it);
- `async-sleep`: an async def that calls time.sleep(4) with a 1 s timeout and a 2 s run deadline;
- `loops`, `macro`, `regex`: a template's nested loops over input, a macro calling itself twice, regex_replace over
  a megabyte of matches;
- `tree`: a Subdiagram calling itself 10 times a level, 7 levels deep, against a 3 s deadline;
- `damaged`: resuming a run whose last checkpoint was cut in half;
- `redirect`: a redirect whose Location no URL reads.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class _Server(BaseHTTPRequestHandler):
    """`/bomb`: two gzip layers over 1 GiB of zeros; `/redirect`: a Location no URL reads; else an echo of the path
    and the Authorization header."""

    bomb = b""

    def do_GET(self) -> None:
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("location", "http:\\\\evil.example\\x")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if self.path.startswith("/bomb"):
            body, headers = self.bomb, {"content-encoding": "gzip, gzip", "content-type": "application/json"}
        else:
            body = json.dumps({"path": self.path, "authorization": self.headers.get("authorization")}).encode()
            headers = {"content-type": "application/json"}
        self.send_response(200)
        for name, value in {**headers, "content-length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _bomb() -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    inner = b"".join(squeeze.compress(zeros) for _ in range(1024)) + squeeze.flush()
    return gzip.compress(inner, 9)


class Case:
    def __init__(self, folder: Path, code: Path, limit: float, port: int) -> None:
        self.folder, self.code, self.limit, self.port = folder, code, limit, port

    def write(self, name: str, text: str) -> Path:
        path = self.folder / name
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    def diagrama(self, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        environ = {key: value for key, value in os.environ.items() if key != "DIAGRAMA_STORE"}
        environ.update(PYTHONPATH=f"{self.code}{os.pathsep}{self.folder}", **(env or {}))
        command = ["/usr/bin/time", "-f", "maxrss_kib=%M", sys.executable, "-m", "engine.cli", *args]
        began = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.limit, cwd=self.folder,
                                  env=environ)
        except subprocess.TimeoutExpired:
            return {"exit": "killed", "wall_s": round(time.perf_counter() - began, 1)}
        said, _, peak = done.stderr.rstrip().rpartition("maxrss_kib=")
        figure: dict[str, Any] = {"exit": done.returncode, "wall_s": round(time.perf_counter() - began, 2),
                                  "peak_mib": round(int(peak) / 1024) if peak.strip().isdigit() else None}
        if done.stdout.strip().startswith("{"):
            result = json.loads(done.stdout)
            figure["status"] = result.get("status")
            figure["errors"] = [error.get("type") for error in result.get("errors", [])]
            figure["run_id"] = result.get("run_id")
        else:
            lines = [line for line in said.strip().splitlines() if line and not line.startswith("Command exited")]
            if lines:
                figure["said"] = lines[-1][:200]
        return figure

    def run(self, name: str, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        return self.diagrama("run", name, "--output", "json", "-q", "--runs-dir", "runs", *extra, env=env)


def _exit(case: Case) -> dict[str, Any]:
    case.write("leaving.py", "import sys\n\ndef leave():\n    sys.exit(3)\n")
    case.write("exit.yaml", """
        diagram: exit
        allowed_modules: [leaving]
        blocks:
          - {id: start, type: Start, next: call}
          - {id: call, type: Function, with: {function: "leaving:leave"}}
    """)
    figure = case.run("exit.yaml")
    case.write("stubborn.py", "import asyncio\n\nasync def stubborn():\n    while True:\n        try:\n"
                              "            await asyncio.sleep(0.05)\n        except:  # noqa: E722\n            pass\n")
    case.write("stubborn.yaml", """
        diagram: stubborn
        allowed_modules: [stubborn]
        blocks:
          - {id: start, type: Start, next: call}
          - {id: call, type: Function, with: {function: "stubborn:stubborn", timeout: 0.5}}
    """)
    return {"sys.exit(3) in a Function": figure, "abandoned bare-except coroutine": case.run("stubborn.yaml")}


def _bomb_case(case: Case) -> dict[str, Any]:
    case.write("bomb.yaml", f"""
        diagram: bomb
        allowed_hosts: ["127.0.0.1:{case.port}"]
        blocks:
          - {{id: start, type: Start, next: fetch}}
          - {{id: fetch, type: HttpRequest, with: {{url: "http://127.0.0.1:{case.port}/bomb", retries: 0}}}}
    """)
    return {f"{len(_Server.bomb):,}-byte gzip, gzip body (1 GiB decoded)": case.run("bomb.yaml")}


def _secret(case: Case) -> dict[str, Any]:
    secret = "pa ss+w0rd!x9Qé"
    case.write("secret.yaml", f"""
        diagram: secret
        allowed_hosts: ["127.0.0.1:{case.port}"]
        secrets: [SHOP_PASSWORD]
        blocks:
          - {{id: start, type: Start, message_level: Detailed, next: path}}
          - id: path
            type: HttpRequest
            with: {{url: "http://127.0.0.1:{case.port}/p/{{{{ secret('SHOP_PASSWORD') }}}}"}}
            next: basic
          - id: basic
            type: HttpRequest
            with: {{url: "http://robot:{{{{ secret('SHOP_PASSWORD') }}}}@127.0.0.1:{case.port}/login"}}
    """)
    figure = case.run("secret.yaml", env={"SHOP_PASSWORD": secret})
    import base64
    from urllib.parse import quote

    forms = [quote(secret, safe="!+"), base64.b64encode(f"robot:{secret}".encode()).decode()[4:-4]]
    trace = "".join(path.read_text(errors="replace") for path in (case.folder / "runs").rglob("trace.jsonl"))
    figure["spellings_in_trace"] = sum(trace.count(form) for form in forms)
    return {"a secret in a path and as a URL's password": figure}


def _pattern(case: Case) -> dict[str, Any]:
    pattern = (r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}"
               r"(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$")
    case.write("form.yaml", f"""
        diagram: form
        blocks:
          - {{id: start, type: Start, next: ask}}
          - id: ask
            type: Wait
            with:
              prompt: e-mail?
              form: {{type: object, properties: {{email: {{type: string, pattern: {json.dumps(pattern)}}}}}}}
    """)
    asked = case.run("form.yaml")
    answer = case.diagrama("resume", str(asked.get("run_id")), "--input", "email=" + "a" * 27 + "!", "--runs-dir",
                           "runs", "-q")
    return {"a 28-character answer to an e-mail pattern (resume)": answer}


def _async_sleep(case: Case) -> dict[str, Any]:
    case.write("sleeper.py", "import time\n\nasync def sleeps():\n    time.sleep(4)\n    return 'late'\n")
    case.write("sleep.yaml", """
        diagram: sleep
        allowed_modules: [sleeper]
        blocks:
          - {id: start, type: Start, timeout: 2, next: call}
          - {id: call, type: Function, with: {function: "sleeper:sleeps", timeout: 1}}
    """)
    return {"async def time.sleep(4), timeout 1 s, deadline 2 s": case.run("sleep.yaml")}


def _templates(case: Case) -> dict[str, Any]:
    figures = {}
    for name, template, inputs in (
            ("nested loops over 300 items", "{% for a in items %}{% for b in items %}{% for c in items %}"
                                            "{% endfor %}{% endfor %}{% endfor %}", {"items": list(range(300))}),
            ("a macro calling itself twice, 30 deep", "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}"
                                                      "{% endif %}{% endmacro %}{{ m(30) }}", {}),
            ("regex_replace over 1 MB of matches", "{{ text | regex_replace('a', 'b') }}", {"text": "a" * 1_000_000})):
        case.write("template.yaml", f"""
            diagram: template
            blocks:
              - {{id: start, type: Start, timeout: 5, inputs: {{items: [], text: ""}}, next: render}}
              - {{id: render, type: Set, set: {{out: {json.dumps(template)}}}}}
        """)
        (case.folder / "inputs.json").write_text(json.dumps(inputs))
        figures[name] = case.run("template.yaml", "--inputs", "inputs.json")
    return figures


def _tree(case: Case) -> dict[str, Any]:
    figures = {"Subdiagram tree, 10 calls a level, 7 deep, 3 s deadline": _grown(case, "")}
    figures["the same with max_subdiagram_calls: 10**9 (the deadline alone)"] = _grown(
        case, "max_subdiagram_calls: 1000000000")
    return figures


def _grown(case: Case, budget: str) -> dict[str, Any]:
    case.write("tree.yaml", """
        diagram: tree
        blocks:
          - id: start
            type: Start
            max_steps: 1000000000
            BUDGET
            timeout: 3
            inputs: {depth: 0}
            next: fan
          - id: fan
            type: Loop
            with: {for_each: "{{ range(10) | list if depth < 7 else [] }}"}
            body: call
          - id: call
            type: Subdiagram
            with: {diagram: "{{ 'tree' ~ '.yaml' }}", inputs: {depth: "{{ depth + 1 }}"}}
            next: fan
    """.replace("BUDGET", budget))
    return case.run("tree.yaml")


def _damaged(case: Case) -> dict[str, Any]:
    case.write("wait.yaml", """
        diagram: wait
        blocks:
          - {id: start, type: Start, next: ask}
          - {id: ask, type: Wait, with: {prompt: ok?, form: {type: object, properties: {ok: {type: boolean}}}}}
    """)
    asked = case.run("wait.yaml")
    with sqlite3.connect(case.folder / "runs" / "diagrama.db") as db:
        seq, state = db.execute("SELECT seq, state FROM checkpoints WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
                                (asked.get("run_id"),)).fetchone()
        db.execute("UPDATE checkpoints SET state = ? WHERE run_id = ? AND seq = ?", (state[: len(state) // 2],
                                                                                       asked.get("run_id"), seq))
    return {"resume with the last checkpoint cut in half": case.diagrama(
        "resume", str(asked.get("run_id")), "--input", "ok=true", "--runs-dir", "runs", "-q")}


def _redirect(case: Case) -> dict[str, Any]:
    case.write("redirect.yaml", f"""
        diagram: redirect
        allowed_hosts: ["127.0.0.1:{case.port}"]
        blocks:
          - {{id: start, type: Start, next: fetch}}
          - {{id: fetch, type: HttpRequest, with: {{url: "http://127.0.0.1:{case.port}/redirect", retries: 0}}}}
    """)
    return {"a redirect to http:\\\\host": case.run("redirect.yaml")}


CASES: dict[str, Callable[[Case], dict[str, Any]]] = {
    "exit": _exit, "bomb": _bomb_case, "secret": _secret, "pattern": _pattern, "async-sleep": _async_sleep,
    "templates": _templates, "tree": _tree, "damaged": _damaged, "redirect": _redirect}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose engine runs the attacks")
    parser.add_argument("--only", default="", help="comma-separated cases: " + ", ".join(CASES))
    parser.add_argument("--limit", type=float, default=120, help="seconds before a process is killed")
    options = parser.parse_args()
    _Server.bomb = _bomb()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    chosen = [name for name in CASES if not options.only or name in options.only.split(",")]
    try:
        for name in chosen:
            with tempfile.TemporaryDirectory() as folder:
                case = Case(Path(folder), options.code.resolve(), options.limit, server.server_address[1])
                for what, figure in CASES[name](case).items():
                    figure.pop("run_id", None)
                    print(json.dumps({"case": what, **figure}, ensure_ascii=False), flush=True)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
