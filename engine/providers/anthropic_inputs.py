"""What Claude takes beyond text: image and PDF blocks, a response schema (`output_config.format`), cache marks.

The one place these facts are written (docs/VENDORS.md, Anthropic): the block's load check,
the adapter and the simulator all read them. Which models take a response schema, which
JSON Schema keywords Anthropic's structured output has, which image types and sizes a
request may carry, which models read PDFs, and where prompt-cache breakpoints (`cache_control`)
go, how many a request may have and how long a prefix must be to be cached.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.format.parts import DocumentPart, ImagePart, Part
from engine.providers.structured import subschemas
from engine.providers.wire import Refusal, file_parts

__all__ = [
    "CACHE_BREAKPOINTS",
    "CACHE_MARK",
    "CACHE_MINIMUM_TOKENS",
    "CACHE_TTL_S",
    "IMAGE_TYPES",
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "NO_DOCUMENT_FAMILIES",
    "NO_SCHEMA_FAMILIES",
    "cache_minimum",
    "claude_output_refusal",
    "claude_parts_refusal",
    "file_block",
    "mark_cache_prefix",
    "schema_refusal",
]

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAX_IMAGES = 100
"""Images in one request (Anthropic's vision docs)."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""One image given as data (Anthropic's vision docs: 5 MB)."""
NO_DOCUMENT_FAMILIES = ("claude-3-haiku", "claude-3-opus", "claude-3-sonnet")
"""Claude 3 models read no PDF (PDF support came with the 3.5 models)."""
# Structured outputs are generally available from the 4.5 models on (Anthropic's structured-outputs docs: Opus 4.5,
# 4.6, Sonnet 4.5, 4.6, Haiku 4.5, and the later families); Opus 4.1 had them only as a beta, behind a header we do
# not send. By id prefix: `claude-opus-4-2` is Opus 4's dated id (claude-opus-4-20250514).
NO_SCHEMA_FAMILIES = ("claude-3", "claude-opus-4-0", "claude-opus-4-1", "claude-opus-4-2", "claude-sonnet-4-0",
                      "claude-sonnet-4-2")
# JSON Schema keywords Anthropic's structured output does not have (its docs' "not supported" list): the SDK moves
# them into the description when it builds a schema from a model; a schema written by hand is refused instead.
_NO_KEYWORD = {
    "minimum": "say the range in the description",
    "maximum": "say the range in the description",
    "exclusiveMinimum": "say the range in the description",
    "exclusiveMaximum": "say the range in the description",
    "multipleOf": "say it in the description",
    "minLength": "say the length in the description",
    "maxLength": "say the length in the description",
    "maxItems": "say the number in the description",
}


def file_block(part: ImagePart | DocumentPart) -> dict[str, Any]:
    """An image or document part as Anthropic's `image` / `document` block (base64 or url source)."""
    kind = "image" if isinstance(part, ImagePart) else "document"
    if part.data is not None:
        return {"type": kind, "source": {"type": "base64", "media_type": part.media_type, "data": part.data}}
    return {"type": kind, "source": {"type": "url", "url": part.url}}


def claude_parts_refusal(model: str | None, parts: Iterable[Part], field: str) -> Refusal | None:
    """Why Anthropic would refuse these parts (of input `field`) on this model, if it would; `model` None while unknown."""
    files = file_parts(list(parts))
    images = [part for part in files if isinstance(part, ImagePart)]
    for part in images:
        if part.media_type not in IMAGE_TYPES:
            return Refusal(field, f"Claude takes images as {', '.join(IMAGE_TYPES)}, not {part.media_type}")
        if part.size is not None and part.size > MAX_IMAGE_BYTES:
            return Refusal(field, f"an image of {part.size} bytes is over Anthropic's 5 MB limit; make it smaller")
    if len(images) > MAX_IMAGES:
        return Refusal(field, f"{len(images)} images in one request; Anthropic takes at most {MAX_IMAGES}")
    if model is not None and model.startswith(NO_DOCUMENT_FAMILIES) and any(isinstance(p, DocumentPart) for p in files):
        return Refusal(field, f"{model} reads no PDF documents; use a model from Claude 3.5 on")
    return None


def schema_refusal(schema: dict[str, Any]) -> str | None:
    """Why Anthropic's structured output would refuse this schema (its path and what to do), or None."""
    for path, member in subschemas(schema):
        where = path or "the top level"
        for keyword, hint in _NO_KEYWORD.items():
            if keyword in member:
                return f"{where}.{keyword}: Anthropic's structured output has no '{keyword}' ({hint})"
        minimum = member.get("minItems")
        if minimum is not None and minimum not in (0, 1):
            return f"{where}.minItems: Anthropic's structured output takes minItems 0 or 1 only (say the number in " \
                   "the description)"
        is_object = member.get("type") == "object" or (isinstance(member.get("type"), list) and "object" in member["type"]) \
            or "properties" in member
        if is_object and member.get("additionalProperties") is not False:
            return f"{where}: Anthropic's structured output needs additionalProperties: false on every object (add it)"
    return None


def claude_output_refusal(model: str | None, schema: Any) -> Refusal | None:
    """Why Anthropic would refuse this response schema on this model, if it would; `model` None while unknown."""
    if schema is None:
        return None
    if model is not None and model.startswith(NO_SCHEMA_FAMILIES):
        return Refusal("response_schema", f"{model} has no structured output; use a model from Claude 4.5 on "
                                          "(claude-sonnet-4-5, claude-haiku-4-5, claude-opus-4-5 and later)")
    if isinstance(schema, dict):
        problem = schema_refusal(schema)
        if problem:
            return Refusal("response_schema", problem)
    return None


# -- prompt caching (Anthropic's prompt-caching docs) --------------------------------------------

CACHE_MARK = {"type": "ephemeral"}
"""The breakpoint Anthropic takes: the prefix up to the marked block is cached for 5 minutes from its last use."""
CACHE_TTL_S = 300.0
CACHE_BREAKPOINTS = 4
"""Blocks with cache_control one request may have; a fifth is the vendor's 400."""
# A marked prefix shorter than its model's minimum is sent and billed as plain input, without an error.
CACHE_MINIMUM_TOKENS = {
    ("claude-haiku-4-5", "claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7"): 4096,
    ("claude-sonnet-4-6", "claude-3-5-haiku", "claude-3-haiku"): 2048,
}
_DEFAULT_CACHE_MINIMUM = 1024
# Content blocks that take cache_control; thinking blocks and the server tools' blocks carried back are not marked.
_MARKABLE = ("text", "image", "document", "tool_use", "tool_result")


def cache_minimum(model: str) -> int:
    """The fewest prompt tokens a cached prefix of this model may have."""
    return next((count for families, count in CACHE_MINIMUM_TOKENS.items() if model.startswith(families)),
                _DEFAULT_CACHE_MINIMUM)


def _mark_last_block(message: dict[str, Any]) -> bool:
    """A breakpoint on the message's last block that takes one (a text message becomes one text block)."""
    content = message["content"]
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(CACHE_MARK)}]
        return True
    for block in reversed(content):
        if block.get("type") in _MARKABLE and (block.get("type") != "text" or block.get("text")):
            block["cache_control"] = dict(CACHE_MARK)
            return True
    return False


def mark_cache_prefix(body: dict[str, Any]) -> None:
    """Breakpoints on the prefix that is the same from turn to turn, in the order Anthropic caches it: the last tool,
    the system text, and the last message before the new turn (the conversation so far, which the next turn
    finds again and reads). Three at most, within the vendor's CACHE_BREAKPOINTS."""
    if body.get("tools"):
        body["tools"][-1] = {**body["tools"][-1], "cache_control": dict(CACHE_MARK)}
    if body.get("system"):
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": dict(CACHE_MARK)}]
    if len(body["messages"]) >= 2:
        _mark_last_block(body["messages"][-2])
