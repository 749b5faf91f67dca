"""Parts of a user message: text, an image or a PDF document, given as base64 `data` or a `url`.

A request block's `request`, and a user row's `content` in a history table, may be a list of
parts (README, "Images and documents"). Here is what every part must be, whatever the vendor:
its fields, base64 that decodes, bytes that are what `media_type` says. Which vendor or model
takes which part is the adapters' business (engine/providers). Also the form a trace shows a
part in: its type, media type and size, never its base64.
"""

from __future__ import annotations

import binascii
import functools
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "DOCUMENT_TYPES",
    "IMAGE_TYPES",
    "DocumentPart",
    "ImagePart",
    "Message",
    "Part",
    "PartsError",
    "TextPart",
    "base64_size",
    "media_type_of",
    "part_text",
    "parts_of",
    "shown_part",
]

IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp", "image/heic", "image/heif")
"""Every image media type some vendor takes; each adapter narrows it to its own."""
DOCUMENT_TYPES = ("application/pdf",)

_SPACE = re.compile(r"\s")
# The first bytes of each kind of file (its "magic number"): what vendors sniff to refuse an image that is not
# what its media_type says. HEIC and HEIF share the ISO media box: `ftyp` at byte 4.
_MAGIC: tuple[tuple[str, bytes, int], ...] = (
    ("image/png", b"\x89PNG\r\n\x1a\n", 0),
    ("image/jpeg", b"\xff\xd8\xff", 0),
    ("image/gif", b"GIF87a", 0),
    ("image/gif", b"GIF89a", 0),
    ("image/webp", b"WEBP", 8),
    ("image/heic", b"ftyp", 4),
    ("image/heif", b"ftyp", 4),
    ("application/pdf", b"%PDF-", 0),
)
_NAMES = {"image/png": "a PNG image", "image/jpeg": "a JPEG image", "image/gif": "a GIF image",
          "image/webp": "a WebP image", "image/heic": "a HEIC image", "image/heif": "a HEIF image",
          "application/pdf": "a PDF document"}


class PartsError(ValueError):
    """A list of parts that is not one: which part, and why."""


def base64_size(data: str) -> int:
    """The number of bytes base64 text decodes to (without decoding it)."""
    return len(data) * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0)


def media_type_of(head: bytes) -> str | None:
    """The media type a file's first bytes say it is (PNG, JPEG, GIF, WebP, HEIC, PDF), or None."""
    for media_type, magic, at in _MAGIC:
        if head[at:at + len(magic)] == magic:
            return media_type
    return None


def _check_data(data: str, media_type: str) -> None:
    """`data` must be strict base64 whose bytes are a `media_type` file."""
    try:
        head = binascii.a2b_base64(data, strict_mode=True)[:16]
    except binascii.Error as exc:
        raise ValueError(f"data is not base64 text ({exc})") from None
    if not head:
        raise ValueError("data is empty")
    sniffed = media_type_of(head)
    expected = "image/heic" if media_type == "image/heif" else media_type  # one box for both
    if sniffed != expected and not (sniffed == "image/heic" and media_type == "image/heif"):
        what = _NAMES.get(sniffed or "", "")
        found = f"its bytes are {what}" if what else "its bytes are no file of that type"
        raise ValueError(f"data is not {_NAMES[media_type]} ({media_type}): {found}")


class TextPart(BaseModel):
    """Text among other parts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["text"]
    text: str = Field(min_length=1, description="the text")


class _FilePart(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # `type` and `media_type` are each subclass's (their own literals); declared here too, so that a part is
    # written in the order people read it: type, media_type, then the data or url.
    type: str
    media_type: str
    data: str | None = Field(default=None, description="the file's bytes as base64 text")
    url: str | None = Field(default=None, description="or where the vendor fetches it (http or https)")

    @field_validator("data", mode="before")
    @classmethod
    def _without_breaks(cls, value: Any) -> Any:
        # a YAML block scalar wraps long base64 over lines; vendors take it in one piece
        return "".join(value.split()) if isinstance(value, str) and _SPACE.search(value) else value

    @model_validator(mode="after")
    def _data_or_url(self) -> _FilePart:
        media_type = self.media_type
        if (self.data is None) == (self.url is None):
            raise ValueError("give the file as data (base64) or as a url, one of them")
        if self.data is not None:
            _check_data(self.data, media_type)
        elif not str(self.url).startswith(("https://", "http://")):
            raise ValueError(f"url must be an http(s) address, not {str(self.url)[:40]!r}")
        return self

    @property
    def size(self) -> int | None:
        """Bytes of the file given as data; None for a url."""
        return base64_size(self.data) if self.data is not None else None

    def shown(self) -> dict[str, Any]:
        """The part as traces show it: type, media type, and its size or url (never the base64)."""
        shown = shown_part(self.model_dump())
        assert shown is not None  # a file part is one
        return shown


class ImagePart(_FilePart):
    """An image, as base64 `data` or a `url`."""

    type: Literal["image"]
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp", "image/heic", "image/heif"] = Field(
        description="the image's type: image/jpeg, image/png, image/gif, image/webp (which vendor takes which is checked)")


class DocumentPart(_FilePart):
    """A PDF document, as base64 `data` or a `url`."""

    type: Literal["document"]
    media_type: Literal["application/pdf"] = Field(default="application/pdf", description="application/pdf")

    @field_validator("media_type", mode="before")
    @classmethod
    def _pdf_only(cls, value: Any) -> Any:
        if value != "application/pdf":
            raise ValueError(f"a document part is a PDF (media_type application/pdf), not {value!r}")
        return value


Part = Annotated[TextPart | ImagePart | DocumentPart, Field(discriminator="type")]
"""One part of a user message; the `type` picks its model."""


@functools.cache
def _parts_adapter() -> TypeAdapter[list[Part]]:
    return TypeAdapter(list[Part])  # built on first use: most diagrams never hold a part


def parts_of(value: Any) -> tuple[Part, ...]:
    """A list of part mappings (or parts) as parts; PartsError names the first part at fault and why."""
    if not isinstance(value, (list, tuple)):
        raise PartsError(f"parts must be a list, not {type(value).__name__}")
    if not value:
        raise PartsError("the list of parts is empty")
    if all(isinstance(item, (TextPart, ImagePart, DocumentPart)) for item in value):
        return tuple(value)
    try:
        return tuple(_parts_adapter().validate_python(list(value)))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = [str(step) for step in first["loc"] if step not in ("text", "image", "document")]
        where = f"part {int(loc[0]) + 1}" if loc and loc[0].isdigit() else "a part"
        field = ".".join(loc[1:])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise PartsError(f"{where}{' ' + field if field else ''}: {message}") from None


def _message(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    # One error for a list of parts (which part, why), not one per member of the union as pydantic gives.
    if isinstance(value, list):
        try:
            return list(parts_of(value))
        except PartsError as exc:
            raise PydanticCustomError("invalid_parts", str(exc)) from None
    return handler(value)


Message = Annotated[str | list[Part], WrapValidator(_message)]
"""A pydantic field type: a user message as text, or as a list of parts."""


def part_text(parts: tuple[Part, ...]) -> str:
    """The text parts, joined by a blank line: what a reader of text alone gets of the message."""
    return "\n\n".join(part.text for part in parts if isinstance(part, TextPart))


def shown_part(value: Mapping[str, Any]) -> dict[str, Any] | None:
    """A file part as traces show it (type, media type, size or url, never the base64); None for any other mapping."""
    kind = value.get("type")
    if kind != "image" and kind != "document":
        return None
    data = value.get("data")
    if isinstance(data, str):
        return {"type": kind, "media_type": value.get("media_type"), "size": base64_size(data)}
    if isinstance(value.get("url"), str):
        return {"type": kind, "media_type": value.get("media_type"), "url": value["url"]}
    return None
