"""`diagrama publish`, `versions` and `rollback`: what a version pins (the diagram and every file its load reads),
what it links and hashes (code), and what is refused (a diagram with errors, a version that does not exist)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from engine.cli import app, blocks_registry
from engine.compile.loader import load_diagram
from engine.runs.published import (
    code_changes,
    draft_matches,
    live_version,
    publish,
    published_number,
    robot_folder,
    versions,
)

ROOT = Path(__file__).resolve().parents[2]
cli = CliRunner()


def _diagrams(tmp_path: Path) -> Path:
    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns(".diagrama", "__pycache__"))
    return folder


def test_publish_pins_the_diagram_its_children_tables_registries_and_schema_files(tmp_path: Path) -> None:
    folder = _diagrams(tmp_path)
    registry = blocks_registry()
    triage = publish(folder / "triage_inbox.yaml", registry, note="first", author="ana")
    assert triage.number == 1 and triage.note == "first" and triage.author == "ana"
    assert set(triage.files) == {"triage_inbox.yaml", "classify_one.yaml", "data/customer_messages.csv"}
    agent = publish(folder / "order_agent.yaml", registry)
    assert {"order_agent.yaml", "registry/orders.yaml"} <= set(agent.files)
    assert set(agent.modules) == {"shop/tools.py"}  # code is hashed and linked, not copied
    assert (agent.folder / "shop").is_symlink() and not (agent.folder / "shop" / "tools.py").is_symlink()
    plan = publish(folder / "plan_and_execute.yaml", registry)
    assert set(plan.files) == {"plan_and_execute.yaml", "schemas/plan.json"}
    bot = publish(folder / "policy_bot.yaml", registry)
    assert "kb/refunds.md" in bot.files  # a knowledge folder's documents
    manifest = json.loads((triage.folder / "manifest.json").read_text())
    assert manifest["number"] == 1 and manifest["files"]["classify_one.yaml"] == triage.files["classify_one.yaml"]
    loaded = load_diagram(triage.diagram, registry)  # the copy loads on its own, inside its folder
    assert loaded.path.resolve().is_relative_to(triage.folder.resolve())
    assert robot_folder(triage.diagram.resolve()) == folder.resolve() and published_number(triage.diagram) == 1
    assert robot_folder(folder / "triage_inbox.yaml") == folder and published_number(folder / "x.yaml") is None


def test_a_version_is_live_until_the_next_and_the_draft_is_told_apart(tmp_path: Path) -> None:
    folder = _diagrams(tmp_path)
    registry = blocks_registry()
    diagram = folder / "classify_one.yaml"
    first = publish(diagram, registry)
    assert draft_matches(diagram, first)
    diagram.write_text(diagram.read_text() + "\n# an edit\n")
    assert not draft_matches(diagram, first) and live_version(diagram) == first
    second = publish(diagram, registry)
    assert live_version(diagram) == second and second.number == 2 and draft_matches(diagram, second)
    assert (first.folder / "classify_one.yaml").read_text() != (second.folder / "classify_one.yaml").read_text()


def test_handler_code_changed_since_publishing_is_named(tmp_path: Path) -> None:
    folder = _diagrams(tmp_path)
    version = publish(folder / "order_agent.yaml", blocks_registry())
    assert code_changes(version) == []
    tools = folder / "shop" / "tools.py"
    tools.write_text(tools.read_text() + "\n# changed\n")
    assert code_changes(version) == ["shop/tools.py"]


def test_the_commands_publish_list_and_roll_back(tmp_path: Path) -> None:
    folder = _diagrams(tmp_path)
    diagram = str(folder / "classify_one.yaml")
    published = cli.invoke(app, ["publish", diagram, "-m", "first cut"])
    assert published.exit_code == 0, published.output
    assert "published classify_one.yaml v1" in published.output
    (folder / "classify_one.yaml").write_text((folder / "classify_one.yaml").read_text() + "\n# two\n")
    assert cli.invoke(app, ["publish", diagram]).exit_code == 0
    listed = cli.invoke(app, ["versions", diagram])
    assert "v1" in listed.output and "first cut" in listed.output and "v2" in listed.output
    assert listed.output.splitlines()[1].endswith("live") and "equals the live version" in listed.output
    rolled = cli.invoke(app, ["rollback", diagram, "1"])
    assert rolled.exit_code == 0 and "v3 is live" in rolled.output
    rows = [json.loads(line) for line in cli.invoke(app, ["versions", diagram, "--json"]).output.splitlines()]
    assert [(row["number"], row["rollback_of"], row["live"]) for row in rows] == [(1, None, False), (2, None, False),
                                                                                 (3, 1, True)]
    assert (versions(folder / "classify_one.yaml")[-1].folder / "classify_one.yaml").read_text() == \
        (versions(folder / "classify_one.yaml")[0].folder / "classify_one.yaml").read_text()
    missing = cli.invoke(app, ["rollback", diagram, "9"])
    assert missing.exit_code == 2 and "no version 9" in missing.output


def test_a_diagram_with_errors_is_not_published(tmp_path: Path) -> None:
    folder = tmp_path / "robots"
    folder.mkdir()
    (folder / "bad.yaml").write_text("diagram: bad\nblocks:\n  - id: start\n    type: Start\n    next: nowhere\n")
    refused = cli.invoke(app, ["publish", str(folder / "bad.yaml")])
    assert refused.exit_code == 2 and "nowhere" in refused.output
    assert versions(folder / "bad.yaml") == [] and not (folder / ".diagrama" / "versions" / "bad").exists()


def test_an_eval_compares_the_draft_with_the_published_version(tmp_path: Path) -> None:
    folder = _diagrams(tmp_path)
    assert cli.invoke(app, ["publish", str(folder / "triage_inbox.yaml")]).exit_code == 0
    eval_file = str(folder / "evals" / "triage_inbox.eval.yaml")
    compared = cli.invoke(app, ["eval", eval_file, "--offline", "--against", "published", "--output", "json",
                                "--runs-dir", str(tmp_path / "runs"), "--cache", "off"])
    assert compared.exit_code in (0, 1), compared.output
    result = json.loads(compared.stdout)
    assert result["against"]["revision"] == "published v1"
    assert result["against"]["summary"]["diagram"] == "published v1:triage_inbox.yaml"
    assert cli.invoke(app, ["eval", eval_file, "--offline", "--against", "v1", "--output", "json", "--runs-dir",
                            str(tmp_path / "runs"), "--cache", "off"]).exit_code in (0, 1)
    never = cli.invoke(app, ["eval", str(folder / "evals" / "order_agent.eval.yaml"), "--offline", "--against",
                             "published", "--runs-dir", str(tmp_path / "runs"), "--cache", "off"])
    assert never.exit_code == 2 and "never published" in never.output
