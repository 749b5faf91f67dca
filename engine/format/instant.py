"""`Instant`: the aware datetime a template's `now()` gives, whose text is ISO 8601.

A `str()` of a datetime has a space where ISO 8601 has `T`; a template that writes `{{ now() }}` into a text
means the ISO form. A checkpoint keeps an Instant as one (engine.format.snapshot), so a resumed run reads the same.
"""

from __future__ import annotations

import datetime

__all__ = ["Instant"]


class Instant(datetime.datetime):
    """An aware datetime whose text is ISO 8601."""

    __slots__ = ()

    def __str__(self) -> str:
        return self.isoformat()
