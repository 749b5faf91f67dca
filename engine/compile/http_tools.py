"""An `http:` registry tool's templates, compiled at load: a syntax error, an unknown filter, a name that is neither
one of the tool's parameters nor a template function (nor `context`, ToolDispatch's values for the handlers), or a
`secret('NAME')` neither the diagram nor the registry lists is a load problem at the registry file's line. At a
call, `render` evaluates them over the model's arguments (engine.tools.http_tools.RenderedHttp); sending is
ToolDispatch's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.compile.evaluators import Evaluator
from engine.compile.secrets import SECRET_FUNCTION, run_environ, secret_function
from engine.compile.templating import TemplateEnv
from engine.errors import Problem, TemplateSyntax

if TYPE_CHECKING:
    from engine.tools.registry import Tool, ToolRegistry

__all__ = ["compile_http_tools"]

CONTEXT = "context"
"""The name an http tool's templates read ToolDispatch's `context:` by (`context.user_id`)."""


class _HttpTemplates:
    """One tool's compiled fields, evaluated in a scope of its arguments (a parameter not given reads as None)."""

    __slots__ = ("env", "fields", "parameters")

    def __init__(self, env: TemplateEnv, fields: dict[str, Evaluator], parameters: Iterable[str]) -> None:
        self.env, self.fields, self.parameters = env, fields, tuple(parameters)

    def render(self, arguments: Mapping[str, Any], environ: Mapping[str, str], *, offline: bool,
               context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The fields over the model's arguments and `context` (ToolDispatch's `context:`, over an argument so named)."""
        values = {**dict.fromkeys(self.parameters), **arguments, CONTEXT: dict(context or {})}
        scope = self.env.new_scope(values, run_environ(environ, offline=offline))  # `secret()` bound to this run
        return {name: evaluator.evaluate(scope) for name, evaluator in self.fields.items()}


def compile_http_tools(tools: ToolRegistry, diagram_secrets: Iterable[str],
                       environ: Mapping[str, str] | None) -> list[Problem]:
    """Compile each `http:` tool's templates into its `http_templates`; the problems found, each at its line.
    `environ`: the environment a run is about to use (a literal secret must be set in it), or None (listing only)."""
    problems: list[Problem] = []
    listed = tuple(diagram_secrets)
    for tool in tools.tools.values():
        if tool.entry.http is not None:
            _compile_one(tool, listed, environ, problems)
    return problems


def _compile_one(tool: Tool, diagram_secrets: tuple[str, ...], environ: Mapping[str, str] | None,
                 problems: list[Problem]) -> None:
    assert tool.entry.http is not None
    env = TemplateEnv({SECRET_FUNCTION: secret_function([*diagram_secrets, *tool.secrets], environ)})
    parameters = (tool.entry.parameters.get("properties") or {}).keys()
    known = {*parameters, *env.functions, CONTEXT}
    fields: dict[str, Evaluator] = {}
    found = len(problems)
    for name, written in tool.entry.http.templated().items():
        line = tool.http_lines.get(name) or tool.line
        where = f"http.{name}"
        try:
            evaluator = env.compile(written)
        except TemplateSyntax as exc:
            offset = (exc.lineno - 1) if exc.lineno and exc.lineno > 1 else 0
            message = f"template syntax error: {exc}" if exc.code == "template_syntax" else str(exc)
            problems.append(Problem(tool.source, (line + offset) if line else None, f"tool '{tool.name}': {message}",
                                    field=where, hint=exc.hint, code=exc.code))
            continue
        unknown = sorted(evaluator.names - known)
        if unknown:
            problems.append(Problem(tool.source, line, f"tool '{tool.name}': {where} reads {', '.join(unknown)}, which "
                                    "is not one of the tool's parameters", field=where, code="template_undefined",
                                    hint=f"its parameters: {', '.join(parameters) or 'none'}"))
            continue
        fields[name] = evaluator
    if len(problems) == found:
        tool.http_templates = _HttpTemplates(env, fields, parameters)
