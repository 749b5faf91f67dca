"""Tool registries: validation with file:line, selection by similarity, the embedding cache."""

from __future__ import annotations

import http.server
import textwrap
import threading
import uuid
from pathlib import Path

import httpx
import pytest

from engine import DiagramInvalid
from engine.format.yamlfile import LineMap
from engine.tools.embeddings import HashedNgramEmbedder, HttpEmbedder
from engine.tools.ranking import Ranking
from engine.tools.registry import load_registries

HANDLERS = """
def status(order_id: int):
    return {"order_id": order_id, "status": "shipped"}

def boom(order_id: int):
    raise RuntimeError("database is down")

def refund(order_id: int, amount: float):
    return {"refunded": amount}

def priced(order_id: int):  # what a Postgres row gives: numeric, timestamp, uuid, bytea
    import datetime, decimal, uuid
    return {"total": decimal.Decimal("120.50"), "paid_at": datetime.datetime(2025, 3, 1, 9, 30),
            "ref": uuid.UUID(int=1), "raw": b"\\x00\\x01"}

class Opaque:
    pass

def opaque(order_id: int):
    return {"row": Opaque()}
"""


def make_registry(tmp_path: Path, tools: str, *, extra: str = "") -> tuple[Path, str]:
    module = f"handlers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(HANDLERS)
    text = textwrap.dedent(f"""
        registry: shop
        allowed_modules: [{module}]
        groups: {{orders: Orders, billing: Billing}}
        {extra}
        tools:
    """).lstrip() + textwrap.indent(textwrap.dedent(tools.replace("MODULE", module)).strip("\n"), "  ") + "\n"
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    return path, module


def load(tmp_path: Path, path: Path):
    return load_registries(path.name, tmp_path / "diagram.yaml", LineMap(str(tmp_path / "diagram.yaml")))


BASIC = """
- function: get_order_status
  handler: MODULE:status
  group: orders
  description: Returns the status of an order.
  examples: ["Onde está o meu pedido 42?", "Dov'è il mio ordine?", "Where is my order?"]
  parameters: {type: object, properties: {order_id: {type: integer}}, required: [order_id]}
- function: refund_payment
  handler: MODULE:refund
  group: billing
  description: Refunds a payment.
  examples: ["Quero o meu dinheiro de volta", "Voglio un rimborso", "I want a refund"]
  parameters: {type: object, properties: {order_id: {type: integer}, amount: {type: number}}, required: [order_id, amount]}
- function: hidden
  handler: MODULE:status
  group: orders
  enabled: false
  description: Never offered.
"""


def test_registry_problems_name_file_line_and_field(tmp_path: Path) -> None:
    path, _ = make_registry(tmp_path, """
        - function: get_order_status
          handler: MODULE:status
          group: orders
          description: first
        - function: get_order_status
          handler: os:system
          group: order
          description: second
          parameters: {type: object, properties: {x: {type: nonsense}}}
        - function: "bad name!"
          handler: MODULE:status
          group: orders
          description: third
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load(tmp_path, path)
    messages = {(p.line, p.field): p.message for p in caught.value.problems}
    assert all(p.file == str(path) for p in caught.value.problems)
    assert any("duplicate function 'get_order_status'" in m for m in messages.values())
    assert messages[(11, "tools[1].handler")].startswith("handler module 'os' is not in allowed_modules")
    assert "not declared in groups" in messages[(12, "tools[1].group")]
    assert "not a valid JSON Schema" in messages[(14, "tools[1].parameters")]
    assert "Latin letters" in messages[(15, "tools[2].function")]


def test_missing_handler_is_a_load_error(tmp_path: Path) -> None:
    path, _ = make_registry(tmp_path, """
        - function: t
          handler: MODULE:nowhere
          group: orders
          description: d
    """)
    with pytest.raises(DiagramInvalid, match="cannot be loaded"):
        load(tmp_path, path)


def test_disabled_tools_are_never_offered(tmp_path: Path) -> None:
    registry = load(tmp_path, make_registry(tmp_path, BASIC)[0])
    assert [t.name for t, _ in registry.select("orders")] == ["get_order_status"]
    assert registry.get("hidden") is None
    table = registry.template_function()()
    assert [row["name"] for row in table] == ["get_order_status", "refund_payment"]


def test_rules_are_appended_to_the_description(tmp_path: Path) -> None:
    path, _ = make_registry(tmp_path, """
        - function: t
          handler: MODULE:status
          group: orders
          description: Looks an order up.
          rules: Ask for the order number first.
    """)
    table = load(tmp_path, path).template_function()("orders")
    assert table[0]["description"] == "Looks an order up.\n\nRules: Ask for the order number first."


@pytest.mark.parametrize(("query", "expected"), [
    ("Onde está a minha encomenda 42?", "get_order_status"),
    ("Dov'è il mio ordine 17?", "get_order_status"),
    ("where is my order", "get_order_status"),
    ("Quero um reembolso do dinheiro", "refund_payment"),
    ("vorrei il rimborso", "refund_payment"),
    ("please refund me", "refund_payment"),
])
def test_top_k_puts_the_expected_tool_first(tmp_path: Path, query: str, expected: str) -> None:
    registry = load(tmp_path, make_registry(tmp_path, BASIC)[0])
    chosen = registry.select(query=query, top_k=2)
    assert chosen[0][0].name == expected
    assert chosen[0][1].score >= chosen[1][1].score
    assert registry.select(query=query, top_k=2) == chosen  # deterministic


def test_min_score_filters(tmp_path: Path) -> None:
    registry = load(tmp_path, make_registry(tmp_path, BASIC)[0])
    assert registry.select(query="where is my order", min_score=0.99) == []


def test_embeddings_are_cached_by_function_version_and_embedder(tmp_path: Path) -> None:
    path, _ = make_registry(tmp_path, BASIC)
    first = load(tmp_path, path)
    assert first.embedded == 2
    assert path.with_suffix(".embeddings.json").is_file()
    again = load(tmp_path, path)
    assert again.embedded == 0  # same versions: nothing recomputed
    path.write_text(path.read_text().replace("description: Refunds a payment.",
                                             "description: Refunds a card payment.\n    version: 2"))
    bumped = load(tmp_path, path)
    assert bumped.embedded == 1
    assert load(tmp_path, path).embedded == 0


def test_unknown_group_in_tools_function(tmp_path: Path) -> None:
    registry = load(tmp_path, make_registry(tmp_path, BASIC)[0])
    with pytest.raises(Exception, match="no tool group 'ordres'"):
        registry.template_function()("ordres")


def test_hashed_embedder_is_deterministic_and_normalised() -> None:
    embedder = HashedNgramEmbedder()
    first, second = embedder.embed(["Olá, tudo bem?", "Olá, tudo bem?"])
    assert (first == second).all()
    assert abs(float((first * first).sum()) - 1) < 1e-5


def test_http_embedder_speaks_the_embeddings_endpoint() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": [{"index": 1, "embedding": [0, 2]}, {"index": 0, "embedding": [3, 4]}]})

    embedder = HttpEmbedder("https://emb.test", "text-embed-1", "k", transport=httpx.MockTransport(handler))
    vectors = embedder.embed(["a", "b"])
    assert seen[0].url == "https://emb.test/v1/embeddings" and seen[0].headers["authorization"] == "Bearer k"
    assert vectors.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 1.0]]
    assert embedder.name == "http-text-embed-1"


def test_standard_tools_can_be_included(tmp_path: Path) -> None:
    path, _ = make_registry(tmp_path, BASIC, extra="standard_tools: [calculator, current_datetime]")
    registry = load(tmp_path, path)
    assert registry.get("calculator").handler()(expression="(12.5 * 3) / 4")["result"] == 9.375
    with pytest.raises(ValueError):
        registry.get("calculator").handler()(expression="__import__('os')")


@pytest.mark.parametrize("expression", ["(9**99)**99", "(((9**99)**99)**99)**99", "10**99*" * 60 + "1",
                                        "-(10**99)**41"])
def test_calculator_refuses_results_past_its_size_limit_before_computing(expression: str) -> None:
    from engine.tools.standard import calculator

    with pytest.raises(ValueError, match=r"result too large \(more than 4,000 digits\)"):
        calculator(expression)


def test_calculator_keeps_exact_results_up_to_the_limit_and_refuses_past_it() -> None:
    from engine.tools.standard import calculator

    assert calculator("(10**99)**40")["result"] == 10 ** 3960
    assert calculator("9**99*9**99")["result"] == 9 ** 198
    assert calculator("2**-2 * 1.5")["result"] == 0.375
    with pytest.raises(ValueError, match="result too large"):
        calculator("(10**99)**40 * 10**99")


def test_a_handler_that_ignores_its_cancellation_still_times_out() -> None:
    import asyncio

    from engine.tools import HandlerTimeout, call_handler

    async def deaf() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # swallowed: asyncio.timeout would wait for this, then return the result
        return "late"

    async def call() -> object:
        return await call_handler(deaf, {}, timeout=0.1, name="deaf")

    with pytest.raises(HandlerTimeout):
        asyncio.run(call())


def test_scores_travel_with_the_rows_when_two_selections_are_joined(tmp_path: Path) -> None:
    import asyncio
    import json
    import shutil

    from blocks.registry import registry
    from engine import Services
    from engine.compile.loader import load_diagram
    from engine.runtime.execute import execute

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "diagrams", tmp_path / "diagrams")
    path = tmp_path / "diagrams" / "order_agent.yaml"
    text = path.read_text()
    joined = "{{ tools('orders', query=question, top_k=2) + tools('catalogue', query=question, top_k=1) }}"
    path.write_text(text.replace("{{ tools('orders', query=question, top_k=3) }}", joined))
    diagram = load_diagram(path, registry())
    result = asyncio.run(execute(diagram, runs_dir=tmp_path / "runs", services=Services(environ={}, offline=True)))
    assert result.status == "succeeded", result.errors
    assert result.trace is not None
    events = [json.loads(line) for line in result.trace.read_text().splitlines()]
    selected = [e for e in events if e["event"] == "tools_selected"]
    assert selected and len(selected[0]["tools"]) == 3
    for tool in selected[0]["tools"]:
        assert set(tool) == {"name", "score", "lexical", "embedding"}
        assert all(0 <= tool[part] <= 1 for part in ("score", "lexical", "embedding"))
        share = Ranking().lexical_weight
        assert tool["score"] == pytest.approx(share * tool["lexical"] + (1 - share) * tool["embedding"], abs=1e-5)


@pytest.mark.parametrize(("parameters", "message"), [
    ("{type: object, properties: {x: {type: nonsense}}}",
     "parameters is not a valid JSON Schema: \"nonsense\" is not valid under any of the schemas listed in the 'anyOf' "
     "keyword (at properties.x.type)"),
    ("{type: object, required: order_id}",
     "parameters is not a valid JSON Schema: \"order_id\" is not of type \"array\" (at required)"),
    ("{type: object, properties: {n: {type: string, minLength: -1}}}",
     "parameters is not a valid JSON Schema: -1 is less than the minimum of 0 (at properties.n.minLength)"),
    ("{type: array, items: {type: string}}",
     "parameters is not a valid JSON Schema: the top level must be 'type: object'"),
    ("[1, 2]", "Input should be a valid dictionary"),  # the registry's own model refuses it first
])
def test_a_tools_parameters_must_be_a_json_schema_of_an_object(tmp_path: Path, parameters: str, message: str) -> None:
    path, _ = make_registry(tmp_path, f"""
        - function: t
          handler: MODULE:status
          group: orders
          description: d
          parameters: {parameters}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load(tmp_path, path)
    assert [p.field for p in caught.value.problems] == ["tools[0].parameters"]
    assert message in caught.value.problems[0].message


@pytest.mark.slow
def test_a_schemas_own_schema_uri_is_never_fetched(tmp_path: Path) -> None:
    hits: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the standard library's name
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        uri = f"http://127.0.0.1:{server.server_port}/meta"
        path, _ = make_registry(tmp_path, f"""
            - function: t
              handler: MODULE:status
              group: orders
              description: d
              parameters: {{"$schema": "{uri}", type: object, properties: {{x: {{type: string}}}}}}
        """)
        registries = load(tmp_path, path)
    finally:
        server.shutdown()
        server.server_close()
    assert hits == [] and registries.tools["t"].entry.parameters["$schema"] == uri  # checked as draft 2020-12, kept
