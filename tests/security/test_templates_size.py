"""A template cannot build a huge value: each attack ends quickly with `template_too_large`, in little memory.

The attacks run in one child process capped at 2.5 GB of address space, so that code without the
bounds fails the assertions (or runs out of memory there) instead of swapping this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ATTACKS = {
    "replace multiplies a text": "{{ ('a'*1000)|replace('a', 'a'*10**6) }}",
    "repeat a text 10**10 times": "{{ 'a'*10**10 }}",
    "repeat a text in text output": "x {{ 'a'*10**9 }} y",
    "repeat a list": "{{ [1]*10**9 }}",
    "repeat a list of lists": "{{ [[0]*10**5]*10**5 }}",
    "add texts": "{{ ('a'*6000000) + ('b'*6000000) }}",
    "concatenate with ~": "{{ ('a'*6000000) ~ ('b'*6000000) }}",
    "center": "{{ 'x'|center(10**9) }}",
    "join with a long separator": "{{ (['a'*10**6]*9)|join('b'*10**6) }}",
    "percent format width": "{{ '%0500000000d' % 1 }}",
    "percent format precision": "{{ '%.500000000f' % 1.5 }}",
    "format filter width": "{{ '%0500000000d'|format(1) }}",
    "str.format width": "{{ '{:>500000000}'.format(1) }}",
    "str.format nested width": "{{ '{:>{}}'.format(1, 500000000) }}",
    "indent": "{{ 'a\\nb'|indent(10**9) }}",
    "wordwrap with a long wrapstring": "{{ ('a '*100)|wordwrap(1, wrapstring='x'*10**6) }}",
    "batch filled": "{{ [1]|batch(10**9, 0)|list }}",
    "slice into many": "{{ [1]|slice(10**9)|list }}",
    "ljust": "{{ 'a'.ljust(10**9) }}",
    "expandtabs": "{{ ('a\\t'*1000).expandtabs(10**7) }}",
    "split into many pieces": "{{ ('ab'*3000000).split('b') }}",
    "power of an integer": "{{ 9**(9**9) }}",
    "product of integers": "{{ (2**60000) * (2**60000) }}",
    "lazy map stored by list": "{{ [1, 2, 3]|map('center', 10**7)|list }}",
    "text rendered from a loop": "{% for x in [1, 2, 3] %}{{ 'a'*9000000 }}{% endfor %}",
}

_PROBE = r"""
import json, resource, sys, time, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (2560 * 2**20, 2560 * 2**20))
from engine.compile.templating import TemplateEnv
from engine.errors import TemplateError
env = TemplateEnv()
for name, source in json.loads(sys.argv[1]).items():
    evaluator = env.compile(source)
    scope = env.new_scope({})
    tracemalloc.start()
    began = time.perf_counter()
    try:
        value = evaluator.evaluate(scope)
        outcome = {"type": None, "message": f"built a {type(value).__name__}"}
    except TemplateError as exc:
        outcome = {"type": exc.type, "message": exc.message}
    except BaseException as exc:  # a crash is an outcome to report, not to die of
        outcome = {"type": type(exc).__name__, "message": str(exc)[:200]}
    outcome["wall_s"] = time.perf_counter() - began
    outcome["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    value = None
    print(json.dumps({"name": name, **outcome}), flush=True)
"""


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(ATTACKS)], capture_output=True, text=True,
                          cwd=root, timeout=600, check=False)
    found = {}
    for line in done.stdout.splitlines():
        outcome = json.loads(line)
        found[outcome.pop("name")] = outcome
    assert found, done.stderr[-2000:]
    return found


@pytest.mark.parametrize("name", list(ATTACKS))
def test_attack_ends_quickly_with_template_too_large_in_little_memory(outcomes, name: str) -> None:
    outcome = outcomes.get(name)
    assert outcome is not None, f"the probe died before or during {name!r}"
    assert outcome["type"] == "template_too_large", outcome
    assert outcome["peak_mb"] < 100, outcome
    assert outcome["wall_s"] < 2, outcome
    assert "the limit is" in outcome["message"]


def test_the_run_error_names_block_and_field_and_follows_the_error_level(write, runner) -> None:
    path = write(textwrap.dedent("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {n: 20000000}
            next: build
          - id: build
            type: Echo
            with: {value: "{{ 'a' * n }}"}
            on_error: handled
            next: done
          - id: handled
            type: Set
            set: {note: "{{ error.type }}"}
          - id: done
            type: Set
    """))
    result = runner.run(path)
    assert result.path == ["start", "build", "handled"]
    [error] = result.errors
    assert (error["block"], error["type"]) == ("build", "template_too_large")
    assert error["message"].startswith("with.value: the template would build")
    assert result.variables["note"] == "template_too_large"


def test_ignore_level_goes_on_past_a_template_too_large(write, runner) -> None:
    path = write(textwrap.dedent("""
        diagram: d
        blocks:
          - id: start
            type: Start
            error_level: Ignore
            next: build
          - id: build
            type: Echo
            with: {value: "{{ 'ab' * 6000000 }}"}
            set: {built: "{{ result }}"}
            next: done
          - id: done
            type: Set
            set: {reached: true}
    """))
    result = runner.run(path)
    assert result.status == "succeeded" and result.path == ["start", "build", "done"]
    assert [e["type"] for e in result.errors] == ["template_too_large"]
    assert result.variables["reached"] is True
