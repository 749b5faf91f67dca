"""The robots API's request bodies and answers as pydantic models: the handlers validate and answer through them,
and /openapi.json is built from their JSON Schemas (engine.web.service.openapi), so the document cannot drift from
what the routes do."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.format.spec import Budget

__all__ = ["SESSION_PATTERN", "ErrorAnswer", "ResumeRequest", "RobotInfo", "RobotList", "RunAccepted", "RunAnswer",
           "RunCost", "RunRequest", "RunStatus", "SessionAnswer", "WaitingFor"]

RunStatus = Literal["queued", "running", "waiting", "succeeded", "failed", "interrupted", "cancelled"]
"""`queued`: waiting for a worker (the Celery backend); `waiting`: stopped at a `Wait` for a person's answer
(`POST /v1/runs/{id}/resume` goes on); `interrupted`: its process died before the run finished (resume goes on from
its last checkpoint); `cancelled`: given up while waiting or interrupted (`diagrama resume RUN --cancel`)."""

SESSION_PATTERN = r"^[A-Za-z0-9_.:@-]{1,100}$"
"""A session's id: a caller's own (a chat's id, a user's), kept to characters that need no escaping in a URL."""


_CALLBACK = ("where to POST the run's answer (GET /v1/runs/{id}'s JSON) when it ends: succeeded, failed, waiting or "
             "cancelled; signed X-Diagrama-Signature: sha256=HMAC-SHA256(secret, X-Diagrama-Timestamp + '.' + body); "
             "a host of the server's --callback-host list")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunRequest(_Model):
    """`POST /v1/robots/{name}/runs`: the run's inputs, typed by the robot's Start inputs (as `--input` types them)."""

    inputs: dict[str, Any] = Field(default_factory=dict, description="input name → value; missing ones take Start's "
                                                                     "default")
    session: str | None = Field(default=None, pattern=SESSION_PATTERN, description=(
        "a conversation's id, for a robot with memory (Start `memory`): the run starts with the values the "
        "session's last run left and stores its own when it succeeds; runs of one session take turns"))
    wait: bool = Field(default=True, description="true: answer when the run ends, with its result; false: answer "
                                                 "202 with its id at once")
    message_level: Literal["Release", "Debug", "Detailed"] | None = Field(
        default=None, description="the run's message level (its trace and its events); default: the diagram's own")
    callback_url: str | None = Field(default=None, max_length=2048, description=_CALLBACK)
    budget: Budget | None = Field(default=None, description="lower the robot's budget (Start `budget`) for this run, "
                                                            "never raise it: {usd, tokens, requests}, any subset; a "
                                                            "request that would pass it fails with budget_exceeded")


class RobotInfo(_Model):
    """One robot: a diagram of the served folder, named by its file's stem."""

    name: str
    description: str
    inputs: dict[str, Any] = Field(description="JSON Schema of the run's inputs, from the Start block's defaults")
    memory: list[str] = Field(description="variables kept between the runs of one session (Start `memory`)")
    can_wait: bool = Field(description="whether a run may stop to wait for a person (a `Wait` block)")


class RobotList(_Model):
    robots: list[RobotInfo]


class WaitingFor(_Model):
    """The `Wait` a run stopped at: its question, and the JSON Schema its answer must fit."""

    block: str
    prompt: str
    form: dict[str, Any] | None = Field(default=None, description="JSON Schema of the answer (none: any object)")
    timeout: float | None = Field(default=None, description="seconds from `asked_at` after which an answer is "
                                                             "refused and the run fails (`wait_timeout`)")
    asked_at: float = Field(description="when the Wait asked, seconds since the epoch")


class RunCost(_Model):
    """What a run's requests cost (README, "Cost"): `usd` null when any request's price is unknown."""

    usd: float | None = Field(description="the total in USD; null when any request's price is unknown")
    requests: int = Field(description="the requests the run made")
    unknown_steps: int = Field(description="the requests whose model has no price")
    known_usd: float | None = Field(default=None, description="with `usd` null: what the priced requests cost")


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
    waiting: WaitingFor | None = Field(default=None, description="with status `waiting`: what the Wait asks")
    cost: RunCost | None = Field(default=None, description="what its requests cost (null: not known to this answer, "
                                                           "as for a run still going)")
    usage: dict[str, int] | None = Field(default=None, description="its requests' tokens per kind")


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


class ResumeRequest(_Model):
    """`POST /v1/runs/{run_id}/resume`: the answer to the `Wait` a run stopped at, checked against the Wait's form;
    none for a run that was interrupted (it goes on from its last checkpoint)."""

    answer: dict[str, Any] | None = Field(default=None, description="the Wait's form filled in (the run's "
                                                                    "`waiting.form` is its JSON Schema)")
    wait: bool = Field(default=True, description="true: answer when the run ends or waits again; false: 202 at once")
    callback_url: str | None = Field(default=None, max_length=2048, description=_CALLBACK)


class SessionAnswer(_Model):
    """`GET /v1/sessions/{session_id}`: a conversation, with its robot's Start `memory` as its last run left it."""

    session_id: str
    robot: str
    turns: int = Field(description="runs of the session that succeeded (each stored its memory)")
    memory: dict[str, Any] = Field(description="memory variable → its value after the session's last good run")
    updated: float | None = Field(default=None, description="when a run last stored it, seconds since the epoch")
    running: str | None = Field(default=None, description="the run holding the session now (its turn), if any: one "
                                                          "running, or one waiting or interrupted, which the session's "
                                                          "next run waits for (409 until it goes on or is cancelled)")
