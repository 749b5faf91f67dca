"""The YAML dialect every file is read in (1.2's core schema), and the warning at each plain scalar YAML 1.1 reads
otherwise: through the reader, `diagrama validate`, `--input`, inputs files and recorded scenarios."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from engine.cli import app
from engine.format.dialect import ambiguity, plain_value, reads_as_text
from engine.format.yamlfile import Ambiguous, read_yaml_text
from engine.testing.recorded import PlainDumper

cli = CliRunner()

THE_ISSUES_EXAMPLE = """\
diagram: flags
blocks:
  - id: start
    type: Start
    variables: {flag: yes, mode: on, off_word: off, n: 0o17, z: 012}
    next: done
  - id: done
    type: Set
    set: {shown: "{{ flag }}|{{ mode }}|{{ off_word }}|{{ n }}|{{ z }}"}
"""


@pytest.mark.parametrize(("text", "value"), [
    ("yes", "yes"), ("No", "No"), ("ON", "ON"), ("off", "off"), ("y", "y"), ("n", "n"),
    ("true", True), ("False", False), ("TRUE", True), ("~", None), ("null", None), ("", None),
    ("0o17", 15), ("012", 12), ("08", 8), ("0x1F", 31), ("+7", 7), ("-0", 0), ("99999999999999999999", 99999999999999999999),
    ("1e3", 1000.0), ("1.5e3", 1500.0), (".5", 0.5), ("1.", 1.0), ("-.inf", -math.inf),
    ("1_000", "1_000"), ("0b101", "0b101"), ("1:30", "1:30"), ("=", "="), ("2024-01-01", "2024-01-01"), ("0o8", "0o8"),
])  # fmt: skip
def test_plain_scalars_read_as_the_core_schema_says(text: str, value: Any) -> None:
    got = plain_value(text)
    assert type(got) is type(value) and got == value


def test_nan_is_a_float() -> None:
    assert math.isnan(plain_value(".NaN"))


@pytest.mark.parametrize(("text", "message", "hint"), [
    ("yes", "`yes` is the text 'yes' here; YAML 1.1 reads it as true", 'write `true`, or quote it: "yes"'),
    ("Off", "`Off` is the text 'Off' here; YAML 1.1 reads it as false", 'write `false`, or quote it: "Off"'),
    ("n", "`n` is the text 'n' here; YAML 1.1 reads it as false", 'write `false`, or quote it: "n"'),
    ("0o17", "`0o17` is the number 15 here; YAML 1.1 reads it as the text '0o17'", 'write 15, or quote it: "0o17"'),
    ("012", "`012` is the number 12 here; YAML 1.1 reads it as the number 10", 'write 12, or quote it: "012"'),
    ("1:30", "`1:30` is the text '1:30' here; YAML 1.1 reads it as the number 90", 'quote it: "1:30", or write 90'),
    ("=", "`=` is the text '=' here; YAML 1.1 reads it as its special 'value' key", 'quote it: "="'),
    ("1e-5", "`1e-5` is the number 1.0e-05 here; YAML 1.1 reads it as the text '1e-5'", 'write 1.0e-05, or quote it: "1e-5"'),
])  # fmt: skip
def test_what_yaml_1_1_reads_otherwise_is_told_with_its_fix(text: str, message: str, hint: str) -> None:
    told = ambiguity(text)
    assert told is not None and (told.message, told.hint) == (message, hint)


@pytest.mark.parametrize("text", ["true", "False", "~", "3", "-2", "2.5", ".inf", "0x1F", "hello", "2024-01-01", "yEs", "<<"])
def test_what_both_read_alike_is_not_ambiguous(text: str) -> None:
    assert ambiguity(text) is None


def test_only_plain_values_are_ambiguous_not_quoted_ones_nor_keys() -> None:
    found: list[Ambiguous] = []
    data, _ = read_yaml_text("on: 'yes'\nb: \"0o17\"\nc: [yes, 'no']\nyes: 1\n", "f.yaml", None, found)
    assert data == {"on": "yes", "b": "0o17", "c": ["yes", "no"], "yes": 1}
    assert [(a.path, a.line, a.column, a.text) for a in found] == [(("c", 0), 3, 5, "yes")]


def test_merge_keys_and_explicit_tags_keep_working() -> None:
    data, _ = read_yaml_text("base: &b {x: 1}\nc:\n  <<: *b\n  y: !!str 012\n  z: !!float 1\n  d: !!timestamp 2024-01-01\n", "f")
    assert data["c"] == {"x": 1, "y": "012", "z": 1.0, "d": "2024-01-01"}


def test_a_tag_the_value_does_not_fit_is_a_problem_at_its_line() -> None:
    problems: list[Any] = []
    read_yaml_text("a: 1\nb: !!bool yes\n", "f.yaml", problems)
    assert [(p.line, p.message) for p in problems] == [(2, "'yes' is not a bool in YAML 1.2 ('yes' is not a YAML 1.2 bool)")]


def test_validate_warns_at_each_ambiguous_scalar_with_line_column_block_and_field(tmp_path: Path) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text(THE_ISSUES_EXAMPLE, encoding="utf-8")
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert warnings == [
        f"{path}:5:23: warning: block 'start' field 'variables.flag': `yes` is the text 'yes' here; YAML 1.1 reads it "
        'as true (write `true`, or quote it: "yes")',
        f"{path}:5:34: warning: block 'start' field 'variables.mode': `on` is the text 'on' here; YAML 1.1 reads it "
        'as true (write `true`, or quote it: "on")',
        f"{path}:5:48: warning: block 'start' field 'variables.off_word': `off` is the text 'off' here; YAML 1.1 reads "
        'it as false (write `false`, or quote it: "off")',
        f"{path}:5:56: warning: block 'start' field 'variables.n': `0o17` is the number 15 here; YAML 1.1 reads it as "
        "the text '0o17' (write 15, or quote it: \"0o17\")",
        f"{path}:5:65: warning: block 'start' field 'variables.z': `012` is the number 12 here; YAML 1.1 reads it as "
        'the number 10 (write 12, or quote it: "012")',
    ]
    assert cli.invoke(app, ["validate", "--strict", str(path)]).exit_code == 2
    ran = cli.invoke(app, ["run", str(path), "--runs-dir", str(tmp_path / "runs"), "--output", "json"])
    assert json.loads(ran.stdout)["variables"]["shown"] == "yes|on|off|15|12"


def test_inputs_on_the_command_line_and_in_files_are_read_in_the_same_dialect(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("diagram: d\nblocks:\n  - id: start\n    type: Start\n    inputs: {items: [], anything: null}\n",
                    encoding="utf-8")
    runs = str(tmp_path / "runs")
    ran = cli.invoke(app, ["run", str(path), "--runs-dir", runs, "--output", "json", "--input", "items=[yes, 0o17, 012]",
                           "--input", "anything=on"])
    assert json.loads(ran.stdout)["variables"]["items"] == ["yes", 15, 12]
    assert json.loads(ran.stdout)["variables"]["anything"] == "on"
    inputs = tmp_path / "inputs.yaml"
    inputs.write_text("items: [off, 1e3]\n", encoding="utf-8")
    ran = cli.invoke(app, ["run", str(path), "--runs-dir", runs, "--output", "json", "--inputs", str(inputs)])
    assert json.loads(ran.stdout)["variables"]["items"] == ["off", 1000.0]


def test_recorded_scenarios_quote_the_text_the_dialect_would_read_otherwise() -> None:
    values = ["0o17", "1e3", "08", "yes", "012", "hello", "1_000"]
    text = yaml.dump({"v": values}, Dumper=PlainDumper, sort_keys=False)
    assert read_yaml_text(text, "s.yaml")[0] == {"v": values}
    assert all(not reads_as_text(v) or f"- {v}\n" in text for v in values)
