"""What an HttpRequest may reach (`allowed_hosts`) and read (`secrets`): refused at load where written out, at
run time otherwise, and a secret's value never in a result, a trace or an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from engine import DiagramInvalid, Services
from engine.compile.loader import load_diagram

SECRET = 'p4ss/w0rd+"quoted" &more'
"""A password as people choose them: a slash, a plus, a quote, a space, an ampersand."""


def reached(into: list[httpx.Request]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        into.append(request)
        return httpx.Response(200, json={"url": str(request.url), "headers": dict(request.headers),
                                         "body": request.read().decode()})

    return httpx.MockTransport(answer)


def one_call(write: Any, with_: str, top: str, *, inputs: str = "{}", level: str = "Default") -> Path:
    path: Path = write(f"""
        diagram: hosts
        {top}
        blocks:
          - id: start
            type: Start
            message_level: Detailed
            inputs: {inputs}
            next: call
          - id: call
            type: HttpRequest
            error_level: {level}
            with: {with_}
            set: {{answer: "{{{{ json }}}}", text: "{{{{ text }}}}"}}
            on_error: handler
          - id: handler
            type: Set
            set: {{caught: "{{{{ error }}}}"}}
    """)
    return path


def problems(runner: Any, path: Path) -> list[Any]:
    with pytest.raises(DiagramInvalid) as caught:
        runner.load(path)
    return caught.value.problems


@pytest.mark.parametrize(("top", "url"), [
    ("allowed_hosts: [api.shop.test]", "https://evil.test/x"),
    ("", "https://api.shop.test/x"),  # nothing is allowed by default
    ("allowed_hosts: [api.shop.test]", "https://api.shop.test@evil.test/x"),  # userinfo, then the real host
    ("allowed_hosts: ['*.shop.test']", "https://shop.test/x"),  # a wildcard is for subdomains only
    ("allowed_hosts: ['localhost:8080']", "http://localhost:9090/x"),  # that port only
    ("allowed_hosts: [api.shop.test]", "https://evil.test/orders/{{ 42 }}"),  # the host is written out
], ids=["other-host", "none-listed", "userinfo", "wildcard-apex", "other-port", "templated-path"])
def test_a_url_whose_host_is_not_allowed_is_a_load_error_at_its_line(runner, write, top: str, url: str) -> None:
    path = one_call(write, f"{{url: '{url}'}}", top)
    found = problems(runner, path)
    assert len(found) == 1, found
    problem = found[0]
    assert (problem.file, problem.line, problem.block, problem.field) == (str(path), 12, "call", "with.url")
    assert "is not in the diagram's allowed_hosts" in problem.message
    assert "allowed_hosts" in (problem.hint or "")


@pytest.mark.parametrize("url", ["https://api.shop.test/x", "https://a.b.shop.test:8443/x", "http://localhost:8080/x",
                                 "https://BÜCHER.test/x", "http://[::1]:7000/x", "https://api.shop.test./x"])
def test_allowed_hosts_admit_names_wildcards_ports_and_addresses(runner, write, url: str) -> None:
    seen: list[httpx.Request] = []
    path = one_call(write, f"{{url: '{url}'}}",
                    "allowed_hosts: [api.shop.test, '*.shop.test', 'localhost:8080', bücher.test, '[::1]']")
    result = runner.run(path, services=Services(environ={}, transports={"http": reached(seen)}))
    assert result.status == "succeeded", result.errors
    assert len(seen) == 1


def test_a_host_made_by_a_template_is_checked_when_the_run_renders_it(runner, write) -> None:
    seen: list[httpx.Request] = []
    path = one_call(write, "{url: '{{ base }}/orders'}", "allowed_hosts: [api.shop.test]",
                    inputs="{base: 'https://evil.test'}", level="Handle")
    result = runner.run(path, services=Services(environ={}, transports={"http": reached(seen)}))
    assert seen == []
    caught = result.variables["caught"]
    assert caught["type"] == "host_not_allowed" and caught["block"] == "call"
    assert caught["message"] == ("the host evil.test is not in the diagram's allowed_hosts (list it in the diagram's "
                                 "top-level allowed_hosts (now: api.shop.test))")
    good = runner.run(path, {"base": "https://api.shop.test"},
                      services=Services(environ={}, transports={"http": reached(seen)}))
    assert good.status == "succeeded" and len(seen) == 1


@pytest.mark.parametrize(("url", "message"), [
    ("ftp://api.shop.test/x", "must start with http:// or https://"),
    ("api.shop.test/x", "must start with http:// or https://"),
])
def test_a_url_that_is_no_http_url_is_refused(runner, write, url: str, message: str) -> None:
    path = one_call(write, f"{{url: '{url}'}}", "allowed_hosts: [api.shop.test]")
    assert message in problems(runner, path)[0].message
    templated = one_call(write, "{url: '{{ target }}'}", "allowed_hosts: [api.shop.test]", inputs=f"{{target: '{url}'}}")
    result = runner.run(templated, services=Services(environ={}))
    assert result.errors[0]["type"] == "invalid_input" and message in result.errors[0]["message"]


@pytest.mark.parametrize(("entry", "message"), [
    ("'*'", "there is no entry for every host"),
    ("'https://api.shop.test'", "is a URL: write the host alone"),
    ("'api.shop.test:99999'", "the port must be 1 to 65535"),
    ("'::1'", "write an IPv6 address in brackets"),
])
def test_a_bad_allowed_hosts_entry_is_a_load_error_naming_it(runner, write, entry: str, message: str) -> None:
    path = one_call(write, "{url: 'https://api.shop.test/x'}", f"allowed_hosts: [api.shop.test, {entry}]")
    problem = problems(runner, path)[0]
    assert message in problem.message
    assert (problem.line, problem.field) == (2, "allowed_hosts.1")


# -- secrets ------------------------------------------------------------------------------------------------------

SECRET_CALL = ("{method: POST, url: 'https://api.shop.test/login', query: {pw: '{{ secret(\"SHOP_CREDENTIAL\") }}'}, "
               "headers: {X-Credential: '{{ secret(\"SHOP_CREDENTIAL\") }}'}, json: {password: '{{ secret(\"SHOP_CREDENTIAL\") }}'}}")
SECRETS_TOP = "allowed_hosts: [api.shop.test]\n        secrets: [SHOP_CREDENTIAL]"


def test_a_secret_reaches_the_request_and_no_output(runner, write) -> None:
    seen: list[httpx.Request] = []
    path = one_call(write, SECRET_CALL, SECRETS_TOP)
    result = runner.run(path, services=Services(environ={"SHOP_CREDENTIAL": SECRET}, transports={"http": reached(seen)}))
    assert result.status == "succeeded", result.errors
    sent = seen[0]
    assert sent.headers["x-credential"] == SECRET
    assert orjson.loads(sent.content) == {"password": SECRET}
    assert httpx.URL(str(sent.url)).params["pw"] == SECRET
    # The server echoed it back in every form (a header, JSON text, a URL): nothing that leaves the run holds it.
    trace = Path(result.trace or "").read_text()
    kept = orjson.dumps(result.variables).decode() + orjson.dumps(result.errors).decode() + trace
    for form in (SECRET, orjson.dumps(SECRET).decode()[1:-1], "p4ss%2Fw", "p4ss/w"):
        assert form not in kept, form
    assert "[REDACTED]" in trace and "[REDACTED]" in kept


def test_a_header_beyond_ascii_is_refused_without_quoting_it(runner, write) -> None:
    path = one_call(write, "{url: 'https://api.shop.test/x', headers: {X-Credential: '{{ secret(\"SHOP_CREDENTIAL\") }}'}}",
                    SECRETS_TOP)
    result = runner.run(path, services=Services(environ={"SHOP_CREDENTIAL": "wörd-of-pass"}))
    error = result.errors[0]
    assert error["type"] == "invalid_input" and "beyond ASCII" in error["message"]
    assert "wörd" not in error["message"]


def test_a_secret_the_diagram_does_not_list_is_a_load_error(runner, write) -> None:
    path = one_call(write, "{url: 'https://api.shop.test/x', headers: {K: \"{{ secret('SHOP_KEY') }}\"}}",
                    "allowed_hosts: [api.shop.test]\n        secrets: [SHOP_KEYS]")
    problem = problems(runner, path)[0]
    assert (problem.line, problem.block, problem.field, problem.code) == (13, "call", "with.headers", "secret_not_listed")
    assert problem.message == "secret('SHOP_KEY'): the diagram does not list 'SHOP_KEY' in its secrets"
    assert problem.hint == "did you mean 'SHOP_KEYS'?"


def test_a_secret_unset_where_the_diagram_will_run_is_a_load_error_but_validate_passes(runner, registry, write) -> None:
    path = one_call(write, SECRET_CALL, SECRETS_TOP)
    runner.load(path)  # validating needs no value: CI and the studio may not hold it
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry, environ={"OTHER": "x"})  # about to run, with this environment
    problem = caught.value.problems[0]
    assert (problem.block, problem.field, problem.code) == ("call", "with.query", "secret_unset")
    assert problem.message == "secret('SHOP_CREDENTIAL'): the environment variable SHOP_CREDENTIAL is not set"


def test_at_run_time_an_unset_or_unlisted_secret_is_an_error(runner, write) -> None:
    path = one_call(write, "{url: 'https://api.shop.test/x', headers: {K: '{{ secret(name) }}'}}", SECRETS_TOP,
                    inputs="{name: SHOP_CREDENTIAL}", level="Handle")
    unset = runner.run(path, services=Services(environ={}))
    assert unset.variables["caught"]["type"] == "secret_unset"
    unlisted = runner.run(path, {"name": "HOME"}, services=Services(environ={"HOME": "/root/secret-home"}))
    caught = unlisted.variables["caught"]
    assert caught["type"] == "secret_not_listed"
    assert "/root/secret-home" not in orjson.dumps(unlisted.variables).decode()


def test_a_template_cannot_reach_the_environment_through_the_function(runner, write) -> None:
    path = write("""
        diagram: sneaky
        secrets: [SHOP_CREDENTIAL]
        blocks:
          - id: start
            type: Start
            variables: {seen: "{{ secret.__closure__ }}"}
    """)
    result = runner.run(path, services=Services(environ={"SHOP_CREDENTIAL": SECRET, "OTHER_VALUE": "hidden-value-1"}))
    assert result.status == "failed"
    assert result.errors[0]["type"] == "template_forbidden"
    assert "__closure__" in result.errors[0]["message"] and "hidden-value-1" not in str(result.errors)


def test_a_variable_named_secret_would_hide_the_function(runner, write) -> None:
    path = write("""
        diagram: clash
        blocks:
          - id: start
            type: Start
            variables: {secret: 1}
    """)
    problem = problems(runner, path)[0]
    assert problem.message == "'secret' would hide the template function of that name"


def test_a_bad_secret_name_is_a_load_error(runner, write) -> None:
    path = one_call(write, "{url: 'https://api.shop.test/x'}", "allowed_hosts: [api.shop.test]\n        secrets: [shop-key]")
    problem = problems(runner, path)[0]
    assert (problem.line, problem.field) == (3, "secrets.0")
