"""Registry tools of kind `http:`: checked at load (hosts, templates, secrets) with file and line, called through
HttpRequest's own code by ToolDispatch (arguments templated and URL-encoded, secrets redacted, an error status, a
refused host or redirect as the tool's error the model reads), and offline as HttpRequest is.

The far side is a fake weather API at the wire: an `httpx.MockTransport` over a plain function, given to the run as
`Services.transports["http"]`, as tests/blocks/test_http_request.py does. ToolDispatch is given its calls literally,
as a model's `called_tools` would be.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine import DiagramInvalid, Services
from engine.compile.loader import load_diagram

ROOT = Path(__file__).resolve().parents[2]
KEY = "wk-5ecret/Key+with&odd=chars"
"""A key with characters a URL must escape: found in no output, in any of its forms."""


class Weather:
    """A fake weather API: echoes what it was sent, or answers from `script` by path."""

    def __init__(self, script: dict[str, httpx.Response] | None = None) -> None:
        self.script = script or {}
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.seen.append(request)
        if request.url.path in self.script:
            return self.script[request.url.path]
        return httpx.Response(200, json={"url": str(request.url), "authorization": request.headers.get("authorization"),
                                         "body": request.content.decode(), "temperature": 21.5})

    def services(self, **options: Any) -> Services:
        return Services(environ={"WEATHER_KEY": KEY}, transports={"http": httpx.MockTransport(self)}, **options)


REGISTRY = """\
registry: weather
secrets: [WEATHER_KEY]
tools:
  - function: get_weather
    description: Current weather for a city
    parameters:
      type: object
      properties: {{city: {{type: string}}, units: {{type: string}}}}
      required: [city]
    http:
      method: {method}
      url: "{url}"
      headers: {{Authorization: "Bearer {{{{ secret('WEATHER_KEY') }}}}"}}
{extra}      allowed_hosts: [api.weather.test]
      retries: 0
"""


def agent(write: Any, *, url: str = "https://api.weather.test/v1/now?city={{ city | urlencode }}", method: str = "GET",
          extra: str = "", calls: str = "[{id: c1, name: get_weather, arguments: {city: 'São Paulo & Co'}}]",
          top: str = "") -> Path:
    write(REGISTRY.format(url=url, method=method, extra=extra), "registry/weather.yaml")
    path: Path = write(f"""
        diagram: weather
        tools: registry/weather.yaml
        {top}
        blocks:
          - id: start
            type: Start
            message_level: Detailed
            variables: {{history: []}}
            next: dispatch
          - id: dispatch
            type: ToolDispatch
            with: {{calls: {calls}, history: "{{{{ history }}}}"}}
            set: {{results: "{{{{ results }}}}", errors: "{{{{ errors }}}}", history: "{{{{ history }}}}"}}
    """)
    return path


def load_problems(runner: Any, path: Path) -> list[Any]:
    with pytest.raises(DiagramInvalid) as caught:
        runner.load(path)
    return caught.value.problems


def test_the_arguments_are_templated_url_encoded_and_the_answer_is_the_tool_result(runner, write) -> None:
    weather = Weather()
    path = agent(write, method="POST", extra='      json: {city: "{{ city }}", units: "{{ units or \'metric\' }}"}\n')
    result = runner.run(path, services=weather.services())
    assert result.status == "succeeded", result.errors
    sent = weather.seen[0]
    assert sent.method == "POST"
    assert sent.url.raw_path == b"/v1/now?city=S%C3%A3o%20Paulo%20%26%20Co"
    assert sent.url.params["city"] == "São Paulo & Co"  # one parameter: the & was encoded, not a separator
    assert json.loads(sent.content) == {"city": "São Paulo & Co", "units": "metric"}  # an optional one not given: None
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    answer = result.variables["results"]["c1"]
    assert answer["status"] == 200 and answer["json"]["temperature"] == 21.5
    assert set(answer) == {"status", "headers", "json", "text"}  # HttpRequest's outputs
    assert result.variables["errors"] == []
    called = [e for e in runner.events(result) if e["event"] == "http_called"]
    assert called and called[0]["tool"] == "get_weather" and called[0]["status"] == 200


def test_a_secret_is_redacted_from_the_tool_result_and_the_trace(runner, write) -> None:
    weather = Weather()  # it echoes the Authorization header back in its body
    result = runner.run(agent(write), services=weather.services())
    assert result.status == "succeeded", result.errors
    assert weather.seen[0].headers["authorization"] == f"Bearer {KEY}"  # sent as it is
    answer = result.variables["results"]["c1"]
    assert KEY not in json.dumps(answer) and "[REDACTED]" in answer["json"]["authorization"]
    tool_row = result.variables["history"][-1]
    assert tool_row["role"] == "tool" and KEY not in tool_row["content"]  # what the model reads next
    assert result.trace is not None
    trace = result.trace.read_text(encoding="utf-8")
    assert "http_request" in trace and KEY not in trace
    assert KEY.replace("/", "%2F") not in trace


def test_a_500_is_the_tool_error_the_model_reads(runner, write) -> None:
    weather = Weather({"/v1/now": httpx.Response(500, text="the weather station is down")})
    result = runner.run(agent(write), services=weather.services())
    assert result.status == "succeeded"  # a tool's failure is data for the model, as a Python tool's is
    [error] = result.variables["errors"]
    assert error["type"] == "http_error" and error["name"] == "get_weather"
    assert "500" in error["error"] and "the weather station is down" in error["error"]
    tool_row = result.variables["history"][-1]
    assert tool_row["role"] == "tool" and tool_row["name"] == "get_weather"
    assert "500" in json.loads(tool_row["content"])["error"]


def test_a_redirect_to_another_host_is_refused(runner, write) -> None:
    weather = Weather({"/v1/now": httpx.Response(302, headers={"location": "https://evil.test/steal"})})
    result = runner.run(agent(write), services=weather.services())
    [error] = result.variables["errors"]
    assert error["type"] == "http_redirect_refused"
    assert [str(r.url.host) for r in weather.seen] == ["api.weather.test"]  # evil.test was never reached


def test_a_host_the_model_chooses_is_checked_when_the_url_is_rendered(runner, write) -> None:
    weather = Weather()
    path = agent(write, url="https://{{ city }}/v1/now", calls="[{id: c1, name: get_weather, arguments: {city: evil.test}}]")
    result = runner.run(path, services=weather.services())
    [error] = result.variables["errors"]
    assert error["type"] == "host_not_allowed"
    assert "the tool's allowed_hosts" in error["error"]
    assert weather.seen == []


@pytest.mark.parametrize(("url", "extra", "line", "field", "code", "words"), [
    ("https://evil.test/v1/now", "", 12, "tools[0].http.url", "host_not_allowed", "is not in the tool's allowed_hosts"),
    ("https://api.weather.test/{{ city | urlencode }", "", 12, "http.url", "template_syntax", "template syntax error"),
    ("https://api.weather.test/{{ city | no_such }}", "", 12, "http.url", "template_unknown_filter", "no filter"),
    ("https://api.weather.test/{{ country }}", "", 12, "http.url", "template_undefined", "country"),
    ("https://api.weather.test/x", "      query: {k: \"{{ secret('OTHER_KEY') }}\"}\n", 14, "http.query",
     "secret_not_listed", "OTHER_KEY"),
], ids=["host", "syntax", "filter", "not-a-parameter", "unlisted-secret"])
def test_an_http_tool_problem_is_a_load_error_at_its_registry_line(runner, write, url: str, extra: str, line: int,
                                                                   field: str, code: str, words: str) -> None:
    path = agent(write, url=url, extra=extra)
    found = load_problems(runner, path)
    assert len(found) == 1, found
    problem = found[0]
    assert (problem.file, problem.line, problem.field, problem.code) == (
        str(path.parent / "registry/weather.yaml"), line, field, code)
    assert words in problem.message


def test_a_secret_the_diagram_lists_may_be_read_too(runner, write) -> None:
    path = agent(write, extra="      query: {k: \"{{ secret('OTHER_KEY') }}\"}\n", top="secrets: [OTHER_KEY]")
    weather = Weather()
    services = weather.services()
    services.environ = {**services.environ, "OTHER_KEY": "other-key-value-1234"}
    result = runner.run(path, services=services)
    assert result.status == "succeeded", result.errors
    assert weather.seen[0].url.params["k"] == "other-key-value-1234"
    assert "other-key-value-1234" not in json.dumps(result.variables["results"])


def test_a_tool_needs_a_handler_or_an_http_call(runner, write) -> None:
    write("""\
        registry: r
        tools:
          - function: nothing
            description: neither kind
    """.replace("        ", ""), "registry/weather.yaml")
    path = write("""
        diagram: d
        tools: registry/weather.yaml
        blocks:
          - {id: start, type: Start}
    """)
    [problem] = load_problems(runner, path)
    assert problem.line == 3 and "a handler, an http call or a knowledge base" in problem.message


def test_the_weather_agent_example_runs_offline(registry) -> None:
    import asyncio

    from engine.runtime.execute import execute

    diagram = load_diagram(ROOT / "diagrams/weather_agent.yaml", registry)
    result = asyncio.run(execute(diagram, {"city": "Lisboa"}, services=Services(environ={}, offline=True),
                                 runs_dir=None))
    assert result.status == "succeeded", result.errors
    assert result.path == ["start", "ask", "dispatch", "ask", "done"]
    tool_row = result.variables["history"][2]
    assert tool_row["name"] == "get_weather" and "offline" in tool_row["content"]  # the network is never reached


def test_recording_a_run_keeps_no_http_tool_answer_as_a_block_reply(runner, write) -> None:
    heard: list[tuple[str, Any]] = []
    services = Weather().services()
    services.reply_observers.append(lambda block, reply: heard.append((block, reply)))
    result = runner.run(agent(write), services=services)
    assert result.status == "succeeded", result.errors
    assert heard == []  # a recorded scenario stubs the tool by name; `dispatch` takes no HTTP replies
