"""Minimal-change rewriting of a diagram's YAML file from the studio's JSON.

The YAML file is the source of truth, read by engine.format.yamlfile alone: this package owns only
writing, turning a whole new diagram into the smallest text edit of the file (comments, key order,
quoting, blank lines and indentation kept), checked by reading it back with that same reader.
"""

from __future__ import annotations

from engine.web.yaml_edit.api import apply_edit, content_hash, kept_where_unrepresentable, new_diagram_text
from engine.web.yaml_edit.checks import MAX_DEPTH, MAX_TEXT_BYTES, EditError

__all__ = ["MAX_DEPTH", "MAX_TEXT_BYTES", "EditError", "apply_edit", "content_hash", "kept_where_unrepresentable",
           "new_diagram_text"]
