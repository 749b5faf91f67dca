"""Random expressions from a small jinja grammar: each ends in bounded time and memory, as a value or an error.

The grammar mixes literals, names, operators, filters, str methods, subscripts and containers, with
numbers large enough to reach the sandbox's size limits. Each expression is evaluated both as one
native value and inside text. The only errors allowed are diagrama's own (TemplateError, TemplateSyntax).
"""

from __future__ import annotations

import contextlib
import re
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import DataTable, DiagramaError
from engine.compile.templating import TemplateEnv
from tests.property import budget

pytestmark = pytest.mark.slow  # property searches

SCOPE: dict[str, Any] = {
    "n": 7,
    "big": 10**6,
    "s": "abc",
    "t": "a b\tc\nd, e",
    "xs": [1, 2, 3],
    "words": ["a", "bb", "ccc"],
    "d": {"a": 1, "b": [1, 2]},
    "table": DataTable(("role", "content"), [("user", "oi"), ("assistant", "olá")]),
    "nothing": None,
}
PEAK_MB = 150

_TEXT = st.text(alphabet=st.sampled_from("abc xyz%{}0123,.:-\t\n"), max_size=8)
ATOMS = st.one_of(
    st.integers(min_value=0, max_value=10**9).map(str),
    st.sampled_from(["0", "1", "2", "3", "10", "100", "1000000", "10000000", "999999999"]),
    st.floats(min_value=0, max_value=1e6, allow_nan=False).map(repr),
    _TEXT.map(lambda text: "'" + text.replace("\n", "\\n").replace("\t", "\\t") + "'"),
    st.sampled_from(sorted(SCOPE)),
    st.sampled_from(["true", "false", "none", "[]", "{}", "''"]),
)

_OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "~", "and", "or", "==", "!=", "<", ">=", "in", "not in"]
_FILTERS = [
    "length", "string", "upper", "lower", "title", "capitalize", "trim", "list", "join", "join(', ')", "sort",
    "unique", "reverse", "first", "last", "sum", "max", "min", "count", "default(1)", "int", "float", "abs", "round",
    "truncate(5)", "tojson", "to_json", "from_json", "map('string')", "select", "reject", "wordcount", "urlencode",
    "e", "items", "dictsort", "batch(2)", "batch(3, 0)", "slice(2)", "indent(2)", "wordwrap(5)", "center(20)",
    "replace('a', 'bb')", "format(1)", "format(1, 2)",
]
_ARG_FILTERS = ["center({})", "indent({})", "batch({})", "batch({}, 0)", "slice({})", "replace({}, {})",
                "join({})", "wordwrap({})", "truncate({})", "format({})", "default({})", "round({})"]
_METHODS = ["ljust({})", "rjust({})", "center({})", "zfill({})", "split()", "split({})", "format({})",
            "replace({}, {})", "join({})", "expandtabs({})", "count({})", "upper()", "keys()", "items()",
            "startswith({})", "strip()", "splitlines()", "index({})", "get({})"]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(inner, inner)
    three = st.tuples(inner, inner, inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from(_OPERATORS), inner).map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
        inner.map(lambda a: f"(-{a})"),
        inner.map(lambda a: f"(not {a})"),
        st.tuples(inner, st.sampled_from(_FILTERS)).map(lambda p: f"{p[0]}|{p[1]}"),
        st.tuples(inner, st.sampled_from(_ARG_FILTERS), two).map(lambda p: f"{p[0]}|{p[1].format(*p[2])}"),
        st.tuples(inner, st.sampled_from(_METHODS), two).map(lambda p: f"{p[0]}.{p[1].format(*p[2])}"),
        two.map(lambda p: f"{p[0]}[{p[1]}]"),
        three.map(lambda p: f"{p[0]}[{p[1]}:{p[2]}]"),
        two.map(lambda p: f"[{p[0]}, {p[1]}]"),
        two.map(lambda p: f"{{{p[0]}: {p[1]}}}"),
        three.map(lambda p: f"({p[0]} if {p[1]} else {p[2]})"),
        inner.map(lambda a: f"({a} is number)"),
    )


EXPRESSIONS = st.recursive(ATOMS, _extend, max_leaves=10)


@pytest.fixture(scope="module")
def env() -> TemplateEnv:
    return TemplateEnv()


@pytest.fixture(scope="module")
def traced() -> Iterator[None]:
    tracemalloc.start()
    yield
    tracemalloc.stop()


class _Peak:
    mb = 0.0


@contextlib.contextmanager
def _peak() -> Iterator[_Peak]:
    """The most memory allocated inside the block, above what was held when it began."""
    found = _Peak()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    yield found
    found.mb = (tracemalloc.get_traced_memory()[1] - held) / 2**20


def _outcome(env: TemplateEnv, source: str) -> Any:
    """The value, or the DiagramaError: anything else escapes and fails the test."""
    try:
        return env.compile(source).evaluate(env.new_scope(dict(SCOPE)))
    except DiagramaError as exc:
        return exc


@budget(max_examples=150)
@given(expression=EXPRESSIONS)
def test_an_expression_is_a_value_or_a_template_error_in_bounded_memory(env, traced, expression: str) -> None:
    for source in (f"{{{{ {expression} }}}}", f"[{{{{ {expression} }}}}]"):
        with _peak() as peak:
            _outcome(env, source)
        assert peak.mb < PEAK_MB, f"{source} took {peak.mb:.0f} MB"


@budget(max_examples=40)
@given(statement=st.tuples(EXPRESSIONS, EXPRESSIONS))
def test_statements_render_text_or_a_template_error(env, traced, statement: tuple[str, str]) -> None:
    # The loop runs over a short list: time is bounded per operation, not per loop (a loop over a
    # 10-million-character text takes seconds), so the grammar does not choose what is iterated.
    value, body = statement
    source = f"{{% set v = {value} %}}{{% for item in xs %}}{{{{ {body} }}}}{{{{ v }}}}{{% endfor %}}"
    with _peak() as peak:
        outcome = _outcome(env, source)
    assert isinstance(outcome, str | DiagramaError)
    assert peak.mb < PEAK_MB, f"{source} took {peak.mb:.0f} MB"


@pytest.fixture(scope="module")
def reference() -> TemplateEnv:
    return TemplateEnv(python_expressions=False)


_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")


def _seen(outcome: Any) -> tuple[str, str]:
    """An outcome as it can be compared: the value's type and repr (NaN equals NaN), or the error's type and words."""
    if isinstance(outcome, DiagramaError):
        return type(outcome).__name__, str(outcome)
    # A generator (`(-0|items)`) is shown with its address: two equal ones differ only there.
    return type(outcome).__name__, _ADDRESS.sub(" at 0x…>", repr(outcome))


@budget(max_examples=400)
@given(expression=EXPRESSIONS)
def test_an_expression_compiled_to_python_means_what_jinja2_makes_of_it(env, reference, expression: str) -> None:
    # engine.compile.expressions compiles the plain ones (no filter, call, test or slice); they must agree
    # with jinja2's sandbox on every value and every error, the size limits' included.
    source = f"{{{{ {expression} }}}}"
    assert _seen(_outcome(env, source)) == _seen(_outcome(reference, source)), source
