"""The robots API's request bodies and answers as pydantic models: the handlers validate and answer through them,
and /openapi.json is built from their JSON Schemas (engine.web.service.openapi), so the document cannot drift from
what the routes do."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ErrorAnswer", "ResumeRequest", "RobotInfo", "RobotList", "RunAccepted", "RunAnswer", "RunRequest",
           "RunStatus", "SessionAnswer"]

RunStatus = Literal["queued", "running", "succeeded", "failed", "interrupted"]
"""`queued`: waiting for a worker (the Celery backend); `interrupted`: its process died before the run finished."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunRequest(_Model):
    """`POST /v1/robots/{name}/runs`: the run's inputs, typed by the robot's Start inputs (as `--input` types them)."""

    inputs: dict[str, Any] = Field(default_factory=dict, description="input name → value; missing ones take Start's "
                                                                     "default")
    session: str | None = Field(default=None, description="a conversation's id, for a robot with memory (reserved: "
                                                          "sessions come with durable runs; refused with 501 for now)")
    wait: bool = Field(default=True, description="true: answer when the run ends, with its result; false: answer "
                                                 "202 with its id at once")
    message_level: Literal["Release", "Debug", "Detailed"] | None = Field(
        default=None, description="the run's message level (its trace and its events); default: the diagram's own")


class RobotInfo(_Model):
    """One robot: a diagram of the served folder, named by its file's stem."""

    name: str
    description: str
    inputs: dict[str, Any] = Field(description="JSON Schema of the run's inputs, from the Start block's defaults")
    memory: list[str] = Field(description="variables kept between the runs of one session (Start `memory`)")
    can_wait: bool = Field(description="whether a run may stop to wait for a person (a `Wait` block)")


class RobotList(_Model):
    robots: list[RobotInfo]


class RunAnswer(_Model):
    """A run: `diagrama run --output json`'s object (less the server's trace path), with its robot, steps and
    duration; variables, path and errors are final once `status` is `succeeded` or `failed`."""

    run_id: str
    robot: str
    status: RunStatus
    variables: dict[str, Any] = Field(default_factory=dict)
    path: list[str] = Field(default_factory=list, description="block ids in the order they ran")
    errors: list[dict[str, Any]] = Field(default_factory=list, description="{block, type, message} of each error")
    steps: int | None = None
    duration_ms: float | None = None


class RunAccepted(_Model):
    """`wait: false`: the run is started (or queued); follow it at `run` and `events`."""

    run_id: str
    status: RunStatus
    run: str = Field(description="the run's URL (GET)")
    events: str = Field(description="the run's events (GET, text/event-stream)")


class ErrorAnswer(_Model):
    """Any refusal: what is wrong, and for bad inputs each problem."""

    error: str
    problems: list[str] = Field(default_factory=list)


# Durable runs (issue 27) bring these two: the routes that answer with them wait in app.DURABLE_OPERATIONS.


class ResumeRequest(_Model):
    """`POST /v1/runs/{run_id}/resume`: the answer to the `Wait` a run stopped at, checked against the Wait's form."""

    answer: dict[str, Any] = Field(description="the Wait's form filled in (its `form` is the JSON Schema)")
    wait: bool = Field(default=True, description="true: answer when the run ends or waits again; false: 202 at once")


class SessionAnswer(_Model):
    """`GET /v1/sessions/{session_id}`: a conversation, with its robot's Start `memory` as its last run left it."""

    session_id: str
    robot: str
    memory: dict[str, Any] = Field(description="memory variable → its value after the session's last run")
