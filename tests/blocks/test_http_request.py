"""HttpRequest: methods, bodies, outputs, statuses, retries, redirects, timeouts, and the trace.

The far side is a fake shop API at the wire: an `httpx.MockTransport` over a plain function, given to the
run as `Services.transports["http"]` (the one stand-in for every host). Hosts, secrets and offline runs
have their own test modules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest

from engine import Services

ALLOWED = "allowed_hosts: [api.shop.test]"


@dataclass
class Shop:
    """A fake API: answers from `script` by path (a list plays in order, its last answer repeating)."""

    script: dict[str, list[httpx.Response | Exception]] = field(default_factory=dict)
    seen: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.seen.append(request)
        answers = self.script.get(request.url.path)
        if not answers:
            return httpx.Response(200, json={"path": request.url.path, "method": request.method})
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def services(self, **options: Any) -> Services:
        return Services(environ={}, transports={"http": httpx.MockTransport(self)}, **options)


def http_diagram(write: Callable[..., Any], with_: str, *, top: str = ALLOWED, level: str = "Default",
                 message_level: str = "Debug") -> Any:
    return write(f"""
        diagram: http
        {top}
        blocks:
          - id: start
            type: Start
            message_level: {message_level}
            next: call
          - id: call
            type: HttpRequest
            error_level: {level}
            with: {with_}
            set: {{status: "{{{{ status }}}}", body: "{{{{ json }}}}", text: "{{{{ text }}}}", headers: "{{{{ headers }}}}"}}
            on_error: handler
          - id: handler
            type: Set
            set: {{caught: "{{{{ error }}}}"}}
    """)


def test_a_get_sends_its_query_and_headers_and_reads_the_json_back(runner, write) -> None:
    shop = Shop({"/orders/42": [httpx.Response(200, json={"id": 42, "total": 120.5},
                                               headers={"X-Request-Id": "r-1"})]})
    path = http_diagram(write, '{url: "https://api.shop.test/orders/42?lang=pt", query: {expand: [items, notes], '
                               'page: 2, archived: false, skip: null}, headers: {X-Shop: "7", Accept-Language: pt}}')
    result = runner.run(path, services=shop.services())
    assert result.status == "succeeded", result.errors
    sent = shop.seen[0]
    assert sent.method == "GET" and sent.content == b""
    assert str(sent.url) == "https://api.shop.test/orders/42?lang=pt&expand=items&expand=notes&page=2&archived=false"
    assert sent.headers["x-shop"] == "7" and sent.headers["accept-language"] == "pt"
    assert result.variables["status"] == 200
    assert result.variables["body"] == {"id": 42, "total": 120.5}
    assert orjson.loads(result.variables["text"]) == {"id": 42, "total": 120.5}
    assert result.variables["headers"]["x-request-id"] == "r-1"


@pytest.mark.parametrize(("body", "sent", "content_type"), [
    ('json: {sku: A-1, qty: 2}', b'{"sku":"A-1","qty":2}', "application/json"),
    ("body: plain words", b"plain words", "text/plain; charset=utf-8"),
    ("body: {grant_type: client_credentials, scope: a b}", b"grant_type=client_credentials&scope=a+b",
     "application/x-www-form-urlencoded"),
], ids=["json", "text", "form"])
def test_a_post_sends_its_body_with_its_content_type(runner, write, body: str, sent: bytes, content_type: str) -> None:
    shop = Shop()
    path = http_diagram(write, f"{{method: post, url: 'https://api.shop.test/carts', {body}}}")
    result = runner.run(path, services=shop.services())
    assert result.status == "succeeded", result.errors
    assert shop.seen[0].method == "POST"
    assert shop.seen[0].content == sent
    assert shop.seen[0].headers["content-type"] == content_type


def test_a_content_type_the_block_gives_is_kept(runner, write) -> None:
    shop = Shop()
    path = http_diagram(write, "{method: PUT, url: 'https://api.shop.test/x', json: [1], "
                               "headers: {Content-Type: application/vnd.shop+json}}")
    assert runner.run(path, services=shop.services()).status == "succeeded"
    assert shop.seen[0].headers.get_list("content-type") == ["application/vnd.shop+json"]


def test_a_body_that_is_not_json_is_text_and_json_null(runner, write) -> None:
    shop = Shop({"/page": [httpx.Response(200, content="café".encode("latin-1"),
                                          headers={"content-type": "text/html; charset=latin-1"})]})
    result = runner.run(http_diagram(write, "{url: 'https://api.shop.test/page'}"), services=shop.services())
    assert result.variables["body"] is None
    assert result.variables["text"] == "café"  # decoded by the charset the answer names


def test_head_has_no_body(runner, write) -> None:
    shop = Shop({"/x": [httpx.Response(204, headers={"etag": "v7"})]})
    result = runner.run(http_diagram(write, "{method: HEAD, url: 'https://api.shop.test/x'}"), services=shop.services())
    assert (result.variables["status"], result.variables["body"], result.variables["text"]) == (204, None, "")
    assert result.variables["headers"]["etag"] == "v7"


def test_an_error_status_is_http_error_under_the_error_level(runner, write) -> None:
    shop = Shop({"/orders/9": [httpx.Response(404, json={"error": "no order 9"})]})
    path = http_diagram(write, "{url: 'https://api.shop.test/orders/9'}", level="Handle")
    result = runner.run(path, services=shop.services())
    assert result.status == "succeeded"  # handled
    caught = result.variables["caught"]
    assert caught["type"] == "http_error" and caught["block"] == "call"
    assert caught["message"] == 'GET https://api.shop.test/orders/9 answered 404 Not Found: {"error":"no order 9"}'
    assert len(shop.seen) == 1  # a 404 is not retried


def test_fail_on_status_false_makes_the_status_an_output(runner, write) -> None:
    shop = Shop({"/orders/9": [httpx.Response(404, json={"error": "no order 9"})]})
    path = http_diagram(write, "{url: 'https://api.shop.test/orders/9', fail_on_status: false}")
    result = runner.run(path, services=shop.services())
    assert result.status == "succeeded", result.errors
    assert (result.variables["status"], result.variables["body"]) == (404, {"error": "no order 9"})
    assert "caught" not in result.variables


def test_an_ignored_http_error_leaves_empty_outputs(runner, write) -> None:
    shop = Shop({"/x": [httpx.Response(500)]})
    path = http_diagram(write, "{url: 'https://api.shop.test/x', retries: 0}", level="Ignore")
    result = runner.run(path, services=shop.services())
    assert result.status == "succeeded"
    assert [e["type"] for e in result.errors] == ["http_error"]


def _waits(into: list[float]) -> Callable[[float], Any]:
    async def sleep(seconds: float) -> None:
        into.append(seconds)
        await asyncio.sleep(0)

    return sleep


def test_a_503_is_retried_with_the_servers_wait_then_succeeds(runner, write) -> None:
    shop = Shop({"/x": [httpx.Response(503, headers={"retry-after": "2"}), httpx.Response(429),
                        httpx.Response(200, json={"ok": True})]})
    waits: list[float] = []
    result = runner.run(http_diagram(write, "{url: 'https://api.shop.test/x'}"), services=shop.services(sleep=_waits(waits)))
    assert result.status == "succeeded", result.errors
    assert result.variables["body"] == {"ok": True}
    assert len(shop.seen) == 3 and waits[0] == 2.0
    events = runner.events(result)
    assert [e["attempt"] for e in events if e["event"] == "http_retried"] == [1, 2]
    called = next(e for e in events if e["event"] == "http_called")
    assert (called["method"], called["url"], called["status"], called["attempts"]) == ("GET", "https://api.shop.test/x",
                                                                                         200, 3)


def test_retries_that_run_out_leave_the_last_status(runner, write) -> None:
    shop = Shop({"/x": [httpx.Response(502)]})
    path = http_diagram(write, "{url: 'https://api.shop.test/x', retries: 1}", level="Handle")
    result = runner.run(path, services=shop.services(sleep=_waits([])))
    assert len(shop.seen) == 2
    assert result.variables["caught"]["message"].startswith("GET https://api.shop.test/x answered 502 Bad Gateway "
                                                            "(after 2 attempts)")


def test_a_wait_past_the_timeout_is_not_waited(runner, write) -> None:
    shop = Shop({"/x": [httpx.Response(503, headers={"retry-after": "120"})]})
    waits: list[float] = []
    path = http_diagram(write, "{url: 'https://api.shop.test/x', timeout: 10, fail_on_status: false}")
    result = runner.run(path, services=shop.services(sleep=_waits(waits)))
    assert waits == [] and len(shop.seen) == 1
    assert result.variables["status"] == 503  # the answer stands: the server said to come back later


def test_x_should_retry_false_is_not_retried(runner, write) -> None:
    shop = Shop({"/x": [httpx.Response(503, headers={"x-should-retry": "false"})]})
    path = http_diagram(write, "{url: 'https://api.shop.test/x', fail_on_status: false}")
    runner.run(path, services=shop.services(sleep=_waits([])))
    assert len(shop.seen) == 1


def test_a_dropped_connection_is_retried_then_named(runner, write) -> None:
    shop = Shop({"/x": [httpx.ConnectError("connection refused")]})
    path = http_diagram(write, "{url: 'https://api.shop.test/x', retries: 2}", level="Handle")
    result = runner.run(path, services=shop.services(sleep=_waits([])))
    assert len(shop.seen) == 3
    caught = result.variables["caught"]
    assert caught["type"] == "http_connection_error"
    assert caught["message"] == ("api.shop.test: connection failed (ConnectError: connection refused) "
                                 "(after 3 attempts)")


def test_a_server_that_never_answers_is_a_block_timeout(runner, write) -> None:
    async def stalls(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200)

    services = Services(environ={}, transports={"http": httpx.MockTransport(stalls)})
    path = http_diagram(write, "{url: 'https://api.shop.test/x', timeout: 0.2}", level="Handle")
    result = runner.run(path, services=services)
    assert result.variables["caught"]["type"] == "block_timeout"


def test_a_redirect_on_the_same_host_is_followed(runner, write) -> None:
    shop = Shop({"/old": [httpx.Response(301, headers={"location": "/new?x=1"})],
                 "/new": [httpx.Response(200, json={"moved": True})]})
    result = runner.run(http_diagram(write, "{url: 'https://api.shop.test/old'}"), services=shop.services())
    assert result.variables["body"] == {"moved": True}
    assert [str(r.url) for r in shop.seen] == ["https://api.shop.test/old", "https://api.shop.test/new?x=1"]


@pytest.mark.parametrize("location", ["https://elsewhere.test/steal", "http://api.shop.test/plain",
                                      "https://api.shop.test:8443/other-port"])
def test_a_redirect_off_the_host_is_refused_and_never_followed(runner, write, location: str) -> None:
    shop = Shop({"/old": [httpx.Response(307, headers={"location": location})]})
    path = http_diagram(write, "{method: POST, url: 'https://api.shop.test/old', headers: {X-Key: k}, json: {a: 1}}",
                        level="Handle")
    result = runner.run(path, services=shop.services())
    assert [str(r.url) for r in shop.seen] == ["https://api.shop.test/old"]
    caught = result.variables["caught"]
    assert caught["type"] == "http_redirect_refused"
    assert "a redirect is followed only on the same host" in caught["message"]


def test_a_redirect_loop_ends(runner, write) -> None:
    shop = Shop({"/loop": [httpx.Response(302, headers={"location": "/loop"})]})
    path = http_diagram(write, "{url: 'https://api.shop.test/loop'}", level="Handle")
    result = runner.run(path, services=shop.services())
    assert result.variables["caught"]["type"] == "http_redirect_refused"
    assert len(shop.seen) == 6  # the request and five redirects


def test_detailed_traces_the_exchange_with_authorization_redacted(runner, write) -> None:
    shop = Shop()
    path = http_diagram(write, "{method: POST, url: 'https://api.shop.test/x', json: {a: 1}, "
                               "headers: {Authorization: Bearer abc-123-xyz, Cookie: session=s3ss10n}}",
                        message_level="Detailed")
    result = runner.run(path, services=shop.services())
    events = runner.events(result)
    sent = next(e for e in events if e["event"] == "http_request")
    assert sent["method"] == "POST" and sent["body"] == {"a": 1}
    assert sent["headers"]["Authorization"] == "[REDACTED]" and sent["headers"]["Cookie"] == "[REDACTED]"
    answered = next(e for e in events if e["event"] == "http_response")
    assert answered["status"] == 200 and answered["body"] == {"path": "/x", "method": "POST"}


def test_debug_traces_no_payloads(runner, write) -> None:
    result = runner.run(http_diagram(write, "{url: 'https://api.shop.test/x'}"), services=Shop().services())
    names = [e["event"] for e in runner.events(result)]
    assert "http_called" in names and "http_request" not in names


@pytest.mark.parametrize(("with_", "field", "message"), [
    ("{url: 'https://api.shop.test/x', json: {a: 1}, body: text}", "with", "json and body are both given"),
    ("{url: 'https://api.shop.test/x', headers: {'Bad Name': x}}", "with.headers", "is not a header name"),
    ("{url: 'https://api.shop.test/x', method: FETCH}", "with.method", "Input should be 'GET'"),
    ("{url: 'https://api.shop.test/x', retries: -1}", "with.retries", "greater than or equal to 0"),
], ids=["json-and-body", "header-name", "method", "retries"])
def test_bad_inputs_are_load_errors_at_their_line(runner, write, with_: str, field: str, message: str) -> None:
    from engine import DiagramInvalid

    path = http_diagram(write, with_)
    with pytest.raises(DiagramInvalid) as caught:
        runner.load(path)
    problem = next(p for p in caught.value.problems if message in p.message)
    assert (problem.file, problem.line, problem.block, problem.field) == (str(path), 11, "call", field)


def test_a_templated_header_with_a_line_break_fails_the_run(runner, write) -> None:
    shop = Shop()
    path = write("""
        diagram: http
        allowed_hosts: [api.shop.test]
        blocks:
          - id: start
            type: Start
            inputs: {who: "a\\r\\nX-Evil: 1"}
            next: call
          - id: call
            type: HttpRequest
            with: {url: "https://api.shop.test/x", headers: {X-Who: "{{ who }}"}}
    """)
    result = runner.run(path, services=shop.services())
    assert [e["type"] for e in result.errors] == ["invalid_input"] and not shop.seen


def test_a_cookie_one_run_was_given_is_never_sent_by_another(runner, write) -> None:
    # Runs in one process share the services' pooled client (a batch, the studio): a server's session must not
    # pass from one run to the next, nor from one block to another.
    from engine import execute

    shop = Shop({"/login": [httpx.Response(200, headers={"set-cookie": "session=customer-a; Path=/"})]})
    services = shop.services()
    login = runner.load(http_diagram(write, "{url: 'https://api.shop.test/login'}", top="allowed_hosts: [api.shop.test]"))
    orders = runner.load(http_diagram(write, "{url: 'https://api.shop.test/orders'}"))

    async def one_after_the_other() -> None:
        await execute(login, runs_dir=None, services=services)
        await execute(orders, runs_dir=None, services=services)

    asyncio.run(one_after_the_other())
    assert [r.url.path for r in shop.seen] == ["/login", "/orders"]
    assert [r.headers.get("cookie") for r in shop.seen] == [None, None]
