"""Robot scenario tests: scenario files, their run against scripted vendors, the verdict.

A scenario runs its diagram offline: every request block is answered by the simulator
in its vendor's wire format (scripted replies per block id, in order), an HttpRequest block by
its scripted HTTP answers, tools may be stubbed, `secrets` are the only environment it sees,
and the expectations are checked against the run, its trace and the requests the robot sent.
`diagrama test` and the pytest plugin both use `run_scenario`.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from engine.compile.block import BlockRegistry
from engine.compile.diagram import CompiledBlock, Diagram
from engine.compile.inputs import check_inputs
from engine.compile.loader import load_diagram
from engine.errors import DiagramaError, DiagramInvalid, Problem
from engine.format.jsonout import dumps_plain, plain
from engine.format.names import suggest
from engine.format.redact import MIN_SECRET_LENGTH, Redactor
from engine.format.yamlfile import LineMap, read_yaml
from engine.providers.simulator import Simulator
from engine.runs.traces import SCENARIO_SUFFIX
from engine.runtime.context import Services
from engine.runtime.execute import RunResult, execute
from engine.runtime.scripted import ScriptedBlocks
from engine.runtime.trace import new_run_id
from engine.testing.replies import AnyReply, as_function_reply, block_kind, misfit_replies
from engine.testing.web_scenarios import ExpectedHttpRequest, http_expectations

__all__ = ["Scenario", "ScenarioFile", "Verdict", "load_scenarios", "run_scenario", "scenario_files", "scenario_schema"]


def _long_enough(secrets: dict[str, str]) -> dict[str, str]:
    """A secret the redactor could not scrub is refused, as a run refuses it (engine.compile.secrets)."""
    short = sorted(name for name, value in secrets.items() if len(value) < MIN_SECRET_LENGTH)
    if short:
        raise ValueError(f"{', '.join(short)}: secrets must be at least {MIN_SECRET_LENGTH} characters (a shorter "
                         "one could not be told apart from ordinary text, so it could not be redacted)")
    return secrets


Secrets = Annotated[dict[str, str], AfterValidator(_long_enough)]


class ExpectedFunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    block: str | None = None
    function: str | None = None
    arguments: dict[str, Any] | None = None


class ExpectedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    block: str | None = None
    name: str
    arguments: dict[str, Any] | None = None


class ExpectedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    block: str
    contains_message: dict[str, Any]


class ExpectedError(BaseModel):
    model_config = ConfigDict(extra="forbid")
    block: str | None = None
    type: str | None = None
    message_contains: str | None = None


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: str | None = Field(default=None, pattern="^(succeeded|failed)$")
    path: list[str] | None = None
    path_contains: list[str] | None = None
    variables: dict[str, Any] | None = None
    called_tools: list[ExpectedCall] | None = None
    http_requests: list[ExpectedHttpRequest] | None = None
    function_calls: list[ExpectedFunctionCall] | None = Field(
        default=None, description="every call of a Function block, in order: {block, function, arguments}")
    requests: list[ExpectedRequest] | None = None
    errors: list[ExpectedError] | None = None


def _replies_any_of(schema: dict[str, Any]) -> None:
    # Two kinds can fit one reply as written ({error: timeout}: an HTTP answer, or a Function's error message); the
    # block it is for decides (`misfit_replies`), so an editor's schema accepts either rather than exactly one.
    items = schema["properties"]["replies"]["additionalProperties"]["items"]
    items["anyOf"] = items.pop("oneOf")


class Scenario(BaseModel):
    """One robot test case."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_replies_any_of)
    scenario: str = Field(description="what the robot should do, in words")
    diagram: str | None = Field(default=None, description="the diagram file, relative to this file")
    inputs: dict[str, Any] = Field(default_factory=dict)
    replies: dict[str, list[AnyReply]] = Field(
        default_factory=dict, description="per block id, used in order: a request block's vendor replies, a Function "
                                          "block's {result} or {error}, an HttpRequest's HTTP answers; a "
                                          "subdiagram's block by its Subdiagram block's id, '/', its own: sub/ask")
    tools: dict[str, Any] = Field(default_factory=dict, description="tool stubs: name → result, replacing handlers")
    secrets: Secrets = Field(default_factory=dict, description="the environment secret('NAME') reads here "
                                                                      "(a scenario sees no other; a secret not given "
                                                                      "reads as offline-secret-NAME)")
    tags: list[str] = Field(default_factory=list)
    clock: AwareDatetime | None = Field(default=None, description="the run's clock, as now() and today() read it "
                                                                   "(an ISO instant with its offset); none: the time "
                                                                   "the run starts")
    expect: Expect = Field(default_factory=Expect)


class Setup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    diagram: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    secrets: Secrets = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    clock: AwareDatetime | None = None


class ScenarioFile(BaseModel):
    """A file of scenarios: one scenario, a list of them, or `setup` plus `scenarios`."""

    model_config = ConfigDict(extra="forbid")
    setup: Setup = Field(default_factory=Setup)
    scenarios: list[Scenario]


@dataclass
class LoadedScenario:
    spec: Scenario
    file: Path
    line: int | None
    diagram: Path

    @property
    def name(self) -> str:
        return self.spec.scenario


def scenario_files(paths: list[Path]) -> list[Path]:
    """The files named, and every *.scenario.yaml below the folders named, in order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("*.scenario.yaml"))
        else:
            found.append(path)
    return found


def load_scenarios(path: Path) -> list[LoadedScenario]:
    """Read a scenario file; problems carry file and line, as diagram errors do."""
    data, lines = read_yaml(path)
    kind = "full"
    if isinstance(data, list):
        data, kind = {"scenarios": data}, "list"
    elif isinstance(data, dict) and "scenarios" not in data and "setup" not in data:
        data, kind = {"scenarios": [data]}, "single"
    try:
        parsed = ScenarioFile.model_validate(data)
    except ValidationError as exc:
        raise DiagramInvalid([_problem(path, lines, error, kind) for error in exc.errors(include_url=False)]) from None
    loaded = []
    for index, scenario in enumerate(parsed.scenarios):
        diagram = scenario.diagram or parsed.setup.diagram
        where: tuple[str | int, ...] = {"list": (index,), "single": ()}.get(kind, ("scenarios", index))
        if diagram is None:
            raise DiagramInvalid([Problem(str(path), lines.line(where), f"scenario '{scenario.scenario}' names no diagram",
                                          field="diagram", hint="add 'diagram: path/to/diagram.yaml'")])
        merged = scenario.model_copy(update={"inputs": {**parsed.setup.inputs, **scenario.inputs},
                                             "secrets": {**parsed.setup.secrets, **scenario.secrets},
                                             "tags": [*parsed.setup.tags, *scenario.tags],
                                             "clock": scenario.clock or parsed.setup.clock})
        loaded.append(LoadedScenario(merged, path, lines.line(where), (path.parent / diagram).resolve()))
    return loaded


def _problem(path: Path, lines: LineMap, error: Any, kind: str) -> Problem:
    loc = tuple(error["loc"])
    if kind == "single" and loc[:2] == ("scenarios", 0):
        loc = loc[2:]
    elif kind == "list" and loc[:1] == ("scenarios",):
        loc = loc[1:]
    message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
    return Problem(str(path), lines.line(loc), message, field=".".join(map(str, loc)) or None, code=error["type"])


@dataclass
class Verdict:
    scenario: LoadedScenario
    result: RunResult | None
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    def report(self) -> str:
        where = f"{self.scenario.file}:{self.scenario.line or 1}"
        lines = [f"scenario '{self.scenario.name}' ({where}) failed:"]
        lines += [f"  - {failure}" for failure in self.failures]
        if self.result is not None and self.result.trace:
            lines.append(f"  trace: {self.result.trace}  (diagrama trace {self.result.trace})")
        return "\n".join(lines)


def _dumps(value: Any) -> str:
    return dumps_plain(value, sort_keys=True)


def _plain(value: Any) -> Any:
    return plain(value, sort_keys=True)


def _matches(expected: Any, actual: Any) -> bool:
    """Mappings match on the keys written (recursively); everything else must be equal."""
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return all(key in actual and _matches(value, actual[key]) for key, value in expected.items())
    return bool(_plain(expected) == _plain(actual))


def _is_subsequence(wanted: list[str], path: list[str]) -> bool:
    walk = iter(path)
    return all(any(step == block for step in walk) for block in wanted)


def _check(scenario: Scenario, result: RunResult, simulator: Simulator, scripted: ScriptedBlocks) -> Iterator[str]:
    expect = scenario.expect
    if simulator.exhausted:
        for block in dict.fromkeys(simulator.exhausted):
            yield f"block '{block}' asked more times than the scenario scripted replies for it"
    for block in dict.fromkeys(scripted.exhausted):
        yield f"block '{block}' ran more times than the scenario scripted replies (or answers) for it"
    if expect.status and result.status != expect.status:
        errors = "; ".join(f"{e['block']}: {e['type']}: {e['message']}" for e in result.errors)
        yield f"status: expected {expect.status}, got {result.status}" + (f" ({errors})" if errors else "")
    if expect.path is not None and result.path != expect.path:
        yield f"path: expected {' → '.join(expect.path)}\n             got {' → '.join(result.path)}"
    if expect.path_contains is not None and not _is_subsequence(expect.path_contains, result.path):
        yield f"path_contains: {' → '.join(expect.path_contains)} is not in the path {' → '.join(result.path)}"
    for name, wanted in (expect.variables or {}).items():
        if name not in result.variables:
            yield f"variables.{name}: expected {_dumps(wanted)}, but the run never set it"
        elif not _matches(wanted, result.variables[name]):
            yield f"variables.{name}: expected {_dumps(wanted)}\n               got {_dumps(result.variables[name])}"
    answered = [(r.block, call) for r in simulator.requests for call in r.calls]
    if expect.called_tools is not None:
        actual = [{"block": block, "name": call["name"], "arguments": call["arguments"]} for block, call in answered]
        wanted_calls = [c.model_dump(exclude_none=True) for c in expect.called_tools]
        if len(wanted_calls) != len(actual) or not all(_matches(w, a) for w, a in zip(wanted_calls, actual, strict=False)):
            yield f"called_tools: expected {_dumps(wanted_calls)}\n                  got {_dumps(actual)}"
    if expect.http_requests is not None:
        wanted_http, sent_http = http_expectations(expect.http_requests, simulator.web.requests)
        if len(wanted_http) != len(sent_http) or not all(
                _matches(w, a) for w, a in zip(wanted_http, sent_http, strict=False)):
            yield f"http_requests: expected {_dumps(wanted_http)}\n                   got {_dumps(sent_http)}"
    if expect.function_calls is not None:
        wanted_functions = [c.model_dump(exclude_none=True) for c in expect.function_calls]
        made = scripted.calls
        if len(wanted_functions) != len(made) or not all(_matches(w, a) for w, a in zip(wanted_functions, made,
                                                                                         strict=False)):
            yield f"function_calls: expected {_dumps(wanted_functions)}\n                    got {_dumps(made)}"
    for wanted_request in expect.requests or []:
        sent = [r for r in simulator.requests if r.block == wanted_request.block]
        if not sent:
            yield f"requests: block '{wanted_request.block}' sent no request"
            continue
        if not any(_matches(wanted_request.contains_message, m) for r in sent for m in r.messages()):
            last = sent[-1].messages()
            yield (f"requests: no request of '{wanted_request.block}' contains a message like "
                   f"{_dumps(wanted_request.contains_message)}; its last request sent {_dumps(last[-4:])}")
    if expect.errors is not None:
        actual_errors = result.errors
        if len(expect.errors) != len(actual_errors) or not all(
            (w.block is None or w.block == a.get("block")) and (w.type is None or w.type == a.get("type"))
            and (w.message_contains is None or w.message_contains in str(a.get("message")))
            for w, a in zip(expect.errors, actual_errors, strict=False)
        ):
            yield (f"errors: expected {_dumps([e.model_dump(exclude_none=True) for e in expect.errors])}\n"
                   f"            got {_dumps(actual_errors)}")


async def run_scenario_async(scenario: LoadedScenario, registry: BlockRegistry, runs_dir: Path | None,
                             data_roots: tuple[Path, ...] = ()) -> Verdict:
    # A scenario runs with an empty environment, yet the keys of the process that runs it
    # stay out of its trace and its failure text (a key may be a scenario's input).
    secrets = Services().secrets()
    try:
        # Off the loop (the studio runs scenarios in its own): loading to run starts the diagram's MCP servers.
        diagram = await asyncio.to_thread(load_diagram, scenario.diagram, registry, data_roots=data_roots,
                                          start_servers=True)
        inputs = check_inputs(diagram, scenario.spec.inputs)
    except DiagramaError as exc:
        return Verdict(scenario, None, [Redactor(secrets).text(f"the diagram cannot run: {exc}")])
    named = {block: _block_at(diagram, block) for block in scenario.spec.replies}
    unknown = [block for block, (known, _) in named.items() if not known]
    if unknown:
        return Verdict(scenario, None, [f"replies name blocks the diagram does not have: {', '.join(unknown)} (a "
                                        "subdiagram's block is addressed through the Subdiagram block: sub/ask)"])
    blocks = {block: compiled for block, (_, compiled) in named.items()}
    misfits = misfit_replies(scenario.spec.replies, blocks)
    if misfits:
        return Verdict(scenario, None, misfits)
    calls_code = {block for block, replies in scenario.spec.replies.items()
                  if block_kind(blocks[block], replies) == "function"}
    # A Wait's answers are the executor's to give (services.scripted), as a Function's outcomes are; not a vendor's.
    asks = {block for block, replies in scenario.spec.replies.items() if block_kind(blocks[block], replies) == "wait"}
    scripts = {block: [reply.model_dump(exclude_none=True, by_alias=True) for reply in replies]
               for block, replies in scenario.spec.replies.items() if block not in calls_code and block not in asks}
    scripted = ScriptedBlocks({
        **{block: [reply.model_dump(exclude_unset=True) for reply in map(as_function_reply, replies) if reply is not None]
           for block, replies in scenario.spec.replies.items() if block in calls_code},
        **{block: [reply.model_dump() for reply in replies] for block, replies in scenario.spec.replies.items()
           if block in asks}})
    stubbed = _unknown_stubs(scenario.spec, diagram)
    if stubbed:
        return Verdict(scenario, None, stubbed)  # before running: a misspelt stub would let the real handler run
    served = copy.deepcopy(scripts)
    # Each reply by identity, as the simulator takes them (in order, or out of order by `match`).
    numbered = {id(reply): (block, number) for block, replies in served.items()
                for number, reply in enumerate(replies, start=1)}
    simulator = Simulator(served)

    async def no_wait(_seconds: float) -> None:
        await asyncio.sleep(0)  # retries happen at once: scenarios test behaviour, not clocks

    services = Services(environ=dict(scenario.spec.secrets), offline=True, sleep=no_wait,
                        simulator=simulator, tool_stubs=dict(scenario.spec.tools), scripted=scripted,
                        run_clock=scenario.spec.clock)
    result = await execute(diagram, inputs, runs_dir=runs_dir, services=services, secrets=secrets,
                           run_id=new_run_id() + SCENARIO_SUFFIX)  # `diagrama runs` marks it a scenario run
    found = [*_check(scenario.spec, result, simulator, scripted)]
    found += [f"replies: reply {number} for block '{block}' was never used"
              for replies in simulator.scripts.values() for block, number in (numbered[id(r)] for r in replies)]
    found += [f"replies: reply {number} for block '{block}' was never used" for block, number in scripted.unused()]
    failures = [result.redactor.text(failure) for failure in found]
    return Verdict(scenario, result, failures)


def _block_at(diagram: Diagram, address: str) -> tuple[bool, CompiledBlock | None]:
    """Whether `address` names a block, and which: an id of the diagram, or `sub/ask` for the block `ask` of the
    diagram the Subdiagram block `sub` runs (one more `/` per level). Below a templated path, whose child only a
    run knows, any name is taken (and its block is None)."""
    head, _, rest = address.partition("/")
    block = diagram.blocks.get(head)
    if block is None or not rest:
        return block is not None, block
    if block.child is not None:
        return _block_at(block.child, rest)
    return type(block.impl).diagram_input is not None, None


def _known_tools(diagram: Diagram, known: dict[str, None], seen: set[Path]) -> bool:
    """Add the tools of `diagram`'s registries, and its subdiagrams', to `known` (in order, once each); whether
    they are all known: a subdiagram whose path is a template has tools only a run knows."""
    if diagram.path in seen:
        return True
    seen.add(diagram.path)
    known.update(dict.fromkeys(diagram.tools.tools if diagram.tools is not None else ()))
    whole = True
    for block in diagram.blocks.values():
        if block.child is not None:
            whole = _known_tools(block.child, known, seen) and whole
        elif type(block.impl).diagram_input is not None:
            whole = False
    return whole


def _unknown_stubs(spec: Scenario, diagram: Diagram) -> list[str]:
    """A failure for each tool stub that names no tool of the diagram's registries (its subdiagrams' too: stubs
    reach every ToolDispatch of the run)."""
    found: dict[str, None] = {}
    if not _known_tools(diagram, found, set()):
        return []  # below a templated subdiagram path any name may be a tool
    known = list(found)
    failures = []
    for name in spec.tools:
        if name in known:
            continue
        hint = suggest(name, known)
        failures.append(f"tools: the stub '{name}' names no tool of the diagram's registries"
                        + (f"; {hint}" if hint else f" (tools: {', '.join(known) or 'none'})"))
    return failures


def run_scenario(scenario: LoadedScenario, registry: BlockRegistry, runs_dir: Path | None = Path("runs"),
                 data_roots: tuple[Path, ...] = ()) -> Verdict:
    return asyncio.run(run_scenario_async(scenario, registry, runs_dir, data_roots))


def scenario_schema() -> dict[str, Any]:
    """JSON Schema of a scenario file (any of its three shapes)."""
    single = Scenario.model_json_schema(ref_template="#/$defs/{model}")
    full = ScenarioFile.model_json_schema(ref_template="#/$defs/{model}")
    defs = {**single.pop("$defs", {}), **full.pop("$defs", {}), "Scenario": single}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "diagrama scenario file",
            "anyOf": [{"$ref": "#/$defs/Scenario"}, {"type": "array", "items": {"$ref": "#/$defs/Scenario"}}, full],
            "$defs": defs}
