"""Templates: native values for one expression, text otherwise, and the sandbox."""

from __future__ import annotations

import jinja2
import pytest

from engine import DataTable, DiagramError, TemplateError
from engine.compile.templating import TemplateEnv, TemplateSyntax


@pytest.fixture
def env() -> TemplateEnv:
    return TemplateEnv({"double": lambda x: x * 2})


def evaluate(env: TemplateEnv, source, **values):
    return env.compile(source).evaluate(env.new_scope(dict(values)))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ items }}", [1, 2, 3]),
        ("{{ items | length }}", 3),
        ("{{ items | length > 2 }}", True),
        ("{{ none }}", None),
        ("{{ {'a': items[0]} }}", {"a": 1}),
        ("  {{ items[1] + 0.5 }}\n", 2.5),
        ("{{ double(21) }}", 42),
        ("{{ '42' }}", "42"),
    ],
)
def test_one_expression_yields_its_native_value(env: TemplateEnv, source: str, expected) -> None:
    assert evaluate(env, source, items=[1, 2, 3]) == expected


def test_other_templates_render_to_text(env: TemplateEnv) -> None:
    assert evaluate(env, "{{ a }} and {{ b }}", a=1, b=[2]) == "1 and [2]"
    assert evaluate(env, "n={{ n }}", n=3) == "n=3"
    assert evaluate(env, "{% for x in xs %}{{ x }};{% endfor %}", xs=[1, 2]) == "1;2;"


def test_plain_values_are_constants(env: TemplateEnv) -> None:
    compiled = env.compile({"a": [1, "x"], "b": 2})
    assert compiled.is_constant and compiled.evaluate(env.new_scope({})) == {"a": [1, "x"], "b": 2}


def test_containers_of_templates_evaluate_each_item(env: TemplateEnv) -> None:
    assert evaluate(env, {"q": "{{ q }}", "list": ["{{ n + 1 }}", "x"]}, q="hi", n=1) == {"q": "hi", "list": [2, "x"]}


def test_undefined_name_is_a_template_error(env: TemplateEnv) -> None:
    with pytest.raises(TemplateError, match="'missing' is undefined"):
        evaluate(env, "{{ missing + 1 }}")
    with pytest.raises(TemplateError, match="undefined"):
        evaluate(env, "{{ missing }}")
    with pytest.raises(TemplateError, match="no attribute 'nokey'"):
        evaluate(env, "{{ d.nokey }}", d={})


def test_sandbox_refuses_dunder_attributes(env: TemplateEnv) -> None:
    with pytest.raises(TemplateError) as caught:
        evaluate(env, "{{ ''.__class__.__mro__ }}")
    assert caught.value.type in ("template_forbidden", "template_undefined")
    with pytest.raises(TemplateError):
        evaluate(env, "{{ ''.__class__.__mro__[1].__subclasses__() }}")


def test_sandbox_refuses_mutating_values(env: TemplateEnv) -> None:
    values = [1]
    with pytest.raises(TemplateError):
        evaluate(env, "{{ items.append(2) }}", items=values)
    assert values == [1]


def test_syntax_error_carries_line(env: TemplateEnv) -> None:
    with pytest.raises(TemplateSyntax):
        env.compile("{{ 1 + }}")


def test_names_found_statically(env: TemplateEnv) -> None:
    assert env.compile("{{ a.b | length > c }}").names == {"a", "c"}
    assert env.compile("{% for x in xs %}{{ x }}{{ y }}{% endfor %}").names == {"xs", "y"}


def test_tables_behave_as_lists_of_rows(env: TemplateEnv) -> None:
    table = DataTable(["role", "content"], [["user", "oi"], ["assistant", "olá"]])
    assert evaluate(env, "{{ h | length }}", h=table) == 2
    assert evaluate(env, "{{ h[-1].content }}", h=table) == "olá"
    assert evaluate(env, "{% for r in h %}{{ r.role }} {% endfor %}", h=table) == "user assistant "


def test_json_filters(env: TemplateEnv) -> None:
    assert evaluate(env, '{{ \'{"a": 1}\' | from_json }}') == {"a": 1}
    assert evaluate(env, "{{ v | to_json }}", v={"é": 1}) == '{"é":1}'


def test_a_failed_template_keeps_what_jinja2_raised_as_its_cause(env: TemplateEnv) -> None:
    with pytest.raises(TemplateError) as caught:
        evaluate(env, "{{ missing + 1 }}")
    assert caught.value.type == "template_undefined"
    assert isinstance(caught.value.__cause__, jinja2.UndefinedError)
    with pytest.raises(TemplateSyntax) as syntax:
        env.compile("{{ 1 + }}")
    assert isinstance(syntax.value, DiagramError) and syntax.value.lineno == 1
    assert isinstance(syntax.value.__cause__, jinja2.TemplateSyntaxError)


def test_to_json_writes_integers_past_64_bits(env: TemplateEnv) -> None:
    assert evaluate(env, "{{ [2 ** 70, 'é'] | to_json }}") == f'[{2**70},"é"]'
