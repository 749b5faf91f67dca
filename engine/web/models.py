"""The studio API's answers as pydantic models.

Every route answers through one of these (engine.web.api_schema maps each route to its model and joins them into
the JSON Schema the front end's types are generated from), so an answer that grows a field its model lacks fails in
tests instead of drifting from the page's types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from engine.format.links import NEXT, ON_ERROR
from engine.format.spec import COMMON_BLOCK_KEYS, ERROR_LEVELS, MESSAGE_LEVELS, BlockSpec, DiagramSpec, LinkSpec
from engine.runs.trace_steps import Step

__all__ = ["format_facts"]


class Answer(BaseModel):
    """An answer the handlers build: every field is sent, and a field that is not declared is an error."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# -- the document the page edits: the file format's own models (engine.format.spec), loosened ----------------------


class Block(BlockSpec):
    """A block as the page edits it: the keys every block has, and its type's own (settings, ports) beside them."""

    model_config = ConfigDict(title="Block")


class Diagram(DiagramSpec):
    """A diagram file as JSON, as the page edits it: an unsaved diagram may have keys the format refuses."""

    model_config = ConfigDict(title="Diagram", extra="allow")

    blocks: list[Block]  # type: ignore[assignment]  # the format's own list holds raw mappings, checked per type


DiagramData = Annotated[dict[str, Any], WithJsonSchema({"allOf": [{"$ref": "#/$defs/Diagram"}]})]
"""The file's data, sent exactly as read (its key order and numbers are what a save compares with). Its schema is
the document's; what is checked is only what the page needs to draw it (a mapping with a list of block mappings):
a diagram with mistakes in it is sent as written, beside the problems that name them."""

JsonSchemaData = Annotated[dict[str, Any], WithJsonSchema({"type": "object", "tsType": "JsonSchema"})]
"""A block type's models' JSON Schema, which the page's forms read (`tsType`: json-schema-to-typescript names the
page's own type for it)."""


# -- problems and the compiled picture ------------------------------------------------------------------------------


class Problem(Answer):
    """One thing wrong with the diagram (engine.errors.Problem), placed for the page."""

    file: str | None = Field(description="set when the problem is in another file (a registry, a CSV): its path in the folder")
    line: int | None
    column: int | None
    block: str | None
    field: str | None
    message: str
    hint: str | None
    code: str
    severity: Literal["error", "warning"]


class Link(Answer):
    """A link of the compiled diagram; `kind` is `next`, `error` (on_error) or the name of a block type's port."""

    source: str
    target: str
    kind: str
    when: str | None
    order: int | None = Field(description="1-based among the source's next links, in the order they are tried")


class Body(Answer):
    """A block with a body port (a Loop) and the blocks its body runs."""

    loop: str
    members: list[str]


class EffectiveLevel(Answer):
    """The level a block runs with, and where it comes from."""

    value: str
    inherited: bool
    from_: str = Field(alias="from")


class BlockLevels(Answer):
    error_level: EffectiveLevel
    message_level: EffectiveLevel


class Scope(Answer):
    """The names a block's templates may use."""

    with_: list[str] = Field(alias="with")
    set: list[str]
    when: list[str]


class SubdiagramFile(Answer):
    """The diagram file a block runs (a Subdiagram's literal `diagram`): what the page opens on a double-click."""

    written: str = Field(description="the path as the block writes it, relative to the diagram")
    file: str | None = Field(description="that file's path in the served folder, as GET /api/diagrams/{path} takes "
                                         "it; null when it is not a file there (missing, or in a data root)")


def _optional(*names: str) -> Callable[[dict[str, Any]], None]:
    """A model's JSON Schema with `names` not required: fields the page may not read yet, sent all the same."""
    def edit(schema: dict[str, Any]) -> None:
        schema["required"] = [name for name in schema.get("required", []) if name not in names]

    return edit


class Compiled(Answer):
    """What the canvas draws from the compiled diagram (its file's links while it does not compile)."""

    # Added after the page's types: optional there until the page reads it (the answer always has it).
    model_config = ConfigDict(json_schema_extra=_optional("subdiagrams"))

    links: list[Link]
    bodies: list[Body]
    levels: dict[str, BlockLevels]
    scope: dict[str, Scope]
    subdiagrams: dict[str, SubdiagramFile] = Field(
        default_factory=lambda: {},
        description="block id → the diagram file it runs (a Subdiagram with a literal path), by the file's data")


class RegistryTool(Answer):
    name: str
    description: str
    enabled: bool


class Registry(Answer):
    """A group of the diagram's tools, for the tools field's `tools('group')` choices."""

    group: str
    description: str = Field(default="", description="the group's description, from its registry's `groups:`")
    tools: list[RegistryTool]


class Checked(Answer):
    """A diagram's problems and compiled picture: what `POST /api/validate` answers."""

    problems: list[Problem]
    compiled: Compiled
    valid: bool
    registries: list[Registry]


class DiagramFile(Checked):
    """`GET /api/diagrams/{path}`: the file as JSON, its hash (for the save), and what it compiles to."""

    path: str
    hash: str
    diagram: DiagramData | None = Field(
        description="null when the file cannot be drawn: not YAML, or not a mapping with a list of blocks (see problems)")


class Saved(Checked):
    hash: str


class Hash(Answer):
    hash: str


# -- the folder, the session, the palette, the format ---------------------------------------------------------------


class DiagramSummary(Answer):
    path: str
    name: str
    description: str
    valid: bool
    blocks: int


class PathAnswer(Answer):
    """Where a created, renamed or saved file is, relative to the folder."""

    path: str


class CsvPreview(Answer):
    columns: list[str]
    rows: list[list[str]]
    total: int


class Session(Answer):
    read_only: bool
    allow_online: bool
    root: str
    token: str
    token_header: str


class BlockType(Answer):
    """A block type as the palette and the property panel need it, from its models."""

    type: str
    description: str
    inputs_schema: JsonSchemaData
    settings_schema: JsonSchemaData | None
    outputs: list[str]
    ports: list[str] = Field(description="the type's own keys that link to another block (a Loop's body), besides the "
                                         "links every block has (GET /api/format)")
    body_names: list[str]
    table_fields: dict[str, Literal["history", "tools", "table"]]
    is_start: bool


class LevelNames(Answer):
    default: str = Field(description="the name that means: inherit")
    names: list[str] = Field(description="every name a file may write, the default first")


class LinkKeys(Answer):
    """Which keys of a block link to other blocks; a block type's ports are in its palette entry."""

    next: str = Field(description="the key of the links tried in order: an id, or a list of {target, condition}")
    error: str = Field(description="the key of the block that handles this block's errors")
    target: str = Field(description="in a next link: the key of the block it goes to")
    condition: str = Field(description="in a next link: the key of its condition")


class Format(Answer):
    """`GET /api/format`: the facts of the file format the page needs, from engine.format.spec."""

    common_block_keys: list[str]
    levels: dict[str, LevelNames]
    links: LinkKeys


def _names(levels: dict[str, Any]) -> LevelNames:
    return LevelNames(default=next(name for name, value in levels.items() if value is None), names=list(levels))


def _key(model: type[BaseModel], field: str) -> str:
    """The key `field` of the file format has in files (KeyError here when the format renames it)."""
    info = model.model_fields[field]
    return info.alias or field


def format_facts() -> Format:
    return Format(
        common_block_keys=sorted(COMMON_BLOCK_KEYS),
        levels={_key(BlockSpec, "error_level"): _names(ERROR_LEVELS), _key(BlockSpec, "message_level"): _names(MESSAGE_LEVELS)},
        links=LinkKeys(next=NEXT, error=ON_ERROR, target=_key(LinkSpec, "to"),
                       condition=_key(LinkSpec, "when")),
    )


# -- runs -------------------------------------------------------------------------------------------------------------


class RunStarted(Answer):
    run_id: str


class Waiting(Answer):
    """What a run stopped at a Wait asks: its prompt (rendered), the answer's form (a JSON Schema), its timeout."""

    block: str
    prompt: str
    form: JsonSchemaData | None = Field(description="the answer's JSON Schema; null: any answer")
    timeout: float | None = Field(description="seconds from `asked_at` to answer; later, the Wait fails with wait_timeout")
    asked_at: float | None = Field(description="seconds since the epoch")


class RunListed(Answer):
    run_id: str
    status: str
    started: float | None = Field(description="seconds since the epoch")
    duration_ms: float | None
    steps: int | None
    waiting: Waiting | None = Field(default=None, description="what the run asks, while it is `waiting`")


class RunErrorRecord(BaseModel):
    """An error a run recorded (read from its trace, so keys older versions wrote are dropped)."""

    model_config = ConfigDict(extra="ignore")

    block: str | None
    type: str
    message: str
    ignored: bool = False
    handled_by: str | None = None


class RunData(Answer):
    """`GET /api/runs/{id}`: a run so far, for the canvas's marks and the run panel."""

    run_id: str
    diagram: str | None = Field(description="its file in the folder; null for a diagram outside it")
    status: str
    errors: list[RunErrorRecord]
    blocks: list[str]
    links: list[tuple[str, str]]
    failed: str | list[str] | None = Field(
        description="the block whose unhandled error ended the run; every failed block when on_error handled one")
    passes: dict[str, int]
    steps: list[Step]
    events: list[dict[str, Any]] = Field(description="the trace's events after `after`")
    count: int
    variables: dict[str, Any] | None = Field(
        description="the run's variables when it ended (scrubbed as its trace is); null while it runs, or for a run "
                    "this studio session did not start")
    waiting: Waiting | None = Field(default=None, description="what the run asks, while it is `waiting`")
    checkpointed: bool = Field(default=False, description="the run store has its checkpoints: it can be replayed "
                                                           "from a block it reached (POST /api/runs/{id}/replay)")
    replay_of: str | None = Field(default=None, description="the run this one replays from a block")
    session: str | None = Field(default=None, description="the conversation (session) this run was a turn of")


class ChatSession(Answer):
    """`GET /api/sessions/{session}`: a conversation's memory (Start's `memory` variables) after its last turn."""

    session: str
    diagram: str | None = Field(description="the diagram it talks to, in the folder")
    turns: int
    memory: dict[str, Any]
    updated: float | None = Field(description="seconds since the epoch")
    held_by: str | None = Field(description="the run taking its turn now, if one is")


class ScenarioResult(Answer):
    file: str
    name: str | None
    passed: bool
    failures: list[str]


class ScenarioResults(Answer):
    results: list[ScenarioResult]


# -- the YAML source beside the canvas (engine.web.source) -------------------------------------------------------------


class BlockLines(Answer):
    """Where a block is written: its first and last line (1-based)."""

    first: int
    last: int


class SourceText(Answer):
    """`GET /api/diagrams/{path}/source`: the file's text as it is on disk (or as it was at `?hash=`), and its blocks'
    lines."""

    path: str
    hash: str
    text: str
    blocks: dict[str, BlockLines]


class Parsed(Checked):
    """`POST /api/parse`: a text typed in the YAML pane read by the run's reader and checked as validation checks
    it, with lines; `diagram` is null while it cannot be drawn."""

    diagram: DiagramData | None
    blocks: dict[str, BlockLines]
    checked: bool = Field(description="false when asked for the reading only (`check: false`): then `problems` are the "
                                      "reader's alone and `compiled` is drawn from the file's links")


class Preview(Answer):
    """`POST /api/diagrams/{path}/preview`: the text a save of the diagram would write (nothing is written)."""

    text: str
    blocks: dict[str, BlockLines]


class DiagramSchemaAnswer(Answer):
    """`GET /api/schema`: the published JSON Schema of diagram files (`diagrama schema`), for the YAML pane's
    completion and hover documentation."""

    schema_: JsonSchemaData = Field(alias="schema")


class LayoutAnswer(Answer):
    """`GET /api/layouts/{key}`: an automatic layout a page stored for the layout graph whose SHA-256 is `key`."""

    layout: dict[str, Any] = Field(description="{nodes: {id: {x, y}}, edges: {id: {points, label}}}, as the page stored it")


class RegistryFile(Answer):
    """A tool registry file of the folder, for the diagram's `tools:` picker."""

    path: str
    registry: str
    groups: dict[str, str]


class Version(Answer):
    """A version of a file the studio saved (engine.web.versions): `saved` in seconds since the epoch."""

    id: str
    saved: float
    hash: str
    lines: int


class VersionText(Answer):
    """`GET /api/diagrams/{path}/versions/{version}`: that version's whole text."""

    id: str
    hash: str
    text: str


class ErrorAnswer(Answer):
    """Any refusal: 4xx with what to do instead."""

    error: str


class Conflict(ErrorAnswer):
    """409 to a save: the file changed on disk since `base_hash`; its hash now and the change (unified diff)."""

    hash: str
    diff: str


class AnswerRefused(ErrorAnswer):
    """422 to an answer: what is wrong with it for the Wait's form, one line per problem; the run stays waiting.
    422 to a publish (engine.web.publishing): the diagram's errors, one line each; nothing is published."""

    problems: list[str]
