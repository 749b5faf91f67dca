"""A registry tool of kind `knowledge:` (engine.tools.knowledge_tools): offered to a model, searched by ToolDispatch
as Retrieve searches (blocks/_knowledge_tool.py), refused at load when its base is unknown."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.compile.block import BlockRegistry
from engine.compile.loader import load_diagram
from engine.errors import DiagramInvalid
from engine.providers import Simulator
from engine.runs.trace_steps import steps
from engine.runtime.context import Services
from engine.tools.knowledge_tools import KNOWLEDGE_PARAMETERS, knowledge_answer
from engine.tools.registry import ToolEntry
from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]

REGISTRY = """
registry: policies
tools:
  - function: search_policies
    knowledge: {base}
    description: Searches the shop's policy documents (refunds, returns, shipping) for passages that answer a question.
"""

AGENT = """
diagram: policy-tool-agent
tools: registry.yaml
knowledge:
  policies: {folder: kb, include: ["*.md", "*.txt", "*.csv"]}
blocks:
  - id: start
    type: Start
    message_level: Debug
    max_steps: 10
    inputs: {question: "How many days do I have to return an item?"}
    variables: {history: []}
    next: ask
  - id: ask
    type: ClaudeRequest
    with:
      model: claude-sonnet-5-5
      request: "{{ question if history | length == 0 else '' }}"
      history: "{{ history }}"
      tools: "{{ tools() }}"
    set: {answer: "{{ result }}", history: "{{ history }}", calls: "{{ called_tools }}"}
    next:
      - to: dispatch
        when: "{{ called_tools | length > 0 }}"
      - to: done
  - id: dispatch
    type: ToolDispatch
    with: {calls: "{{ calls }}", history: "{{ history }}"}
    set: {history: "{{ history }}", results: "{{ results }}"}
    next: ask
  - id: done
    type: Set
"""


@pytest.fixture
def agent(tmp_path: Path) -> Callable[..., Path]:
    shutil.copytree(ROOT / "diagrams" / "kb", tmp_path / "kb", ignore=shutil.ignore_patterns(".diagrama-index*"))

    def write(base: str = "policies", registry: str = REGISTRY) -> Path:
        (tmp_path / "registry.yaml").write_text(registry.format(base=base).lstrip(), encoding="utf-8")
        path = tmp_path / "agent.yaml"
        path.write_text(AGENT.lstrip(), encoding="utf-8")
        return path

    return write


def test_a_knowledge_entry_gets_a_query_schema_unless_it_writes_one() -> None:
    entry = ToolEntry.model_validate({"function": "f", "knowledge": "policies", "description": "d"})
    assert entry.parameters == KNOWLEDGE_PARAMETERS and entry.parameters["required"] == ["query"]
    assert set(entry.parameters["properties"]) == {"query", "top_k"}
    own = {"type": "object", "properties": {"query": {"type": "string"}}}
    assert ToolEntry.model_validate({"function": "f", "knowledge": "p", "description": "d", "parameters": own}
                                    ).parameters == own
    with pytest.raises(ValueError, match="a handler, an http call or a knowledge base"):
        ToolEntry.model_validate({"function": "f", "knowledge": "p", "handler": "m:f", "description": "d"})


def test_the_model_calls_the_knowledge_tool_and_reads_cited_passages(agent: Callable[..., Path],
                                                                     runner: Runner) -> None:
    diagram = runner.load(agent())
    simulator = Simulator({"ask": [
        {"tool_calls": [{"id": "c1", "name": "search_policies", "arguments": {"query": "return an item refund days",
                                                                              "top_k": 2}}]},
        {"text": "You have 30 days [1]."}]})
    result = runner.run(diagram, services=Services(offline=True, simulator=simulator))
    assert result.status == "succeeded", result.errors
    assert result.path == ["start", "ask", "dispatch", "ask", "done"]
    # Offered with its generated schema.
    first = simulator.requests[0].body
    [offered] = first["tools"]
    assert offered["name"] == "search_policies" and offered["input_schema"]["required"] == ["query"]
    # The result: passages cited as `cite` cites them, and their sources.
    answer = result.variables["results"]["c1"]
    assert answer["passages"].startswith("[1] ## How long you have You may return any item within 30 days")
    assert "(source: refunds.md, line 8)" in answer["passages"] and "\n\n[2] " in answer["passages"]
    assert answer["sources"][0] == {"n": 1, "source": "refunds.md", "line": 8, "score": answer["sources"][0]["score"]}
    assert len(answer["sources"]) == 2 and 0 < answer["sources"][0]["score"] <= 1
    # The model read it as the tool's row.
    messages = simulator.requests[1].messages()
    [row] = [message for message in messages if message["role"] == "tool"]
    assert row["name"] == "search_policies" and json.loads(str(row["content"])) == answer
    # Traced as Retrieve traces it.
    [event] = [e for e in runner.events(result) if e["event"] == "passages_retrieved"]
    assert (event["block"], event["knowledge"], event["tool"]) == ("dispatch", "policies", "search_policies")
    assert event["passages"][0]["source"] == "refunds.md" and len(event["passages"]) == 2
    # The run view's step carries them (engine.runs.trace_steps).
    [dispatch] = [step for step in steps(runner.events(result)) if step.block == "dispatch"]
    top = dispatch.passages[0]
    assert (top.knowledge, top.source, top.line) == ("policies", "refunds.md", 8)
    assert dispatch.passages[0].text.startswith("## How long you have You may return any item within 30 days")
    assert dispatch.passages[0].query == "return an item refund days" and dispatch.passages[0].score


def test_a_query_nothing_matches_says_so(agent: Callable[..., Path], runner: Runner) -> None:
    assert knowledge_answer([]) == {"passages": "no passage matches the query", "sources": []}
    assert knowledge_answer([{"text": "p", "source": "a.pdf", "page": 3, "line": None, "score": 0.5}])["sources"] == [
        {"n": 1, "source": "a.pdf", "page": 3, "score": 0.5}]


def test_an_unknown_knowledge_base_is_refused_at_its_line(agent: Callable[..., Path], registry: BlockRegistry) -> None:
    path = agent(base="polices")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = caught.value.problems
    assert problem.code == "unknown_knowledge" and problem.file == str(path.parent / "registry.yaml")
    assert problem.line == 4 and "no knowledge base 'polices'" in problem.message
    assert problem.hint is not None and "policies" in problem.hint


def test_a_knowledge_tool_needs_a_string_query(agent: Callable[..., Path], registry: BlockRegistry) -> None:
    own = REGISTRY + "    parameters: {{type: object, properties: {{q: {{type: string}}}}}}\n"
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(agent(registry=own), registry)
    assert [p.code for p in caught.value.problems] == ["invalid_tool"]
    assert "string 'query'" in caught.value.problems[0].message
