"""What Groq models take beyond text: `image_url` parts on vision models, and a response schema.

The one place these facts are written (docs/VENDORS.md, Groq): the block's load check, the
adapter and the simulator all read them. Groq's vision models take images (as a URL, or as a
base64 `data:` URL) and no documents; `response_format: json_schema` is taken by the models of
Groq's structured-outputs list, and `strict: true` (constrained decoding) by fewer of them,
on a schema whose objects list every property as required and forbid others.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.format.parts import DocumentPart, ImagePart, Part
from engine.providers.structured import subschemas
from engine.providers.wire import Refusal, WireError, file_parts, valid_tool_name

__all__ = [
    "IMAGE_TYPES",
    "MAX_BASE64_BYTES",
    "MAX_IMAGES",
    "SCHEMA_MODELS",
    "STRICT_SCHEMA_MODELS",
    "VISION_MODELS",
    "groq_output_refusal",
    "groq_parts_refusal",
    "image_part",
    "response_format",
    "strict_problem",
]

# By model id prefix (Groq's vision and structured-outputs docs).
VISION_MODELS = ("meta-llama/llama-4-scout", "meta-llama/llama-4-maverick")
SCHEMA_MODELS = ("openai/gpt-oss", "moonshotai/kimi-k2", "meta-llama/llama-4-scout", "meta-llama/llama-4-maverick")
STRICT_SCHEMA_MODELS = ("openai/gpt-oss",)
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGES = 5
"""Images in one request (Groq's vision docs)."""
MAX_BASE64_BYTES = 4 * 1024 * 1024
"""A request carrying base64 images: at most 4 MB, else a 413 (Groq's vision docs)."""


def image_part(part: ImagePart | DocumentPart) -> dict[str, Any]:
    """An image part as an OpenAI-style `image_url` content part: its url, or its data as a `data:` URL."""
    if isinstance(part, DocumentPart):
        raise WireError("Groq takes no documents (PDF): only text and images")
    url = part.url if part.data is None else f"data:{part.media_type};base64,{part.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def groq_parts_refusal(model: str | None, parts: Iterable[Part], field: str) -> Refusal | None:
    """Why Groq would refuse these parts (of input `field`) on this model, if it would; `model` None while unknown."""
    files = file_parts(list(parts))
    if not files:
        return None
    if any(isinstance(part, DocumentPart) for part in files):
        return Refusal(field, "Groq takes no documents (PDF); send its text instead, or use ClaudeRequest or "
                              "GeminiRequest")
    if model is not None and not model.startswith(VISION_MODELS):
        return Refusal(field, f"{model} takes no images; Groq's vision models: {', '.join(m + '*' for m in VISION_MODELS)}")
    for part in files:
        if part.media_type not in IMAGE_TYPES:
            return Refusal(field, f"Groq takes images as {', '.join(IMAGE_TYPES)}, not {part.media_type}")
    if len(files) > MAX_IMAGES:
        return Refusal(field, f"{len(files)} images in one request; Groq takes at most {MAX_IMAGES}")
    inline = sum(len(part.data) for part in files if part.data is not None)
    if inline > MAX_BASE64_BYTES:
        return Refusal(field, f"{inline} bytes of base64 images; Groq takes at most 4 MB of them in a request "
                              "(give the images as url)")
    return None


def strict_problem(schema: dict[str, Any]) -> str | None:
    """Why `strict: true` cannot be asked with this schema (Groq's strict rules), or None."""
    for path, member in subschemas(schema):
        where = path or "the top level"
        properties = member.get("properties")
        if member.get("type") != "object" and properties is None:
            continue
        if member.get("additionalProperties") is not False:
            return f"{where} does not say additionalProperties: false"
        missing = [name for name in (properties or {}) if name not in (member.get("required") or [])]
        if missing:
            return f"{where} does not require {', '.join(missing)}"
    return None


def response_format(model: str, schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`response_format` for this schema, `strict` where the model and the schema take it; and a note saying why
    not, when a strict model's schema does not."""
    title = schema.get("title")
    name = title if isinstance(title, str) and valid_tool_name(title, 64) else "response"
    entry: dict[str, Any] = {"name": name, "schema": schema}
    note = None
    if model.startswith(STRICT_SCHEMA_MODELS):
        problem = strict_problem(schema)
        if problem is None:
            entry["strict"] = True
        else:
            note = f"response_schema sent without strict (best effort): {problem}"
    return {"type": "json_schema", "json_schema": entry}, note


def groq_output_refusal(model: str | None, schema: Any) -> Refusal | None:
    """Why Groq would refuse a response schema on this model, if it would; `model` None while unknown."""
    if schema is None or model is None or model.startswith(SCHEMA_MODELS):
        return None
    return Refusal("response_schema", f"{model} takes no response schema; Groq's models that do: "
                                      f"{', '.join(m + '*' for m in SCHEMA_MODELS)}")
