"""Wait: a person in the loop. The run stops `waiting` until someone answers, then goes on with `answer`.

The first time a run reaches a Wait, the block asks (its prompt rendered, its form, its timeout):
the executor checkpoints the run and ends it as `waiting`, keeping nothing in memory. The answer
comes with `diagrama resume RUN_ID --input name=value` (or the studio, or the HTTP API), checked
against `form` (a JSON Schema) before the run goes on; the Wait then runs again and outputs it as
`answer`. An answer later than `timeout` seconds after the question fails the Wait with
`wait_timeout`, under the block's error level. A scenario answers it by block id (`replies:
{approve: [{answer: {approved: true}, waited: 60}]}`): the answer is checked against the form
as a person's is, and `waited` pretends that many seconds passed. `notify: {webhook, allowed_hosts, email}` tells
someone the run waits (a JSON POST, an e-mail), with a signed link that answers it (blocks/_wait_notify.py,
blocks/_wait_email.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from blocks._wait_notify import WaitNotify
from engine import Block, BlockError, Report, RunSuspended, WaitTimeout, schema_problems, schema_refusal

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio
    from engine.format.spec import DiagramSpec


class WaitInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    prompt: str = Field(description="what the person is asked")
    form: dict[str, Any] | None = Field(default=None, description="the answer's JSON Schema (an object's properties)")
    timeout: float | None = Field(default=None, gt=0, description="seconds to answer; later, the Wait fails "
                                                                  "with wait_timeout")
    notify: WaitNotify | None = Field(default=None, description="{webhook, allowed_hosts, email: {to, subject}}: a "
                                                                "JSON POST and/or an e-mail when the run stops here, "
                                                                "with a signed answer_url")


class WaitOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    answer: Any = Field(default=None, description="the person's answer, as the form describes it")
    waited: float = Field(default=0.0, description="seconds between the question and the answer")


class Wait(Block):
    """Stops the run until a person answers (`diagrama resume RUN_ID --input ...`)."""

    Inputs = WaitInputs
    Outputs = WaitOutputs
    effects: ClassVar[bool] = True
    asks_person: ClassVar[bool] = True

    def check(self, constants: Mapping[str, Any], report: Report) -> None:
        form = constants.get("form")
        if isinstance(form, dict):
            refusal = schema_refusal(form)  # a pattern too: answers are matched in linear time, never backtracking
            if refusal is not None:
                example = "e.g. {type: object, properties: {approved: {type: boolean}}, required: [approved]}"
                report("form", f"form is no JSON Schema we can check answers with: {refusal}",
                       None if "linear time" in refusal else example)

    def check_diagram(self, diagram: DiagramSpec, report: Report) -> None:
        from blocks._wait_email import check_written  # a templated notify: (a subject) is checked as written

        check_written(self.spec.with_.get("notify"), report)

    async def run(self, inputs: WaitInputs, context: RunContext) -> dict[str, Any]:
        answer = context.answer
        if answer is None or answer.block != self.id:
            scripted = context.services.scripted
            # By its address from the top run (`review/approve` in a Subdiagram's child), as scenarios name it.
            reply = scripted.answer(context.address) if scripted is not None else None
            if reply is None:
                if inputs.notify is not None:
                    from blocks._wait_notify import notify

                    await notify(inputs.notify, inputs.prompt, inputs.form, inputs.timeout, context)
                raise RunSuspended(inputs.prompt, inputs.form, inputs.timeout)
            return self._answered(inputs, reply.get("answer"), float(reply.get("waited") or 0.0), checked=False)
        context.answer = None
        return self._answered(inputs, answer.value, max(0.0, time.time() - answer.asked_at), checked=True)

    def _answered(self, inputs: WaitInputs, value: Any, waited: float, *, checked: bool) -> dict[str, Any]:
        """The Wait's outputs for an answer given `waited` seconds after the question; a scenario's (`checked` False)
        is held to the form here, as `diagrama resume` holds a person's."""
        if not checked and inputs.form:
            problems = schema_problems(inputs.form, value)
            if problems:
                raise BlockError("the scenario's answer does not fit the form: " + "; ".join(problems),
                                 type="answer_invalid")
        if inputs.timeout is not None and waited > inputs.timeout:
            raise WaitTimeout(f"the answer came {waited:.0f} s after the question, past the timeout of "
                              f"{inputs.timeout:g} s")
        return {"answer": value, "waited": round(waited, 3)}
