"""JSON Schema of diagram files, generated from the models and the block registry.

Each block type becomes one member of `blocks.items.oneOf`, told apart by its
`type` constant, with its own `with` inputs (each may also be a template string).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from engine.compile.block import BlockRegistry
from engine.format.spec import BlockSpec, DiagramSpec

__all__ = ["diagram_schema"]

_TEMPLATE = {"type": "string", "pattern": r"\{\{|\{%", "description": "a template"}


def _model_schema(model: type[BaseModel], defs: dict[str, Any]) -> dict[str, Any]:
    schema = model.model_json_schema(ref_template="#/$defs/{model}", by_alias=True)
    defs.update(schema.pop("$defs", {}))
    return schema


def _templated(schema: dict[str, Any]) -> dict[str, Any]:
    properties = {name: {"anyOf": [prop, _TEMPLATE], **({"description": prop["description"]}
                                                        if "description" in prop else {})}
                  for name, prop in schema.get("properties", {}).items()}
    return {"type": "object", "properties": properties, "additionalProperties": False,
            **({"required": schema["required"]} if schema.get("required") else {})}


def diagram_schema(registry: BlockRegistry) -> dict[str, Any]:
    defs: dict[str, Any] = {}
    root = _model_schema(DiagramSpec, defs)
    common = _model_schema(BlockSpec, defs)
    members = []
    for name in sorted(registry):
        cls = registry[name]
        properties = copy.deepcopy(common["properties"])
        properties["type"] = {"const": name, "description": (cls.__doc__ or name).strip().splitlines()[0]}
        properties["with"] = _templated(_model_schema(cls.Inputs, defs))
        required = ["id", "type"]
        for port in cls.ports():
            properties[port] = {"type": "string", "description": f"first block of the {port} chain"}
            required.append(port)
        if cls.Settings is not None:
            settings = _model_schema(cls.Settings, defs)
            properties.update(settings.get("properties", {}))
        members.append({"title": f"{name} block", "type": "object", "properties": properties,
                        "required": required, "additionalProperties": False})
    root["properties"]["blocks"] = {"type": "array", "minItems": 1, "items": {"oneOf": members}}
    root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    root["title"] = "diagrama diagram"
    if defs:
        root["$defs"] = defs
    return root
