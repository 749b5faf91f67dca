"""Any mutation of the example diagrams loads, or fails with DiagramInvalid: never another exception.

Mutations work on the text (lines deleted, doubled, swapped, cut, replaced by hostile YAML) and on the
data (keys deleted or added, values replaced by hostile ones: huge or weird text, deep nesting, long
ids, numbers out of range, broken templates, paths out of the folder). A few go through `diagrama
validate` in a child process, which must never print a traceback.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blocks.registry import BUILTIN_BLOCKS
from engine import BlockRegistry, DiagramInvalid
from engine.compile.loader import load_diagram_text
from tests.property import budget

pytestmark = pytest.mark.slow  # property searches

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {path.name: path.read_text(encoding="utf-8") for path in sorted((ROOT / "diagrams").glob("*.yaml"))}
REGISTRY = BlockRegistry(BUILTIN_BLOCKS)

HOSTILE_LINES = [
    "a: &a [*a]",
    "b: &b {x: *b}",
    "  - *nowhere",
    "<<: *a",
    "x: " + "[" * 300 + "]" * 300,
    "x: " + "{a: " * 150 + "1" + "}" * 150,
    "tools: " + "x" * 5000,
    "tools: " + "ab/" * 2000,
    "tools: ../../../../../../etc",
    "tools: [/etc/passwd, 5, null]",
    "tools: {csv: x}",
    "history: {csv: ../../../../../../../../etc/passwd}",
    "x: !!python/object/apply:os.system [ls]",
    "x: !!binary aGVsbG8=",
    "%TAG ! tag:example.com,2000:",
    "---",
    "...",
    "? [complex, key]",
    ": :",
    "\t- tab",
    'x: "{{ ' + "(" * 300 + "1" + ")" * 300 + ' }}"',
    'x: "{{ unbalanced"',
    'x: "{% for x in %}"',
    "x: 1e999999",
    "x: 0x" + "f" * 500,
    "x: " + "9" * 5000,
    "id: " + "a" * 10_000,
    "type: " + "Ä" * 500,
    "next: [" + ", ".join(["{to: start}"] * 500) + "]",
    "x: \u202e\u0000\ufeff",
    "blocks: []",
    "blocks: null",
    "diagram: [1, 2]",
    "version: 99999999999999999999999",
]

_TEXTS = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1000, max_size=3000),
    st.sampled_from(["x" * 200_000, "\u0301" * 10_000, "🙂" * 5000, "\x00\x01\x7f", "\ud7ff\ue000\uffff"]),
)
_TEMPLATES = st.sampled_from([
    "{{", "{{ x", "}}", "{% for %}", "{{ }}}", "{#", "{{ (((( }}", "{{ " + "(" * 300 + "1" + ")" * 300 + " }}",
    "{{ 'a' * 10**10 }}", "{{ ('a'*1000)|replace('a', 'a'*10**6) }}", "{{ 9 ** (9 ** 9) }}", "{{ x.__class__ }}",
    "{{ tools('nope') }}", "{{ result }}", "{{ error.type }}", "{% raw %}", "{{ 1 }}{{",
])
_NUMBERS = st.one_of(st.integers(min_value=-(10**400), max_value=10**400), st.floats(allow_nan=True),
                     st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**4000, 0, -1]))
_PATHS = st.sampled_from(["../../../../../../etc/passwd", "/etc/passwd", "data/../../x.csv", "x" * 5000, "a\x00b",
                          "registry", ".", "/", "~/.ssh/id_rsa", "data/customer_messages.csv"])


def _deep(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


HOSTILE_VALUES = st.one_of(
    _TEXTS,
    _TEMPLATES,
    _NUMBERS,
    _PATHS,
    _PATHS.map(lambda path: {"csv": path}),
    st.integers(min_value=1, max_value=400).map(_deep),
    st.sampled_from([None, True, False, [], {}, [[]], {"": None}, "a" * 10_000]),
    st.lists(st.sampled_from(["start", "ask", "done", "x"]), max_size=5).map(lambda ids: [{"to": i} for i in ids]),
)


def _load(name: str, text: str) -> None:
    """Load `text` as if it were the example `name`: a Diagram or DiagramInvalid, nothing else."""
    try:
        load_diagram_text(text, ROOT / "diagrams" / name, REGISTRY)
    except DiagramInvalid as exc:
        assert exc.problems, "DiagramInvalid without a problem"
        for problem in exc.problems:
            assert problem.file, problem


# -- text-level mutations --------------------------------------------------------------------

def _mutate_text(text: str, rnd: random.Random, hostile: str) -> str:
    lines = text.split("\n")
    at = rnd.randrange(len(lines))
    kind = rnd.randrange(8)
    if kind == 0:
        del lines[at]
    elif kind == 1:
        lines.insert(at, lines[at])
    elif kind == 2:
        other = rnd.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    elif kind == 3:
        indent = len(lines[at]) - len(lines[at].lstrip())
        lines[at] = " " * indent + hostile
    elif kind == 4:
        lines.insert(at, hostile)
    elif kind == 5:
        return text[: rnd.randrange(len(text))]
    elif kind == 6:
        cut = rnd.randrange(len(text))
        return text[:cut] + hostile + text[cut:]
    else:
        lines[at] = " " * rnd.randrange(0, 7) + lines[at].lstrip()
    return "\n".join(lines)


@pytest.mark.slow
@budget(max_examples=100)
@given(name=st.sampled_from(sorted(EXAMPLES)), rnd=st.randoms(use_true_random=False),
       hostile=st.one_of(st.sampled_from(HOSTILE_LINES), st.text(max_size=30)), times=st.integers(1, 3))
def test_text_mutations_load_or_raise_diagram_invalid(name: str, rnd: random.Random, hostile: str, times: int) -> None:
    text = EXAMPLES[name]
    for _ in range(times):
        text = _mutate_text(text, rnd, hostile) or "x"
    _load(name, text)


# -- data-level mutations --------------------------------------------------------------------

def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value`."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _places(item, (*path, index))
    return found


def _mutate_data(data: Any, rnd: random.Random, hostile: Any) -> Any:
    place = rnd.choice(_places(data))
    if not place:
        return hostile if rnd.random() < 0.2 else data
    parent = data
    for step in place[:-1]:
        parent = parent[step]
    last = place[-1]
    kind = rnd.randrange(5)
    if kind == 0:  # delete the key or the item
        del parent[last]
    elif kind == 1:  # replace it with a hostile value
        parent[last] = hostile
    elif kind == 2 and isinstance(parent, list):  # duplicate a list item (a block: a duplicate id)
        parent.insert(last, json.loads(json.dumps(parent[last])))
    elif kind == 3 and isinstance(parent, dict):  # a new key beside it
        parent[rnd.choice(["x", "id", "type", "next", "with", "set", "tools", "on_error", "a" * 300])] = hostile
    else:  # bury it deep
        parent[last] = _deep(rnd.randrange(1, 200)) if rnd.random() < 0.3 else [parent[last]]
    return data


@budget(max_examples=100)
@given(name=st.sampled_from(sorted(EXAMPLES)), rnd=st.randoms(use_true_random=False),
       hostile=st.lists(HOSTILE_VALUES, min_size=1, max_size=3))
@pytest.mark.slow
def test_data_mutations_load_or_raise_diagram_invalid(name: str, rnd: random.Random, hostile: list[Any]) -> None:
    import yaml

    data = yaml.safe_load(EXAMPLES[name])
    for value in hostile:
        data = _mutate_data(data, rnd, value)
    # JSON is YAML: written on one line, it survives any depth, unicode and number the strategies make.
    _load(name, json.dumps(data, ensure_ascii=rnd.random() < 0.5))


# -- through the command line ----------------------------------------------------------------

def test_validate_never_prints_a_traceback(tmp_path: Path) -> None:
    """Forty mutated diagrams (a fixed seed) in one `diagrama validate` run: problems, never a traceback."""
    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder)
    rnd = random.Random(20_260_13)
    files = []
    for number in range(40):
        name = rnd.choice(sorted(EXAMPLES))
        text = EXAMPLES[name]
        for _ in range(rnd.randrange(1, 4)):
            text = _mutate_text(text, rnd, rnd.choice(HOSTILE_LINES)) or "x"
        path = folder / f"mutated_{number}_{name}"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    done = subprocess.run([sys.executable, "-m", "engine.cli", "validate", *files], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, check=False)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (0, 2)
    assert "invalid" in done.stderr  # most mutations break the diagram; each is reported with its file


@pytest.mark.parametrize("line", HOSTILE_LINES[:8])
def test_each_hostile_line_in_each_example_loads_or_is_invalid(line: str) -> None:
    for name, text in EXAMPLES.items():
        lines = text.split("\n")
        for at in (1, len(lines) // 2):
            _load(name, "\n".join([*lines[:at], line, *lines[at:]]))
