"""The package stays easy to see (README, "For contributors"): no module of engine/ or blocks/ over 450 lines, and no
function over 60 lines without a one-line reason, a comment just above it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 450
FUNCTION_LINES = 60


def _sources() -> list[Path]:
    return sorted(path for folder in ("engine", "blocks") for path in (ROOT / folder).rglob("*.py")
                  if "node_modules" not in path.parts)


def test_no_module_is_over_450_lines() -> None:
    long = {str(path.relative_to(ROOT)): count for path in _sources()
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES}
    assert long == {}


def test_a_function_over_60_lines_says_why_just_above_it() -> None:
    unexplained = []
    for path in _sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.end_lineno is None or node.end_lineno - node.lineno + 1 <= FUNCTION_LINES:
                continue
            first = min([decorator.lineno for decorator in node.decorator_list] + [node.lineno])
            above = {lines[first - 2].strip(), lines[node.lineno - 2].strip()}  # over its decorators, or its def
            if not any(line.startswith("#") for line in above):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert unexplained == []
