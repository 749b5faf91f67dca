"""Wait: a person in the loop. The run stops `waiting` until someone answers, then goes on with `answer`.

The first time a run reaches a Wait, the block asks (its prompt rendered, its form, its timeout):
the executor checkpoints the run and ends it as `waiting`, keeping nothing in memory. The answer
comes with `diagrama resume RUN_ID --input name=value` (or the studio, or the HTTP API), checked
against `form` (a JSON Schema) before the run goes on; the Wait then runs again and outputs it as
`answer`. An answer later than `timeout` seconds after the question fails the Wait with
`wait_timeout`, under the block's error level.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from engine import Block, Report, RunSuspended, WaitTimeout

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio


class WaitInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    prompt: str = Field(description="what the person is asked")
    form: dict[str, Any] | None = Field(default=None, description="the answer's JSON Schema (an object's properties)")
    timeout: float | None = Field(default=None, gt=0, description="seconds to answer; later, the Wait fails "
                                                                  "with wait_timeout")


class WaitOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    answer: Any = Field(default=None, description="the person's answer, as the form describes it")
    waited: float = Field(default=0.0, description="seconds between the question and the answer")


class Wait(Block):
    """Stops the run until a person answers (`diagrama resume RUN_ID --input ...`)."""

    Inputs = WaitInputs
    Outputs = WaitOutputs
    effects: ClassVar[bool] = True

    def check(self, constants: Mapping[str, Any], report: Report) -> None:
        form = constants.get("form")
        if isinstance(form, dict):
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(form)
            except SchemaError as exc:
                report("form", f"form is no JSON Schema: {exc.message}",
                       "e.g. {type: object, properties: {approved: {type: boolean}}, required: [approved]}")

    def run(self, inputs: WaitInputs, context: RunContext) -> dict[str, Any]:
        answer = context.answer
        if answer is None or answer.block != self.id:
            raise RunSuspended(inputs.prompt, inputs.form, inputs.timeout)
        context.answer = None
        waited = max(0.0, time.time() - answer.asked_at)
        if inputs.timeout is not None and waited > inputs.timeout:
            raise WaitTimeout(f"the answer came {waited:.0f} s after the question, past the timeout of "
                              f"{inputs.timeout:g} s")
        return {"answer": answer.value, "waited": round(waited, 3)}
