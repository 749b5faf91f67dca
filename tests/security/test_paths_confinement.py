"""Every path a diagram names stays inside its folder, or a data root passed with --data-root.

A refusal happens at load for written paths and at run time for templated ones; it names the file,
line, block and field, and never quotes a word of the refused file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import BlockRegistry, DiagramInvalid, Problem
from engine.compile.loader import load_diagram

SECRET = "TOPSECRET-4242"
# Ragged on purpose: reading it would make an error that quotes its shape ("row has 3 cells").
SECRET_CSV = f"name,{SECRET}\nroot,x,{SECRET}\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the diagram's folder (tmp_path/diagram/): what an attacker wants read."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    secret = folder / "secret.csv"
    secret.write_text(SECRET_CSV, encoding="utf-8")
    return secret


@pytest.fixture
def diagram_at(tmp_path: Path) -> Callable[[str], Path]:
    def write(text: str) -> Path:
        folder = tmp_path / "diagram"
        folder.mkdir(exist_ok=True)
        path = folder / "d.yaml"
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write


def refusals(path: Path, registry: BlockRegistry, **options: object) -> list[Problem]:
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry, **options)  # type: ignore[arg-type]
    text = str(caught.value)
    assert SECRET not in text and "cells" not in text, text  # not a word of the file, not its shape
    return [p for p in caught.value.problems if p.code == "path_outside_folder"]


def _with_history(csv: str) -> str:
    return f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: ask
          - id: ask
            type: ClaudeRequest
            with:
              model: claude-sonnet-4-5
              request: hi
              history: {{csv: "{csv}"}}
    """


def test_dotdot_path_in_an_input_is_refused_at_load_with_file_line_block_field(diagram_at, registry, outside) -> None:
    path = diagram_at(_with_history("../elsewhere/secret.csv"))
    [problem] = refusals(path, registry)
    assert (problem.file, problem.line, problem.block, problem.field) == (str(path), 11, "ask", "with.history")
    assert "leaves the diagram's folder" in problem.message and "../elsewhere/secret.csv" in problem.message
    assert "--data-root" in (problem.hint or "")


def test_etc_passwd_through_many_dotdots_is_refused(diagram_at, registry) -> None:
    path = diagram_at(_with_history("../" * 12 + "etc/passwd"))
    [problem] = refusals(path, registry)
    assert problem.line == 11 and "root:x:0" not in str(problem)


def test_absolute_path_is_refused(diagram_at, registry, outside) -> None:
    path = diagram_at(_with_history(str(outside)))
    [problem] = refusals(path, registry)
    assert (problem.block, problem.field) == ("ask", "with.history")


def test_symlink_inside_the_folder_pointing_outside_is_refused(diagram_at, registry, outside) -> None:
    path = diagram_at(_with_history("data/link.csv"))
    (path.parent / "data").mkdir()
    os.symlink(outside, path.parent / "data" / "link.csv")
    [problem] = refusals(path, registry)
    assert (problem.line, problem.block, problem.field) == (11, "ask", "with.history")


def test_symlinked_folder_pointing_outside_is_refused(diagram_at, registry, outside) -> None:
    path = diagram_at(_with_history("data/secret.csv"))
    os.symlink(outside.parent, path.parent / "data")
    assert len(refusals(path, registry)) == 1


def test_start_variables_and_inputs_and_set_values_are_checked_at_load(diagram_at, registry, outside) -> None:
    path = diagram_at(f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs:
              table: {{csv: {outside}}}
            variables:
              history: {{csv: ../elsewhere/secret.csv}}
            next: after
          - id: after
            type: Set
            set:
              rows: {{csv: /etc/passwd}}
    """)
    found = refusals(path, registry)
    assert [(p.line, p.block, p.field) for p in found] == [
        (6, "start", "inputs.table"), (8, "start", "variables.history"), (13, "after", "set.rows")]


def test_loop_for_each_csv_is_checked_at_load(diagram_at, registry, outside) -> None:
    path = diagram_at("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: loop
          - id: loop
            type: Loop
            with:
              for_each: {csv: ../elsewhere/secret.csv}
            body: echo
          - id: echo
            type: Echo
            with: {value: "{{ item }}"}
            next: loop
    """)
    [problem] = refusals(path, registry)
    assert (problem.line, problem.block, problem.field) == (9, "loop", "with.for_each")


def test_a_file_inside_the_folder_still_reads(diagram_at, registry) -> None:
    path = diagram_at(_with_history("data/h.csv"))
    (path.parent / "data").mkdir()
    (path.parent / "data" / "h.csv").write_text("role,content\nuser,oi\n", encoding="utf-8")
    diagram = load_diagram(path, registry)
    assert diagram.blocks["ask"].static_inputs.history.records() == [{"role": "user", "content": "oi"}]


def test_data_root_allows_a_csv_there(diagram_at, registry, outside) -> None:
    path = diagram_at(_with_history(str(outside.parent / "h.csv")))
    (outside.parent / "h.csv").write_text("role,content\nuser,oi\n", encoding="utf-8")
    diagram = load_diagram(path, registry, data_roots=[outside.parent])
    assert len(diagram.blocks["ask"].static_inputs.history) == 1
    assert refusals(path, registry, data_roots=[path.parent / "other"])


def test_templated_csv_path_is_refused_at_run_time(diagram_at, registry, outside, runner) -> None:
    path = diagram_at("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {path: data.csv}
            variables:
              history: {csv: "{{ path }}"}
    """)
    result = runner.run(path, {"path": "../elsewhere/secret.csv"})
    assert result.status == "failed"
    [error] = result.errors
    assert (error["block"], error["type"]) == ("start", "path_outside_folder")
    assert "leaves the diagram's folder" in error["message"] and SECRET not in error["message"]
    assert SECRET not in result.trace.read_text()


def test_templated_csv_path_into_a_data_root_reads_at_run_time(diagram_at, registry, outside, runner) -> None:
    (outside.parent / "h.csv").write_text("role,content\nuser,oi\n", encoding="utf-8")
    path = diagram_at("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {path: data.csv}
            variables:
              history: {csv: "{{ path }}"}
    """)
    diagram = load_diagram(path, registry, data_roots=[outside.parent])
    result = runner.run(diagram, {"path": str(outside.parent / "h.csv")})
    assert result.status == "succeeded", result.errors


# -- tool registries -------------------------------------------------------------------------

def test_registry_outside_the_folder_is_refused(diagram_at, registry, tmp_path) -> None:
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    (tmp_path / "elsewhere" / "r.yaml").write_text(f"registry: {SECRET}\n: bad yaml [\n", encoding="utf-8")
    path = diagram_at("""
        diagram: d
        tools: [registry/ok.yaml, ../elsewhere/r.yaml]
        blocks:
          - {id: start, type: Start}
    """)
    [problem] = refusals(path, registry)
    assert (problem.file, problem.line, problem.field) == (str(path), 2, "tools")
    assert "tool registry" in problem.message and "leaves the diagram's folder" in problem.message


def test_registry_folder_with_a_link_to_a_file_outside_is_refused(diagram_at, registry, tmp_path) -> None:
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    (tmp_path / "elsewhere" / "r.yaml").write_text(f"registry: {SECRET}\n", encoding="utf-8")
    path = diagram_at("""
        diagram: d
        tools: registry
        blocks:
          - {id: start, type: Start}
    """)
    (path.parent / "registry").mkdir()
    os.symlink(tmp_path / "elsewhere" / "r.yaml", path.parent / "registry" / "r.yaml")
    [problem] = refusals(path, registry)
    assert problem.line == 2


def test_a_missing_registry_inside_the_folder_is_still_reported_on_its_line(diagram_at, registry) -> None:
    path = diagram_at("""
        diagram: d
        tools:
          - ../../../../../etc
          - registry/missing.yaml
        blocks:
          - {id: start, type: Start}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    codes = {(p.code, p.line) for p in caught.value.problems}
    assert ("path_outside_folder", 3) in codes and ("no_registry", 4) in codes


# -- the command line ------------------------------------------------------------------------

def _diagrama(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=cwd,
                          check=False, timeout=120)


@pytest.mark.slow
def test_cli_refuses_then_data_root_allows(diagram_at, tmp_path) -> None:
    data = tmp_path / "shared-data"
    data.mkdir()
    (data / "h.csv").write_text("role,content\nuser,oi\n", encoding="utf-8")
    path = diagram_at(_with_history(str(data / "h.csv")))
    root = Path(__file__).resolve().parents[2]
    refused = _diagrama("validate", str(path), cwd=root)
    assert refused.returncode == 2 and f"{path}:11" in refused.stderr and "leaves the diagram's folder" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _diagrama("validate", str(path), "--data-root", str(data), cwd=root).returncode == 0
    ran = _diagrama("run", str(path), "--offline", "--data-root", str(data), "--runs-dir", str(tmp_path / "runs"),
                    "--output", "json", cwd=root)
    assert ran.returncode == 0, ran.stderr
    refused_run = _diagrama("run", str(path), "--offline", "--runs-dir", str(tmp_path / "runs"), cwd=root)
    assert refused_run.returncode == 2 and "leaves the diagram's folder" in refused_run.stderr


def test_a_template_cannot_read_a_csv_by_adding_it_to_a_table(diagram_at, registry, outside, runner,
                                                              monkeypatch) -> None:
    monkeypatch.chdir(outside.parent.parent)  # even with the working directory above the file
    path = diagram_at("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {path: data.csv}
            variables:
              history: {csv: h.csv}
            next: grow
          - id: grow
            type: Set
            set:
              history: "{{ history + {'csv': path} }}"
    """)
    (path.parent / "h.csv").write_text("role,content\nuser,oi\n", encoding="utf-8")
    for written in ("elsewhere/secret.csv", str(outside)):
        result = runner.run(path, {"path": written})
        assert result.status == "failed"
        [error] = result.errors
        assert error["block"] == "grow" and "cannot read a CSV file" in error["message"]
        assert SECRET not in str(result.variables) and SECRET not in result.trace.read_text()
