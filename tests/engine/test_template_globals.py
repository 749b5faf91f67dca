"""jinja2's standard globals in the sandbox, the bounded regex filters, and names a template could never read back."""

from __future__ import annotations

import pytest

from engine import DiagramInvalid
from engine.compile.loader import load_diagram


def one_set(write, set_lines: str, inputs: str = "{}") -> object:
    return write(f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {inputs}
            variables: {{items: [{{n: 2}}, {{n: 3}}]}}
            next: s
          - id: s
            type: Set
            set:
        {set_lines}
    """)


def test_jinja2_standard_globals_are_there_and_namespace_accumulates_in_a_for(runner, write) -> None:
    path = one_set(write, """
              numbers: "{{ range(3) | list }}"
              mapping: "{{ dict(a=1, b=2) }}"
              total: "{% set ns = namespace(sum=0) %}{% for i in items %}{% set ns.sum = ns.sum + i.n %}{% endfor %}{{ ns.sum }}"
              joined: "{% set comma = joiner(', ') %}{% for i in items %}{{ comma() }}{{ i.n }}{% endfor %}"
              cycled: "{% set c = cycler('odd', 'even') %}{% for i in range(3) %}{{ c.next() }} {% endfor %}"
              filler: "{{ lipsum(1, false, 5, 8) | length > 0 }}"
    """)
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    assert {k: result.variables[k] for k in ("numbers", "mapping", "total", "joined", "cycled", "filler")} == {
        "numbers": [0, 1, 2], "mapping": {"a": 1, "b": 2}, "total": "5", "joined": "2, 3", "cycled": "odd even odd ",
        "filler": True}


@pytest.mark.parametrize("template", ["{% for i in range(10**12) %}x{% endfor %}", "{{ range(2**70) | length }}",
                                      "{{ lipsum(10**6) }}"])
def test_range_and_lipsum_are_bounded_by_the_template_size_limits(runner, write, template: str) -> None:
    result = runner.run(one_set(write, f"      x: \"{template}\""))
    assert result.status == "failed"
    assert result.errors[0]["type"] == "template_too_large", result.errors


def test_a_variable_may_not_hide_a_jinja2_global(write, registry) -> None:
    with pytest.raises(DiagramInvalid, match="'range' would hide the template function of that name"):
        load_diagram(one_set(write, "      range: 3"), registry)


def test_regex_filters(runner, write) -> None:
    # YAML's single quotes keep the backslashes for jinja2's string literal, which reads '\\d' as \d.
    path = one_set(write, r"""
              first: '{{ text | regex_search("#(\\d+)", 1) }}'
              every: '{{ text | regex_findall("#(\\d+)") }}'
              pairs: '{{ text | regex_findall("(\\w+)@(\\w+)") }}'
              masked: '{{ text | regex_replace("(\\w+)@", "***@") }}'
              named: '{{ text | regex_replace("#(?P<n>[0-9]+)", "n=\\g<n>", count=1) }}'
              folded: "{{ 'ABC' | regex_search('b', ignorecase=true) }}"
              missing: "{{ text | regex_search('zzz') is none }}"
    """, inputs='{text: "Order #42 and #57, mail joe@example.com"}')
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    assert {k: result.variables[k] for k in ("first", "every", "pairs", "masked", "named", "folded", "missing")} == {
        "first": "42", "every": ["42", "57"], "pairs": [["joe", "example"]],
        "masked": "Order #42 and #57, mail ***@example.com", "named": "Order n=42 and #57, mail joe@example.com",
        "folded": "B", "missing": True}


def test_a_catastrophic_pattern_ends_at_once_on_re2(runner, write) -> None:
    # `(a+)+$` against many a's and a b backtracks for ages in Python's re; RE2 answers in linear time.
    path = one_set(write, "      found: \"{{ ('a' * 5000 + 'b') | regex_search('^(a+)+$') is none }}\"")
    result = runner.run(path)
    assert result.status == "succeeded" and result.variables["found"] is True


def test_a_literal_pattern_re2_refuses_is_a_load_error_with_the_reason(write, registry) -> None:
    path = one_set(write, "      x: \"{{ 'ab' | regex_search('(?<=a)b') }}\"")
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    [problem] = caught.value.problems
    assert (problem.block, problem.field, problem.code) == ("s", "set.x", "template_bad_regex")
    assert "is not one RE2 takes" in problem.message and "lookbehind" in (problem.hint or "")


def test_a_templated_pattern_re2_refuses_fails_the_run_clearly(runner, write) -> None:
    path = one_set(write, "      x: \"{{ 'ab' | regex_search(pattern) }}\"", inputs="{pattern: '(?=a)'}")
    result = runner.run(path)
    assert result.errors[0]["type"] == "template_bad_regex" and "RE2" in result.errors[0]["message"]


def test_a_replacement_past_the_size_limit_is_refused_before_it_is_built(runner, write) -> None:
    path = one_set(write, "      x: \"{{ ('a' * 100000) | regex_replace('a', 'b' * 200) }}\"")
    result = runner.run(path)
    assert result.errors[0]["type"] == "template_too_large", result.errors


@pytest.mark.parametrize(("name", "words"), [
    ("not", "'not' is a jinja2 keyword (the operator `not`)"), ("None", "'None' is a constant in templates (null)"),
    ("none", "'none' is a constant in templates (null)"), ("true", "'true' is a constant in templates"),
    ("false", "'false' is a constant in templates"), ("self", "'self' is reserved by jinja2"),
])
def test_names_a_template_cannot_read_back_are_refused_saying_why(write, registry, name: str, words: str) -> None:
    path = write(f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {{{name}: x}}
            next: s
          - {{id: s, type: Set, set: {{{name}: 1}}}}
    """)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    problems = [(p.block, p.field, p.line, p.code) for p in caught.value.problems]
    assert problems == [("start", f"inputs.{name}", 5, "invalid_name"), ("s", f"set.{name}", 7, "invalid_name")]
    assert all(p.message.startswith(words) for p in caught.value.problems)
    assert all("letters, digits" not in (p.hint or "") for p in caught.value.problems)


def test_python_keywords_are_names_a_template_reads_back(runner, write) -> None:
    # The defect: `inputs: {from: x}` (an e-mail's sender), `if`, `class` were refused as "not letters, digits and
    # '_'"; jinja2 reads them as names wherever they stand, and so does the engine's compiled fast path.
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {from: ann@example.com, if: 2, class: 3, in: [1, 2], match: 1, case: 2}
            next: s
          - id: s
            type: Set
            set:
              import: "{{ if + class + match + case }}"
              sender: "{{ from | upper }}"
              text: "{% for x in in %}{{ x }}{% endfor %} {{ 2 in in }}"
            next: [{to: loop, when: "{{ if == 2 and from != '' }}"}, {to: done}]
          - {id: loop, type: Loop, with: {for_each: "{{ in }}", collect: "{{ item + import }}"}, body: inner,
             set: {lambda: "{{ collected }}"}, next: done}
          - {id: inner, type: Set, set: {def: "{{ item }}"}, next: loop}
          - {id: done, type: Set}
    """)
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    assert {k: result.variables[k] for k in ("import", "sender", "text", "def", "lambda")} == {
        "import": 8, "sender": "ANN@EXAMPLE.COM", "text": "12 True", "def": 2, "lambda": [9, 10]}
