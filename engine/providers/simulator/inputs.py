"""What each simulated vendor rejects of image and document parts and of a response schema.

Written from docs/VENDORS.md's lists, beside `checks` (which calls these): the base64 must
decode, the bytes must be what the media type says (vendors sniff them), the media types,
counts and sizes each vendor takes, which models read images or PDFs or take a schema, and
the schema rules of each vendor's structured output. The model tables and schema rules are
the adapters' own modules (`*_inputs`), read here as the block's load check reads them.
"""

from __future__ import annotations

import binascii
from typing import Any

from engine.errors import SimulatorRejected as Rejected
from engine.format.parts import media_type_of
from engine.providers import anthropic_inputs as anthropic_inputs
from engine.providers import gemini_inputs as gemini_inputs
from engine.providers import groq_inputs as groq_inputs

__all__ = ["check_anthropic_file", "check_anthropic_output", "check_gemini_file", "check_gemini_output",
           "check_groq_content", "check_groq_output"]


def _decoded(data: Any, urlsafe: bool = False) -> bytes | None:
    """The bytes of base64 text (URL-safe too, when the vendor's parser takes it); None when it is not base64."""
    if not isinstance(data, str) or not data:
        return None
    if urlsafe:
        data = data.replace("-", "+").replace("_", "/")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except binascii.Error:
        return None


def _anthropic(message: str, status: int = 400) -> Rejected:
    kind = "request_too_large" if status == 413 else "invalid_request_error"
    return Rejected(status, {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_sim"})


def check_anthropic_file(block: dict[str, Any], where: str, model: str) -> None:
    """An `image` or `document` block of a user message."""
    kind = block["type"]
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") not in ("base64", "url"):
        raise _anthropic(f"{where}.{kind}.source: Input should be a base64 or url source")
    if kind == "document" and model.startswith(anthropic_inputs.NO_DOCUMENT_FAMILIES):
        raise _anthropic(f"{where}: {model} does not support PDF input.")
    if source["type"] == "url":
        if not str(source.get("url", "")).startswith(("https://", "http://")):
            raise _anthropic(f"{where}.{kind}.source.url: Input should be a valid URL")
        return
    allowed = anthropic_inputs.IMAGE_TYPES if kind == "image" else ("application/pdf",)
    media_type = source.get("media_type")
    if media_type not in allowed:
        raise _anthropic(f"{where}.{kind}.source.base64.media_type: Input should be "
                         + " or ".join(repr(t) for t in allowed))
    data = _decoded(source.get("data"))
    if data is None:
        raise _anthropic(f"{where}.{kind}.source.base64.data: invalid base64 data")
    if media_type_of(data[:16]) != media_type:
        raise _anthropic(f"{where}.{kind}.source.base64: Image does not match the provided media type {media_type}"
                         if kind == "image" else f"{where}.document.source.base64: The PDF specified was not valid.")
    if kind == "image" and len(data) > anthropic_inputs.MAX_IMAGE_BYTES:
        raise _anthropic(f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > "
                         f"{anthropic_inputs.MAX_IMAGE_BYTES} bytes")


def check_anthropic_output(body: dict[str, Any], images: int) -> None:
    """`output_config` (a response schema) and the number of images, once the messages were read."""
    if images > anthropic_inputs.MAX_IMAGES:
        raise _anthropic(f"messages: too many images ({images}); at most {anthropic_inputs.MAX_IMAGES} per request")
    if "output_config" not in body:
        return
    config = body["output_config"]
    if not isinstance(config, dict) or set(config) - {"format", "effort"}:
        raise _anthropic("output_config: Extra inputs are not permitted")
    form = config.get("format")
    if form is None:
        return
    if not isinstance(form, dict) or form.get("type") != "json_schema" or not isinstance(form.get("schema"), dict):
        raise _anthropic("output_config.format: Input should be {type: 'json_schema', schema: {...}}")
    model = str(body["model"])
    if model.startswith(anthropic_inputs.NO_SCHEMA_FAMILIES):
        raise _anthropic(f"output_config.format: structured outputs are not supported on {model}")
    problem = anthropic_inputs.schema_refusal(form["schema"])
    if problem:
        raise _anthropic(f"output_config.format.schema: {problem}")


def _groq(message: str, status: int = 400) -> Rejected:
    return Rejected(status, {"error": {"message": message, "type": "invalid_request_error"}})


def check_groq_content(content: list[Any], index: int, model: str) -> int:
    """A user message's content parts; the bytes of base64 image data it carries."""
    if not model.startswith(groq_inputs.VISION_MODELS):
        raise _groq(f"'messages.{index}' : for 'role:user' the following must be satisfied"
                    f"[('messages.{index}.content' : value must be a string)]")
    inline = 0
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        where = f"messages.{index}.content.{number}"
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise _groq(f"'{where}.text' : value must be a string")
            continue
        if kind != "image_url":
            raise _groq(f"'{where}.type' : value is not one of the allowed values ['text', 'image_url']")
        url = str((part.get("image_url") or {}).get("url", ""))
        if url.startswith("data:"):
            head, _, data = url.partition(",")
            media_type = head.removeprefix("data:").removesuffix(";base64")
            decoded = _decoded(data) if head.endswith(";base64") else None
            if decoded is None or media_type not in groq_inputs.IMAGE_TYPES or media_type_of(decoded[:16]) != media_type:
                raise _groq(f"'{where}.image_url.url' : failed to decode the image (a data URL of a "
                            f"{', '.join(groq_inputs.IMAGE_TYPES)} image, base64)")
            inline += len(url)
        elif not url.startswith(("https://", "http://")):
            raise _groq(f"'{where}.image_url.url' : must be a URL or a base64 data URL")
    images = sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_url")
    if images > groq_inputs.MAX_IMAGES:
        raise _groq(f"Too many images provided. This model supports up to {groq_inputs.MAX_IMAGES} images")
    return inline


def check_groq_output(body: dict[str, Any], inline: int) -> None:
    """`response_format`, and the size of the request's base64 images."""
    if inline > groq_inputs.MAX_BASE64_BYTES:
        raise Rejected(413, {"error": {"message": "Request Entity Too Large", "type": "invalid_request_error",
                                       "code": "request_too_large"}})
    form = body.get("response_format")
    if form is None:
        return
    kind = form.get("type") if isinstance(form, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise _groq("'response_format.type' : value is not one of the allowed values ['text', 'json_object', "
                    "'json_schema']")
    if kind != "json_schema":
        return
    entry = form.get("json_schema")
    model = str(body["model"])
    if not isinstance(entry, dict) or not isinstance(entry.get("schema"), dict) or not isinstance(entry.get("name"), str):
        raise _groq("'response_format.json_schema' : properties 'name' and 'schema' are required")
    if not model.startswith(groq_inputs.SCHEMA_MODELS):
        raise _groq(f"This model does not support response format `json_schema`. See supported models at "
                    f"https://console.groq.com/docs/structured-outputs#supported-models ({model})")
    if entry.get("strict"):
        if not model.startswith(groq_inputs.STRICT_SCHEMA_MODELS):
            raise _groq(f"`strict` structured outputs are not supported on {model}")
        problem = groq_inputs.strict_problem(entry["schema"])
        if problem:
            raise _groq(f"invalid JSON schema for strict mode: {problem}")


def _gemini(message: str) -> Rejected:
    return Rejected(400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})


def check_gemini_file(part: dict[str, Any], where: str) -> None:
    """An `inlineData` or `fileData` part (camelCase, as `camel_gemini` reads it)."""
    if "inlineData" in part:
        blob = part["inlineData"]
        media_type = blob.get("mimeType")
        data = _decoded(blob.get("data"), urlsafe=True)  # Google's JSON parser reads either base64 alphabet
        if data is None:
            raise _gemini(f"Invalid value at '{where}.inline_data.data' (TYPE_BYTES), Base64 decoding failed")
    else:
        blob = part["fileData"]
        media_type = blob.get("mimeType")
        data = None
        if not str(blob.get("fileUri", "")).startswith(("https://", "http://", "gs://")):
            raise _gemini(f"* {where}.file_data.file_uri: a file URI is required")
    if media_type not in (*gemini_inputs.IMAGE_TYPES, *gemini_inputs.DOCUMENT_TYPES):
        raise _gemini(f"Unsupported MIME type: {media_type}")
    if data is not None and media_type_of(data[:16]) != ("image/heic" if media_type == "image/heif" else media_type):
        raise _gemini(f"Unable to process input {'image' if str(media_type).startswith('image/') else 'document'}"
                      f" at '{where}': its bytes are not {media_type}")


def check_gemini_output(config: dict[str, Any], model: str, has_tools: bool) -> None:
    """`responseJsonSchema` with its mime type, on a model that takes it."""
    if "responseJsonSchema" not in config:
        return
    if config.get("responseMimeType") != "application/json":
        raise _gemini("generation_config.response_json_schema requires response_mime_type: application/json")
    if "responseSchema" in config:
        raise _gemini("generation_config: response_schema and response_json_schema are mutually exclusive")
    if not isinstance(config["responseJsonSchema"], dict):
        raise _gemini("Invalid JSON payload received. Expected an object at 'generation_config.response_json_schema'.")
    refusal = gemini_inputs.gemini_output_refusal(model, config["responseJsonSchema"], has_tools)
    if refusal:
        raise _gemini("Function calling with a response mime type: 'application/json' is unsupported" if has_tools
                      and "tools" in refusal.message else f"generation_config.response_json_schema: {refusal.message}")
