"""Templates: native values for one expression, text otherwise, and the sandbox."""

from __future__ import annotations

import jinja2
import pytest

from engine import DataTable, DiagramError, TemplateError
from engine.compile.sandbox import MAX_TEXT
from engine.compile.templating import MAX_TEMPLATE_DEPTH, TemplateEnv, TemplateSyntax


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


# -- bounds: deep templates are syntax problems, large values are refused, ordinary ones unchanged --

@pytest.mark.parametrize("source", [
    "{{ " + "(" * 300 + "1" + ")" * 300 + " }}",
    "{{ " + "[" * 300 + "]" * 300 + " }}",
    "{{ " + "1 + (" * (MAX_TEMPLATE_DEPTH + 5) + "1" + ")" * (MAX_TEMPLATE_DEPTH + 5) + " }}",
    "{{ x" + "|string" * (MAX_TEMPLATE_DEPTH + 5) + " }}",
])
def test_a_template_nested_too_deeply_is_a_syntax_problem(env: TemplateEnv, source: str) -> None:
    with pytest.raises(TemplateSyntax, match=f"more than {MAX_TEMPLATE_DEPTH} levels deep"):
        env.compile(source)


def test_nesting_within_the_limit_compiles_and_runs(env: TemplateEnv) -> None:
    depth = MAX_TEMPLATE_DEPTH // 3
    assert evaluate(env, "{{ " + "1 + (" * depth + "1" + ")" * depth + " }}") == depth + 1


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 'a' * 3 }}", "aaa"),
        ("{{ [0] * 3 }}", [0, 0, 0]),
        ("{{ 3 * 'ab' }}", "ababab"),
        ("{{ 2 ** 100 }}", 2**100),
        ("{{ 7 * 6 }}", 42),
        ("{{ 'x' + 'y' }}", "xy"),
        ("{{ [1] + [2] }}", [1, 2]),
        ("{{ '%05d|%s' % (42, 'x') }}", "00042|x"),
        ("{{ '%(a)s' % {'a': 1} }}", "1"),
        ("{{ 10 % 3 }}", 1),
        ("{{ '{:>5}'.format('x') }}", "    x"),
        ("{{ '{a}-{b}'.format_map({'a': 1, 'b': 2}) }}", "1-2"),
        ("{{ 'abc'|center(7) }}", "  abc  "),
        ("{{ 'a b'|replace(' ', '--') }}", "a--b"),
        ("{{ 'a\nb'|indent(2, first=true) }}", "  a\n  b"),
        ("{{ ['a', 'b']|join(', ') }}", "a, b"),
        ("{{ [1, 2, 3]|map('string')|join }}", "123"),
        ("{{ [1, 2, 3]|map('string')|reverse }}", ["3", "2", "1"]),
        ("{{ [1, 2, 3]|batch(2, 0)|list }}", [[1, 2], [3, 0]]),
        ("{{ [1, 2, 3]|slice(2)|list }}", [[1, 2], [3]]),
        ("{{ 'a,b'.split(',') }}", ["a", "b"]),
        ("{{ ', '.join(['a', 'b']) }}", "a, b"),
        ("{{ 'x'.ljust(3, '.') }}", "x.."),
        ("{{ 'hello world'|wordwrap(5) }}", "hello\nworld"),
        ("{{ {'a': 1}|to_json }}", '{"a":1}'),
        ("{{ '%s'|format(5) }}", "5"),
    ],
)
def test_ordinary_templates_are_unaffected_by_the_bounds(env: TemplateEnv, source: str, expected) -> None:
    assert evaluate(env, source) == expected


def test_a_value_up_to_the_limit_is_fine(env: TemplateEnv) -> None:
    assert len(evaluate(env, "{{ 'a' * n }}", n=MAX_TEXT)) == MAX_TEXT
    assert len(evaluate(env, "x{{ 'a' * n }}", n=MAX_TEXT - 1)) == MAX_TEXT


def test_a_large_history_passes_through_templates(env: TemplateEnv) -> None:
    history = DataTable(("role", "content"), [("user", "x" * 1000)] * 2000)
    grown = evaluate(env, "{{ history + [{'role': 'assistant', 'content': 'ok'}] }}", history=history)
    assert len(grown) == 2001


def test_too_large_is_its_own_error_type(env: TemplateEnv) -> None:
    with pytest.raises(TemplateError, match="the limit is") as caught:
        evaluate(env, "{{ 'a' * n }}", n=MAX_TEXT + 1)
    assert caught.value.type == "template_too_large"
    with pytest.raises(TemplateError) as caught:
        evaluate(env, "{{ text|from_json }}", text="[" + "0," * 600_000 + "0]")
    assert caught.value.type == "template_too_large"


@pytest.mark.parametrize(("source", "message"), [
    ("{% for i in xs %}{{ ((-{[]: 0}) is number) }}{% endfor %}", "unhashable"),
    ("{% for i in xs %}{{ (-0|length.ljust(0)) }}{% endfor %}", "no filter named 'length.ljust'"),
    ("{% for i in xs %}{{ (not ({0[0]: 0} is number)) }}{% endfor %}", "no element 0"),
])
def test_a_statement_template_that_cannot_compile_is_a_syntax_problem(env: TemplateEnv, source: str,
                                                                       message: str) -> None:
    with pytest.raises(TemplateSyntax, match=message):
        env.compile(source)


@pytest.mark.parametrize("source", ["{{ i + 1 }}", "{{ i < N and not done }}", "{{ row.role ~ ':' }}",
                                    "{{ xs[0] * 2 if xs else none }}", "{{ {'n': -i, 'l': [i, 2.5]} }}"])
def test_plain_expressions_are_compiled_to_python(env: TemplateEnv, source: str) -> None:
    assert env.compile_expression(source) is not None


@pytest.mark.parametrize("source", ["{{ xs | length }}", "{{ double(2) }}", "{{ x is defined }}", "{{ s[1:] }}",
                                    "{{ loop }}", "{{ 1 if x }}", "a {{ x }}"])
def test_what_only_jinja2_evaluates_stays_with_it(env: TemplateEnv, source: str) -> None:
    assert env.compile_expression(source) is None


@pytest.mark.parametrize(("source", "message"), [
    ("{{ x + 1 }}", "'x' is undefined"),
    ("{{ d.missing }}", "'dict object' has no attribute 'missing' (its keys: a, b)"),
    ("{{ d['zz'] < 1 }}", "'dict object' has no attribute 'zz' (its keys: a, b)"),
    ("{{ 1 // 0 }}", "ZeroDivisionError: integer division or modulo by zero"),
    ("{{ 'a' * 10**8 }}", "the template would build a repeated value of about 100,000,000 characters; "
                          "the limit is 10,000,000"),
    ("{{ d.__class__ }}", "access to attribute '__class__' of 'dict' object is unsafe."),
])
def test_compiled_expressions_fail_as_jinja2_does(env: TemplateEnv, source: str, message: str) -> None:
    reference = TemplateEnv(python_expressions=False)
    for each in (env, reference):
        with pytest.raises(TemplateError) as raised:
            evaluate(each, source, d={"a": 1, "b": 2})
        assert message in raised.value.message


def test_a_compiled_expression_reads_a_blocks_outputs_before_the_runs_values(env: TemplateEnv) -> None:
    scope = env.new_scope({"text": "variable", "n": 1})
    evaluator = env.compile("{{ text ~ '/' ~ n }}")
    assert evaluator.evaluate(scope) == "variable/1"
    scope.overlay({"text": "output"})
    assert evaluator.evaluate(scope) == "output/1"
    scope.clear_overlay()
    assert evaluator.evaluate(scope) == "variable/1"


def test_an_undefined_name_in_a_list_is_an_error_not_a_hidden_undefined(env: TemplateEnv) -> None:
    # jinja2 itself would put an Undefined object in the list; the compiled expression refuses it at once.
    with pytest.raises(TemplateError, match="'x' is undefined"):
        evaluate(env, "{{ [1, x] }}")
