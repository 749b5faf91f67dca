"""Stage 5: the diagram's triggers against its Start: each schedule's inputs typed as the API types a request's
(engine.compile.inputs.fitted_inputs), each webhook input a Start input and its template compiled now, reading only
`body` and `headers`. The cron expressions and timezones were checked with the top-level keys (engine.format.triggers).
"""

from __future__ import annotations

from engine.compile.block import RunSettings
from engine.compile.diagram import CompiledBlock
from engine.compile.inputs import fitted_inputs
from engine.compile.secrets import SECRET_FUNCTION
from engine.compile.validate.compilation import Compilation, compile_template
from engine.format.names import suggest

__all__ = ["HOOK_NAMES", "check_triggers"]

HOOK_NAMES = frozenset({"body", "headers"})
"""What a webhook's input templates read: the request's JSON body, and its headers with lower-cased names."""


def check_triggers(c: Compilation, start: CompiledBlock) -> None:
    settings = start.impl.settings
    assert isinstance(settings, RunSettings)
    spec = c.spec
    if spec is None:
        return
    for index, schedule in enumerate(spec.schedules):
        _typed, problems = fitted_inputs(settings.inputs, schedule.inputs)
        for name, problem in problems:
            c.problems.add(("schedules", index, "inputs", name), f"schedule {index}: {problem}",
                           field=f"schedules[{index}].inputs.{name}", code="schedule_input")
    if spec.webhook is None:
        return
    readable = HOOK_NAMES | (set(c.env.functions) - {SECRET_FUNCTION, "tools"})  # no secret reaches an input
    for name, value in spec.webhook.inputs.items():
        where = ("webhook", "inputs", name)
        if name not in settings.inputs:
            c.problems.add(where, f"webhook input '{name}' is no Start input", field=f"webhook.inputs.{name}",
                           hint=suggest(name, list(settings.inputs)) or "declare it under Start's inputs, with a "
                                                                         "default", code="webhook_input")
            continue
        evaluator = compile_template(c, value, where, None, f"webhook.inputs.{name}")
        unknown = sorted(evaluator.names - readable) if evaluator is not None else []
        if unknown:
            c.problems.add(where, f"webhook input '{name}' reads {', '.join(repr(n) for n in unknown)}: a webhook's "
                           "templates read only `body` (the request's JSON) and `headers` (lower-cased names)",
                           field=f"webhook.inputs.{name}", hint=suggest(unknown[0], HOOK_NAMES),
                           code="template_undefined")
