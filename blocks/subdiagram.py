"""Subdiagram: runs another diagram file as one step, and hands back its final variables.

The executor runs the child (engine.runtime.nested): with this block's levels unless the child's Start
sets its own, inside the caller's deadline and `max_steps`, its steps traced under this one. A literal
`diagram` path is loaded with the caller (a problem of the child is the caller's, a cycle is refused);
a templated one when a run renders it. A child that fails is this block's `subdiagram_failed`, its
errors listed, under this block's error level.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from engine import Block, Report, SubdiagramFailed

if TYPE_CHECKING:
    from engine import Diagram, RunContext  # annotations only: importing the run context loads asyncio


class SubdiagramInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a diagram uses the block

    diagram: str = Field(min_length=1, description="the diagram file to run, relative to this one (its folder or a "
                                                   "data root)")
    # A factory, not `{}`: the schema (and the studio's form) stays free of a default (see ToolDispatch).
    inputs: dict[str, Any] = Field(default_factory=lambda: {}, description="the child's run inputs, by name")


class SubdiagramOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True)

    variables: dict[str, Any] = Field(default={}, description="the child's final variables (its inputs among them)")
    status: str | None = Field(default=None, description="succeeded (a failed child is this block's error)")
    run_id: str | None = Field(default=None, description="the child's run id; its steps are in this run's trace")


class Subdiagram(Block):
    """Runs another diagram as one step: `variables`, `status` and `run_id` come back."""

    Inputs = SubdiagramInputs
    Outputs = SubdiagramOutputs
    diagram_input: ClassVar[str | None] = "diagram"
    # The child's blocks may act outside the run; the child is not checkpointed itself, so a resume with it in
    # flight runs the whole child again (README, "Durable runs").
    effects: ClassVar[bool] = True

    def check_child(self, child: Diagram, constants: Mapping[str, Any], report: Report) -> None:
        # The names are literal even when the values are templates: read as written.
        written = self.spec.with_.get("inputs")
        known = child.settings.inputs
        for name in written if isinstance(written, dict) else ():
            if name not in known:
                close = difflib.get_close_matches(str(name), list(known), n=1)
                report(f"inputs.{name}", f"the subdiagram '{child.name}' ({child.path.name}) takes no input '{name}'",
                       f"did you mean '{close[0]}'?" if close else f"its inputs: {', '.join(known) or 'none'}")

    async def run(self, inputs: SubdiagramInputs, context: RunContext) -> dict[str, Any]:
        child = await context.run_subdiagram(inputs.diagram, inputs.inputs)
        if not child.succeeded:
            ended = child.error or {}
            listed = "; ".join(f"{error.get('block')}: {error.get('type')}: {error.get('message')}"
                               for error in child.errors if not error.get("ignored") and not error.get("handled_by"))
            raise SubdiagramFailed(f"the subdiagram '{inputs.diagram}' failed at '{ended.get('block')}' "
                                   f"({listed or ended.get('type')})")
        return {"variables": child.variables, "status": child.status, "run_id": child.run_id}
