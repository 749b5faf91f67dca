"""Minimal-change rewriting of a diagram's YAML file from the studio's JSON.

The YAML file is the source of truth: this package owns reading it as JSON-ready data
and turning a whole new diagram into the smallest text edit of it (comments, key order,
quoting, blank lines and indentation kept), checked by re-parsing with ruamel and PyYAML.
"""

from __future__ import annotations

from engine.web.yaml_edit.api import apply_edit, content_hash, new_diagram_text, to_json
from engine.web.yaml_edit.checks import MAX_DEPTH, MAX_TEXT_BYTES, EditError

__all__ = ["MAX_DEPTH", "MAX_TEXT_BYTES", "EditError", "apply_edit", "content_hash", "new_diagram_text", "to_json"]
