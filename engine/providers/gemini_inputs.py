"""What Gemini takes beyond text: `inlineData` / `fileData` parts, and a response schema.

The one place these facts are written (docs/VENDORS.md, Gemini): the block's load check, the
adapter and the simulator all read them. Gemini reads images (not GIF) and PDFs on every
model we send to; a response schema goes as `generationConfig.responseJsonSchema` (plain JSON
Schema, with `responseMimeType: application/json`), which Gemini 1.x models do not have, and
Gemini 2.x models answer with a 400 when function declarations come with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from engine.format.parts import DocumentPart, ImagePart, Part
from engine.providers.wire import Refusal, file_parts

__all__ = ["DOCUMENT_TYPES", "IMAGE_TYPES", "file_part", "gemini_output_refusal", "gemini_parts_refusal"]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")
"""Gemini's image understanding docs; no GIF."""
DOCUMENT_TYPES = ("application/pdf",)
_NO_SCHEMA = re.compile(r"^(models/)?gemini-1\.")
# Function calling beside a JSON response mime type came with Gemini 3; earlier models answer 400 "Function calling with
# a response mime type: 'application/json' is unsupported" (public reports).
_NO_SCHEMA_WITH_TOOLS = re.compile(r"^(models/)?gemini-[12]\.")


def file_part(part: ImagePart | DocumentPart) -> dict[str, Any]:
    """An image or document part as Gemini's part: `inlineData` for data, `fileData` for a url."""
    if part.data is not None:
        return {"inlineData": {"mimeType": part.media_type, "data": part.data}}
    return {"fileData": {"mimeType": part.media_type, "fileUri": part.url}}


def gemini_parts_refusal(model: str | None, parts: Iterable[Part], field: str) -> Refusal | None:
    """Why Gemini would refuse these parts (of input `field`), if it would."""
    for part in file_parts(list(parts)):
        if isinstance(part, ImagePart) and part.media_type not in IMAGE_TYPES:
            return Refusal(field, f"Gemini takes images as {', '.join(IMAGE_TYPES)}, not {part.media_type}")
    return None


def gemini_output_refusal(model: str | None, schema: Any, has_tools: bool) -> Refusal | None:
    """Why Gemini would refuse a response schema on this model (with tools, when `has_tools`); `model` None while unknown."""
    if schema is None or model is None:
        return None
    if _NO_SCHEMA.match(model):
        return Refusal("response_schema", f"{model} takes no response schema; use a Gemini 2 model or later")
    if has_tools and _NO_SCHEMA_WITH_TOOLS.match(model):
        return Refusal("response_schema", f"{model} takes no response schema together with tools (Gemini 3 models do); "
                                          "ask for the structured answer in a request without tools")
    return None
