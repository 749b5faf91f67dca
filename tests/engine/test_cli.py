"""The command line: exit codes, JSON output on stdout, errors on stderr."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from engine.cli import app

ROOT = Path(__file__).resolve().parents[2]
cli = CliRunner()


def test_run_output_json_is_exactly_one_object(tmp_path: Path) -> None:
    result = cli.invoke(app, ["run", str(ROOT / "diagrams/greeting_counter.yaml"), "--input", "times=2",
                              "--input", "name=Giulia", "--runs-dir", str(tmp_path), "--output", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {"run_id", "status", "variables", "path", "errors", "trace", "cost", "usage",
                            "usage_by_block"}
    assert payload["cost"] == {"usd": 0.0, "requests": 0, "unknown_steps": 0} and payload["usage"] == {}  # no request
    assert payload["usage_by_block"] == {}
    assert payload["variables"]["greeting"] == "Olá, Giulia! Counted to 2."
    assert payload["path"] == ["start", "count", "count", "greet"]
    assert Path(payload["trace"]).is_file()


def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    result = cli.invoke(app, ["run", str(ROOT / "diagrams/greeting_counter.yaml"), "--input", "tims=2",
                              "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "did you mean 'times'?" in result.stderr
    wrong_type = cli.invoke(app, ["run", str(ROOT / "diagrams/greeting_counter.yaml"), "-i", "times=many"])
    assert wrong_type.exit_code == 2 and "whole number" in wrong_type.stderr


def test_failed_run_exits_1(write, tmp_path: Path) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, max_steps: 3, next: loop}
          - {id: loop, type: Set, next: [{to: loop, when: "{{ true }}"}]}  # a loop validation cannot rule out
    """)
    result = cli.invoke(app, ["run", str(path), "--runs-dir", str(tmp_path), "--output", "json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["errors"][0]["type"] == "step_limit_reached"


def test_validate_lists_every_problem_and_exits_2(write) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: ask}
          - {id: ask, type: ClaudRequest}
          - {id: x, type: Set, set: {a: "{{ qustion }}"}}
    """)
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith(str(path))]
    assert len(lines) >= 3
    assert f"{path}:4:" in result.stderr and "unknown block type 'ClaudRequest'" in result.stderr


def test_validate_passes_the_examples() -> None:
    result = cli.invoke(app, ["validate", *map(str, sorted((ROOT / "diagrams").glob("*.yaml")))])
    assert result.exit_code == 0, result.output


def test_schema_is_valid_json_schema_and_accepts_the_examples() -> None:
    result = cli.invoke(app, ["schema"])
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted((ROOT / "diagrams").glob("*.yaml")):
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path, errors[:1])
    assert list(validator.iter_errors({"diagram": "d", "blocks": [{"id": "a", "type": "Nope"}]}))


def test_graph_draws_mermaid_and_dot(write) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: a, on_error: b}
          - {id: a, type: Set, next: [{to: b, when: "{{ true }}"}]}
          - {id: b, type: Set}
    """)
    mermaid = cli.invoke(app, ["graph", str(path)]).stdout
    assert mermaid.startswith("flowchart TD") and "start -.->|on_error| b" in mermaid and "a -->|true| b" in mermaid
    dot = cli.invoke(app, ["graph", str(path), "--format", "dot"]).stdout
    assert dot.startswith("digraph") and '"start" -> "b" [label="on_error", style=dashed];' in dot


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("diagrama") is None, reason="the console script is not installed")
def test_console_script_runs_as_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run(["diagrama", "run", str(ROOT / "diagrams/greeting_counter.yaml"), "--runs-dir",
                           str(tmp_path), "--output", "json"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"
    assert "run succeeded" in done.stderr
    assert sys.executable


def test_published_schemas_are_current() -> None:
    for kind, name in (("diagram", "diagram.schema.json"), ("scenario", "scenario.schema.json")):
        current = cli.invoke(app, ["schema", "--kind", kind]).stdout
        assert json.loads((ROOT / name).read_text()) == json.loads(current), f"run: diagrama schema --kind {kind} > {name}"


def _diagrama_without(modules: list[str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`diagrama ARGS` in a fresh interpreter where `modules` cannot be imported, as if their extra were not installed."""
    shim = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in modules)
    shim += "from engine.cli import main\nsys.argv = ['diagrama', *sys.argv[1:]]\nmain()\n"
    return subprocess.run([sys.executable, "-c", shim, *args], capture_output=True, text=True, check=False, cwd=cwd)


@pytest.mark.slow
def test_a_command_whose_extra_is_missing_names_the_extra_to_install(tmp_path: Path) -> None:
    cases = [
        (["starlette"], ["serve", str(ROOT / "diagrams")], "diagrama serve needs the web extra: pip install 'diagrama[web]'"),
        (["uvicorn"], ["serve", str(ROOT / "diagrams")], "diagrama serve needs the web extra: pip install 'diagrama[web]'"),
        (["sqlalchemy"], ["batch", str(ROOT / "diagrams/greeting_counter.yaml"), "--inputs", "rows.csv"],
         "diagrama batch needs the batch extra: pip install 'diagrama[batch]'"),
        (["celery"], ["batch", str(ROOT / "diagrams/greeting_counter.yaml"), "--inputs", "rows.csv", "--backend", "celery"],
         "diagrama batch --backend celery needs the celery extra: pip install 'diagrama[celery]'"),
        (["celery"], ["worker"], "diagrama worker needs the celery extra: pip install 'diagrama[celery]'"),
    ]
    for missing, args, message in cases:
        done = _diagrama_without(missing, *args)
        assert done.returncode == 2, (missing, done.stderr)
        assert done.stderr.strip() == message
        assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_core_commands_need_no_extra(tmp_path: Path) -> None:
    extras = ["sqlalchemy", "celery", "starlette", "uvicorn", "ruamel"]
    done = _diagrama_without(extras, "run", str(ROOT / "diagrams/greeting_counter.yaml"), "--runs-dir", str(tmp_path),
                             "--output", "json", "--quiet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"
    # Checkpoints need only the standard library's sqlite3: the run is durable; the SQLAlchemy run store is not made.
    import sqlite3

    with contextlib.closing(sqlite3.connect(tmp_path / "diagrama.db")) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "run_states" in tables and "runs" not in tables
    listed = _diagrama_without(extras, "runs", "--runs-dir", str(tmp_path))
    assert listed.returncode == 0 and json.loads(done.stdout)["run_id"] in listed.stdout, listed.stderr
    shown = _diagrama_without(extras, "trace", "last", "--runs-dir", str(tmp_path))
    assert shown.returncode == 0 and "run succeeded" in shown.stdout, shown.stderr


def test_help_imports_no_engine_layer() -> None:
    probe = ("import sys\nfrom engine.cli import app\n"
             "heavy = ('engine.compile', 'engine.runtime', 'engine.providers', 'engine.runs', 'engine.web', 'blocks',"
             " 'networkx', 'pydantic', 'sqlalchemy', 'celery', 'starlette', 'uvicorn', 'rich')\n"
             "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_help_lists_every_command_and_imports_none_of_them() -> None:
    probe = ("import sys\nsys.argv = ['diagrama', '--help']\nfrom engine.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('LOADED', sorted(m for m in sys.modules if m.startswith(('engine.cli.', 'engine.compile', "
             "'engine.runtime', 'engine.runs', 'engine.web', 'blocks', 'typer', 'rich'))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    listed, loaded = done.stdout.split("LOADED")
    assert loaded.strip() == "[]"  # not one command group, not rich, not typer
    from engine.cli import COMMANDS

    for name in COMMANDS:
        assert f"  {name} " in listed


def test_the_command_table_says_what_each_command_says_of_itself() -> None:
    import importlib

    from engine.cli import COMMANDS, LEVELS
    from engine.format.levels import DEFAULT, MESSAGE_LEVELS

    for name, (target, short) in COMMANDS.items():
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert command.name == name
        assert (command.help or "").split("\n\n")[0].replace("\n", " ").strip() == short, name
    assert list(LEVELS) == [name for name in MESSAGE_LEVELS if name != DEFAULT]
