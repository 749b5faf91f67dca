"""The read-back check: a written text is kept only if engine.format's reader reads it as the new diagram.

That reader is the one `diagrama run` uses, so a text that passes means to a run exactly what the page
sent; anything else (a rendering slip, a ruamel dump that quoted differently) is refused, not saved.
"""

from __future__ import annotations

from typing import Any

from engine.errors import DiagramInvalid
from engine.format.yamlfile import read_yaml_text
from engine.web.yaml_edit.checks import EditError, check_text_size, same


def read_data(text: str) -> Any:
    """The file's data as diagrama reads it; EditError naming the first problem where it cannot be read."""
    try:
        data, _ = read_yaml_text(text, "the file")
    except DiagramInvalid as exc:
        first = exc.problems[0]
        where = f" (line {first.line})" if first.line is not None else ""
        raise EditError(f"{first.message}{where}" + (f"; {first.hint}" if first.hint else "")) from None
    except RecursionError:
        raise EditError("too deeply nested") from None
    return data


def checked(result: str, new: dict[str, Any]) -> str | None:
    """`result` if it reads back as `new`; else None."""
    try:
        check_text_size(result)
        ours = read_data(result)
    except EditError:
        return None
    return result if same({} if ours is None else ours, new) else None
