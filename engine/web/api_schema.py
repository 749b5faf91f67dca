"""The studio API's JSON Schema: each route's answer model (`ANSWERS`: engine.web.models', engine.web.evals'),
joined into the one schema the front end's types are generated from.

`api_schema()` is committed as `engine/web/api.schema.json` (`python -m engine.web.api_schema` rewrites it); the front
end's build turns that file into `ui/src/api/types.ts` (ui/scripts/api-types.mjs), and tests/web/test_api_models.py
fails when the committed file and the models (engine.web.models) differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

from engine.web.evals import EvalListed, EvalRecord
from engine.web.knowledge import KnowledgeIndexed, KnowledgeListed, KnowledgeSearch
from engine.web.models import (
    AnswerRefused,
    BlockType,
    ChatSession,
    Checked,
    Conflict,
    CsvPreview,
    Diagram,
    DiagramFile,
    DiagramSchemaAnswer,
    DiagramSummary,
    ErrorAnswer,
    Format,
    Hash,
    LayoutAnswer,
    Parsed,
    PathAnswer,
    Preview,
    RegistryFile,
    RunData,
    RunListed,
    RunStarted,
    Saved,
    ScenarioResults,
    Session,
    SourceText,
    Version,
    VersionText,
)
from engine.web.navigation import ExampleCopied, ExampleListed, SessionListed
from engine.web.pins import Pins
from engine.web.publishing import Published

__all__ = ["ANSWERS", "API_SCHEMA", "LISTS", "api_schema", "schema_text"]

API_SCHEMA = Path(__file__).with_name("api.schema.json")


ANSWERS: dict[str, type[BaseModel] | None] = {
    "GET /api/session": Session,
    "GET /api/format": Format,
    "GET /api/blocks": BlockType,
    "GET /api/diagrams": DiagramSummary,
    "POST /api/diagrams": PathAnswer,
    "GET /api/scenarios": PathAnswer,
    "POST /api/validate": Checked,
    "GET /api/diagrams/{path}/runs": RunListed,
    "POST /api/diagrams/{path}/runs": RunStarted,
    "GET /api/diagrams/{path}/hash": Hash,
    "GET /api/diagrams/{path}/csv": CsvPreview,
    "POST /api/diagrams/{path}/rename": PathAnswer,
    "GET /api/diagrams/{path}": DiagramFile,
    "PUT /api/diagrams/{path}": Saved,
    "DELETE /api/diagrams/{path}": None,
    "GET /api/runs/{run_id}": RunData,
    "POST /api/runs/{run_id}/scenario": PathAnswer,
    "POST /api/scenarios/run": ScenarioResults,
    "GET /api/diagrams/{path}/source": SourceText,
    "PUT /api/diagrams/{path}/source": Saved,
    "POST /api/diagrams/{path}/preview": Preview,
    "POST /api/parse": Parsed,
    "GET /api/registries": RegistryFile,
    "GET /api/schema": DiagramSchemaAnswer,
    "GET /api/layouts/{key}": LayoutAnswer,
    "PUT /api/layouts/{key}": None,
    "GET /api/diagrams/{path}/versions": Version,
    "GET /api/diagrams/{path}/versions/{version}": VersionText,
    "POST /api/runs/{run_id}/resume": RunStarted,
    "POST /api/runs/{run_id}/replay": RunStarted,
    "POST /api/diagrams/{path}/chat": RunStarted,
    "GET /api/sessions/{session}": ChatSession,
    "GET /api/diagrams/{path}/evals": EvalListed,
    "GET /api/diagrams/{path}/evals/{eval_id}": EvalRecord,
    "GET /api/diagrams/{path}/knowledge": KnowledgeListed,
    "POST /api/diagrams/{path}/knowledge/{name}/search": KnowledgeSearch,
    "POST /api/diagrams/{path}/knowledge/{name}/index": KnowledgeIndexed,
    "GET /api/diagrams/{path}/sessions": SessionListed,
    "DELETE /api/sessions/{session}": None,
    "GET /api/examples": ExampleListed,
    "POST /api/examples": ExampleCopied,
    "GET /api/diagrams/{path}/pins": Pins,
    "PUT /api/diagrams/{path}/pins/{block}": Pins,
    "DELETE /api/diagrams/{path}/pins/{block}": Pins,
    "GET /api/diagrams/{path}/published": Published,
    "POST /api/diagrams/{path}/publish": Published,
    "POST /api/diagrams/{path}/rollback": Published,
}
"""Each route's answer when it succeeds (a list of the model for the listings, None for no body); a refusal is
an ErrorAnswer, a refused save a Conflict, a refused answer to a Wait or a refused publish an AnswerRefused."""
LISTS = frozenset({"GET /api/blocks", "GET /api/diagrams", "GET /api/scenarios", "GET /api/diagrams/{path}/runs",
                   "GET /api/registries", "GET /api/diagrams/{path}/versions", "GET /api/diagrams/{path}/evals",
                   "GET /api/diagrams/{path}/knowledge", "GET /api/diagrams/{path}/sessions", "GET /api/examples"})


class _Generator(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False  # a title on a field would make json-schema-to-typescript name a type after it

    def field_is_required(self, field: Any, total: bool) -> bool:
        if self.mode == "serialization":
            return not field.get("serialization_exclude")  # an answer always has every field, defaulted or not
        return super().field_is_required(field, total)


def api_schema() -> dict[str, Any]:
    """One JSON Schema: an object with a property per route (its answer) and every model under `$defs`."""
    answers: set[type[BaseModel]] = {m for m in ANSWERS.values() if m is not None} | {ErrorAnswer, Conflict,
                                                                                      AnswerRefused}
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [(model, "serialization") for model in answers]
    models.append((Diagram, "validation"))  # the document: its keys as a file may write them (mostly optional)
    _, schema = models_json_schema(sorted(models, key=lambda m: m[0].__name__), schema_generator=_Generator)
    definitions = schema["$defs"]
    routes: dict[str, Any] = {}
    for route, model in ANSWERS.items():
        answer = {"type": "null"} if model is None else {"$ref": f"#/$defs/{model.__name__}"}
        routes[route] = {"type": "array", "items": answer} if route in LISTS else answer
    routes["error"] = {"$ref": "#/$defs/ErrorAnswer"}
    routes["conflict"] = {"$ref": "#/$defs/Conflict"}
    routes["answer_refused"] = {"$ref": "#/$defs/AnswerRefused"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "StudioApi",
        "description": "The answers of the studio's HTTP API (engine/web), route by route. Generated by "
                       "`python -m engine.web.api_schema` from engine/web/models.py; do not edit.",
        "type": "object",
        "properties": routes,
        "required": list(routes),
        "additionalProperties": False,
        "$defs": dict(sorted(definitions.items())),
    }


def schema_text() -> str:
    return json.dumps(api_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    API_SCHEMA.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {API_SCHEMA.relative_to(Path.cwd()) if API_SCHEMA.is_relative_to(Path.cwd()) else API_SCHEMA}",
          file=sys.stderr)
