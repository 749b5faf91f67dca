"""No key leaves a run: every output surface is grepped for the keys and the forms vendors mask them in.

Fake keys for the three vendors (and a plain token) sit in the environment of real `diagrama`
processes. A loopback fake vendor echoes each key, whole and masked, in an answer or an error
body, and the Anthropic key and the token are passed as run inputs too. Then the JSON and text
output, the trace, the run store's file, batch results (.jsonl and .csv), `diagrama runs` and
`diagrama trace`, a failing scenario's report and a recorded scenario must hold none of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reliability.fakevendor import FakeVendorServer, Reply, error_body, success_body

ROOT = Path(__file__).resolve().parents[2]

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-SecretsTestKey0123456789abcdEFGH",
    "GROQ_API_KEY": "gsk_SecretsTestKey0123456789groqWXYZ",
    "GEMINI_API_KEY": "AIzaSecretsTestKey0123456789gemiQRST",
    "DIAGRAMA_TEST_TOKEN": "plain-token-value-7c1e9b52d4",  # a secret of no vendor's shape: only the environment knows it
}
ANTHROPIC, GROQ, GEMINI, TOKEN = KEYS.values()


def masked(key: str) -> list[str]:
    """The forms vendors and consoles print a key in: its first characters, a mask, its last four."""
    return [f"{key[:12]}...{key[-4:]}", f"{key[:8]}****{key[-4:]}", f"{key[:7]}...{key[-4:]}"]


def forbidden() -> dict[str, str]:
    """What must not appear anywhere: each key, a piece of its middle (a partial leak), its masked forms."""
    found = {}
    for name, key in KEYS.items():
        found[f"{name} (whole)"] = key
        found[f"{name} (middle)"] = key[-16:-4]
        for form in masked(key):
            found[f"{name} masked as {form!r}"] = form
    return found


def leaks(surface: str, text: str) -> list[str]:
    return [f"{surface}: {what}" for what, value in forbidden().items() if value in text]


DIAGRAM = """\
diagram: secrets
blocks:
  - id: start
    type: Start
    message_level: Detailed
    inputs: {key: "", token: ""}
    next: claude
  - id: claude
    type: ClaudeRequest
    with: {model: claude-sonnet-5-5, request: "My key is {{ key }}, my token {{ token }}.", max_tokens: 64, timeout: 10}
    set: {claude_answer: "{{ result }}", given: "{{ key }} {{ token }}"}
    next: groq
  - id: groq
    type: GroqChatRequest
    error_level: Ignore
    with: {model: llama-3.3-70b-versatile, request: "hi", max_tokens: 64, timeout: 10}
    set: {groq_answer: "{{ result }}"}
    next: gemini
  - id: gemini
    type: GeminiRequest
    with: {model: gemini-3.5-flash, request: "hi", max_tokens: 64, timeout: 10}
"""

SCENARIO = f"""\
scenario: a robot that repeats its key
diagram: secrets.yaml
inputs: {{key: "{ANTHROPIC}", token: "{TOKEN}"}}
replies:
  claude: [{{text: "Your key {ANTHROPIC} ({masked(ANTHROPIC)[0]}) and token {TOKEN}."}}]
  groq: [{{error: {{status: 400, message: "Invalid API Key {masked(GROQ)[1]}: {GROQ}"}}}}]
  gemini: [{{text: "Gemini saw {GEMINI} ({masked(GEMINI)[0]})."}}]
expect:
  status: failed
  variables: {{claude_answer: "something else", given: "something else"}}
"""


@pytest.fixture
def vendor() -> Iterator[FakeVendorServer]:
    server = FakeVendorServer().start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Project:
    dir: Path
    runs: Path
    env: dict[str, str]
    ids: dict[str, str]


@pytest.fixture
def project(tmp_path: Path, vendor: FakeVendorServer) -> Project:
    """The diagram, a scenario, batch rows, and the environment of a `diagrama` process aimed at the fake vendor."""
    ids = {name: f"{name}-{uuid.uuid4().hex[:8]}" for name in ("anthropic", "groq", "gemini")}
    # Each vendor echoes its key the way vendors do: whole, and masked (last step repeats for every run).
    vendor.script(ids["anthropic"], Reply(200, success_body(
        "anthropic", f"Your key {ANTHROPIC} is valid (shown as {masked(ANTHROPIC)[0]}); token {TOKEN}.")))
    vendor.script(ids["groq"], Reply(400, error_body(
        "groq", 400, f"Invalid API Key: {masked(GROQ)[1]} (you sent {GROQ})")))
    vendor.script(ids["gemini"], Reply(400, error_body(
        "gemini", 400, f"API key not valid: {GEMINI}. Key {masked(GEMINI)[2]} was rejected.")))
    (tmp_path / "secrets.yaml").write_text(DIAGRAM, encoding="utf-8")
    (tmp_path / "key.scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "rows.csv").write_text(f"key,token\n{ANTHROPIC},{TOKEN}\n{ANTHROPIC},{TOKEN}\n", encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name != "DIAGRAMA_STORE"}
    env.update(KEYS)
    env.update({"ANTHROPIC_BASE_URL": vendor.base(ids["anthropic"]), "GROQ_BASE_URL": vendor.base(ids["groq"]),
                "GEMINI_BASE_URL": vendor.base(ids["gemini"]), "PYTHONPATH": str(ROOT)})
    return Project(tmp_path, tmp_path / "runs", env, ids)


def diagrama(project: Project, *args: str) -> str:
    """Run `diagrama` in a process of its own; its stdout and stderr together."""
    done = subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=project.dir, env=project.env)
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"


def run_side_by_side(project: Project, commands: dict[str, tuple[str, ...]]) -> dict[str, str]:
    with ThreadPoolExecutor(len(commands)) as pool:
        done = {name: pool.submit(diagrama, project, *args) for name, args in commands.items()}
        return {name: future.result() for name, future in done.items()}


@pytest.mark.slow
def test_no_key_reaches_any_output(project: Project, vendor: FakeVendorServer) -> None:
    runs = str(project.runs)
    inputs = ["-i", f"key={ANTHROPIC}", "-i", f"token={TOKEN}"]
    runs_and_tests = {
        "run --output json": ("run", "secrets.yaml", *inputs, "--runs-dir", runs, "--output", "json"),
        "run (text)": ("run", "secrets.yaml", *inputs, "--runs-dir", runs),
        "run --record": ("run", "secrets.yaml", *inputs, "--runs-dir", runs, "-q", "--record", "recorded.scenario.yaml"),
        "batch (jsonl)": ("batch", "secrets.yaml", "--inputs", "rows.csv", "--runs-dir", runs, "--output", "results.jsonl",
                          "--collect", "claude_answer,given"),
        "batch (csv)": ("batch", "secrets.yaml", "--inputs", "rows.csv", "--runs-dir", runs, "--output", "results.csv",
                        "--collect", "claude_answer,given"),
        "diagrama test (failing scenario)": ("test", "key.scenario.yaml", "--runs-dir", runs),
    }
    surfaces = run_side_by_side(project, runs_and_tests)  # one process each, as users run them; side by side for time
    as_json = surfaces["run --output json"]
    run_id = as_json.split('"run_id":"', 1)[1].split('"', 1)[0]
    surfaces.update(run_side_by_side(project, {
        "diagrama runs": ("runs", "--runs-dir", runs),
        "diagrama trace": ("trace", run_id, "--runs-dir", runs, "--show-payloads"),
        "diagrama trace --json": ("trace", run_id, "--runs-dir", runs, "--json"),
    }))
    for name in ("recorded.scenario.yaml", "results.jsonl", "results.csv"):
        surfaces[name] = (project.dir / name).read_text()
    for path in sorted(Path(runs).rglob("*")):  # traces, and the run store with its WAL
        if path.is_file():
            surfaces[f"file {path.relative_to(runs)}"] = path.read_bytes().decode("utf-8", "replace")

    # The vendors were reached and echoed, and the runs went as planned: the checks below are not vacuous.
    for name in ("anthropic", "groq", "gemini"):
        assert {hit.vendor for hit in vendor.hits(project.ids[name])} == {name}
    assert '"status":"failed"' in as_json and "exit 1" in as_json, as_json
    assert "FAIL" in surfaces["diagrama test (failing scenario)"], surfaces["diagrama test (failing scenario)"]
    assert any(name.endswith("diagrama.db") for name in surfaces) and any(name.endswith(".jsonl") for name in surfaces)
    found = [leak for surface, text in surfaces.items() for leak in leaks(surface, text)]
    assert not found, "keys left the run:\n" + "\n".join(found)
    for surface in ("run --output json", "diagrama test (failing scenario)", "recorded.scenario.yaml", "results.csv"):
        assert "[REDACTED]" in surfaces[surface], surfaces[surface]


def test_redact_value_scrubs_keys_masked_forms_and_keeps_the_rest() -> None:
    from engine.format.redact import REDACTED, redact_text, redact_value
    from engine.format.tables import DataTable

    secrets = list(KEYS.values())
    value = {"answer": f"key {GROQ}!", "rows": DataTable(["role", "content"], [("user", masked(GEMINI)[0])]),
             "list": [1, 2.5, None, True, TOKEN], "plain": "nothing to hide... really", "count": 3}
    clean = redact_value(value, secrets)
    assert clean["answer"] == f"key {REDACTED}!" and clean["rows"].rows == [("user", REDACTED)]
    assert clean["list"] == [1, 2.5, None, True, REDACTED] and clean["plain"] == "nothing to hide... really"
    assert value["answer"] == f"key {GROQ}!"  # the original is left as it was
    untouched = {"a": ["b", {"c": "d"}]}
    assert redact_value(untouched, secrets) is untouched
    for form in masked(ANTHROPIC):
        assert redact_text(f"({form})", secrets) == f"({REDACTED})"
    assert redact_text(f"unregistered {masked('sk-ant-api03-NotInTheEnvironment99')[0]}", []) == f"unregistered {REDACTED}"
    assert redact_text("etc...and so on; a**b", secrets) == "etc...and so on; a**b"
