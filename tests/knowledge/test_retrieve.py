"""Retrieve end to end (the policy bot offline), `cite`, knowledge declarations' load errors, and `diagrama index`."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import app
from engine.compile.block import BlockRegistry
from engine.compile.loader import load_diagram
from engine.errors import DiagramInvalid, Problem
from engine.format.citations import cite
from engine.format.tables import DataTable
from engine.runtime.context import Services
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def policy_bot(tmp_path: Path) -> Path:
    """The example robot and its documents, copied: its index is written beside the copy."""
    shutil.copytree(ROOT / "diagrams" / "kb", tmp_path / "kb", ignore=shutil.ignore_patterns(".diagrama-index*"))
    return Path(shutil.copy(ROOT / "diagrams" / "policy_bot.yaml", tmp_path / "policy_bot.yaml"))


def problems(path: Path, registry: BlockRegistry) -> list[Problem]:
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    return caught.value.problems


def test_the_policy_bot_answers_offline_from_cited_passages(policy_bot: Path, runner: Runner) -> None:
    services = Services(offline=True)
    result = runner.run(policy_bot, {"question": "How many days do I have to return an item?"}, services=services)
    assert result.status == "succeeded", result.errors
    passages = result.variables["passages"]
    assert isinstance(passages, DataTable)
    assert passages.columns == ("text", "source", "line", "page", "score", "lexical", "embedding", "metadata")
    first = passages.records()[0]
    assert (first["source"], first["line"], first["page"]) == ("refunds.md", 8, None)
    assert "30 days" in first["text"] and first["metadata"]["headings"] == "Refunds and returns > How long you have"
    assert 1 >= first["score"] >= 0.1 and 0 <= first["lexical"] <= 1
    # The prompt numbered the passages with their sources.
    assert services.simulator is not None
    [request] = services.simulator.requests
    prompt = str(request.messages()[-1]["content"])
    assert prompt.startswith("Passages:\n[1] ## How long you have You may return any item within 30 days")
    assert "(source: refunds.md, line 8)\n\n[2] " in prompt and prompt.endswith("Question: How many days do I "
                                                                                "have to return an item?")
    [event] = [e for e in runner.events(result) if e["event"] == "passages_retrieved"]
    assert event["knowledge"] == "policies" and event["block"] == "search"
    traced = event["passages"][0]
    assert {key: traced[key] for key in ("source", "line", "page", "score", "lexical", "embedding")} == {
        key: first[key] for key in ("source", "line", "page", "score", "lexical", "embedding")}
    assert " ".join(first["text"].split()).startswith(traced["text"].rstrip("…")) and len(traced["text"]) <= 240


def test_a_release_run_does_not_trace_the_passages(policy_bot: Path, runner: Runner) -> None:
    from engine.format.levels import MessageLevel

    result = runner.run(policy_bot, {"question": "shipping"}, services=Services(offline=True),
                        message_level=MessageLevel.RELEASE)
    assert not [e for e in runner.events(result) if e["event"] == "passages_retrieved"]


def test_a_filter_keeps_passages_by_metadata(write: Callable[..., Path], policy_bot: Path, runner: Runner) -> None:
    text = policy_bot.read_text(encoding="utf-8").replace("      min_score: 0.1\n",
                                                          "      min_score: 0\n      filter: {lang: pt}\n")
    policy_bot.write_text(text, encoding="utf-8")
    result = runner.run(policy_bot, {"question": "returns"}, services=Services(offline=True))
    assert {row["source"] for row in result.variables["passages"]} <= {"devolucoes.md", "products.csv"}


def test_cite_numbers_passages_with_their_sources() -> None:
    table = DataTable(("text", "source", "line", "page"), [("Returns within\n30 days.", "refunds.md", 12, None),
                                                           ("Page text.", "terms.pdf", None, 3)])
    assert cite(table) == ("[1] Returns within 30 days. (source: refunds.md, line 12)\n\n"
                           "[2] Page text. (source: terms.pdf, page 3)")
    assert cite(table, start=3).startswith("[3] ")
    assert cite([]) == "" and cite(None) == ""


def test_knowledge_problems_name_file_line_and_field(write: Callable[..., Path], registry: BlockRegistry,
                                                     tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path.parent / "elsewhere").mkdir(exist_ok=True)
    path = write("""
        diagram: kb
        knowledge:
          policies:
            folder: kb
            chunks: {size: 500}
          outside:
            folder: ../elsewhere
          missing:
            folder: nowhere
          cut:
            folder: kb
            chunk: {size: 100, overlap: 80}
        blocks:
          - id: start
            type: Start
            next: search
          - id: search
            type: Retrieve
            with: {knowledge: polices, query: refunds}
    """)
    found = {(p.line, p.field, p.code): p for p in problems(path, registry)}
    assert set(found) == {(5, "knowledge.policies.chunks", "unknown_key"),
                          (7, "knowledge.outside.folder", "path_outside_folder"),
                          (9, "knowledge.missing.folder", "no_knowledge_folder"),
                          (12, "knowledge.cut.chunk", "value_error"),
                          (19, "with.knowledge", "unknown_knowledge")}
    unknown = found[(19, "with.knowledge", "unknown_knowledge")]
    assert unknown.block == "search" and unknown.hint == "did you mean 'policies'?"
    assert "leaves the diagram's folder" in found[(7, "knowledge.outside.folder", "path_outside_folder")].message
    assert str(path) in str(unknown)


def test_a_registry_file_declares_knowledge_for_the_diagrams_that_name_it(write: Callable[..., Path],
                                                                         registry: BlockRegistry,
                                                                         runner: Runner, tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "hours.txt").write_text("We open at nine and close at five.", encoding="utf-8")
    write("""
        registry: shared
        knowledge:
          shop: {folder: ../kb, include: ["*.txt"]}
          broken: {folder: ../kb, size: 3}
    """, "registry/shared.yaml")
    path = write("""
        diagram: kb
        tools: registry/shared.yaml
        blocks:
          - {id: start, type: Start, next: search}
          - id: search
            type: Retrieve
            with: {knowledge: shop, query: "when do you open?"}
            set: {found: "{{ result[0].text }}"}
    """)
    [problem] = problems(path, registry)
    assert (Path(problem.file).name, problem.line, problem.field) == ("shared.yaml", 4, "knowledge.broken.size")
    (tmp_path / "registry" / "shared.yaml").write_text(
        "registry: shared\nknowledge:\n  shop: {folder: ../kb, include: ['*.txt']}\n", encoding="utf-8")
    result = runner.run(path, services=Services(offline=True))
    assert result.variables["found"] == "We open at nine and close at five."


def test_diagrama_index_builds_then_updates_only_what_changed(policy_bot: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    first = cli.invoke(app, ["index", str(policy_bot)])
    assert first.exit_code == 0, first.output
    assert first.output.startswith("policies: 5 files (5 added, 0 changed, 0 removed, 0 unchanged) · 12 chunks "
                                   "(12 embedded now) · ")
    assert first.output.rstrip().endswith("→ kb/.diagrama-index.sqlite")
    (tmp_path / "kb" / "envios.txt").unlink()
    second = cli.invoke(app, ["index", str(policy_bot)])
    assert "(0 added, 0 changed, 1 removed, 4 unchanged) · 11 chunks (0 embedded now)" in second.output


def test_diagrama_index_takes_a_registry_file_and_refuses_one_without_knowledge(write: Callable[..., Path],
                                                                               tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nSome text.\n", encoding="utf-8")
    registry_file = write("registry: r\nknowledge:\n  docs: {folder: docs}\n", "r.yaml")
    done = CliRunner().invoke(app, ["index", str(registry_file)])
    assert done.exit_code == 0 and done.output.startswith("docs: 1 files (1 added"), done.output
    bare = write("registry: r\n", "bare.yaml")
    refused = CliRunner().invoke(app, ["index", str(bare)])
    assert refused.exit_code == 2 and "declares no knowledge bases" in refused.output
    outside = write("registry: r\nknowledge:\n  docs: {folder: /}\n", "outside.yaml")
    refused = CliRunner().invoke(app, ["index", str(outside)])
    assert refused.exit_code == 2 and "outside.yaml:3: field 'knowledge.docs.folder'" in refused.output
