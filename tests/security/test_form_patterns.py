"""A schema's `pattern` is matched in linear time: a Wait's form against a person's answer, a tool's parameters
against a model's arguments.

The pattern below backtracks catastrophically in Python's `re` (a 30-character answer took 21–100 s, a 50-character
one would outlast the machine); here real `diagrama run` and `diagrama resume` processes refuse a 5,000-character
answer to it, and a pattern that only a backtracking engine takes (lookahead) is refused where it is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import schema_problems, schema_refusal

ROOT = Path(__file__).resolve().parents[2]
EMAIL = r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$"
HOSTILE = "a" * 5000 + "!"

ASK = f"""\
diagram: ask
blocks:
  - id: start
    type: Start
    next: ask
  - id: ask
    type: Wait
    with:
      prompt: Your e-mail?
      form:
        type: object
        properties: {{email: {{type: string, pattern: {json.dumps(EMAIL)}}}}}
        required: [email]
    set: {{email: "{{{{ answer.email }}}}"}}
"""


def _diagrama(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "DIAGRAMA_STORE"}
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, timeout=120,
                          cwd=folder, env={**env, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
def test_a_hostile_answer_to_a_backtracking_pattern_is_refused_at_once(write: Callable[..., Path],
                                                                       tmp_path: Path) -> None:
    write(ASK, "ask.yaml")
    asked = _diagrama(tmp_path, "run", "ask.yaml", "--output", "json", "-q")
    assert asked.returncode == 3, asked
    run_id = json.loads(asked.stdout)["run_id"]

    refused = _diagrama(tmp_path, "resume", run_id, "--input", f"email={HOSTILE}", "--output", "json", "-q")
    assert refused.returncode == 2, refused
    assert "email: " in refused.stderr and "does not match" in refused.stderr and "still waiting" in refused.stderr

    answered = _diagrama(tmp_path, "resume", run_id, "--input", "email=ana.silva@loja.com.br", "--output", "json",
                         "-q")
    assert answered.returncode == 0, answered
    assert json.loads(answered.stdout)["variables"]["email"] == "ana.silva@loja.com.br"


def test_a_pattern_only_a_backtracking_engine_takes_is_refused_where_it_is_written(write: Callable[..., Path],
                                                                                   tmp_path: Path) -> None:
    write(ASK.replace(json.dumps(EMAIL), json.dumps(r"^(?=.*@)\S+$")), "ask.yaml")
    checked = _diagrama(tmp_path, "validate", "ask.yaml")
    assert checked.returncode == 2, checked
    assert "ask.yaml:" in checked.stderr and "block 'ask' field 'with.form'" in checked.stderr, checked.stderr
    assert "lookahead" in checked.stderr, checked.stderr


def test_a_models_arguments_are_held_to_a_tools_pattern_in_linear_time() -> None:
    parameters = {"type": "object", "properties": {"email": {"type": "string", "pattern": EMAIL}}}
    assert schema_refusal(parameters) is None
    assert schema_problems(parameters, {"email": HOSTILE}, root="arguments") == [
        f'email: "{HOSTILE}" does not match "{EMAIL}"']
    assert schema_problems(parameters, {"email": "ana@loja.com"}) == []


def test_a_schema_that_came_at_run_time_with_lookahead_is_still_checked_within_bounds() -> None:
    lookahead = {"type": "object", "properties": {"code": {"type": "string", "pattern": r"^(?=[A-Z])(a|a)*$"}}}
    assert "lookahead" in str(schema_refusal(lookahead))
    problems = schema_problems(lookahead, {"code": HOSTILE})  # a backtracking engine under a step limit
    assert problems and problems[0].startswith("code: ")
