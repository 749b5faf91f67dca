"""The documents the code cites are in the repository: every `*.md` a comment, docstring or config names exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[A-Z][\w-]*\.md)\b")


def test_every_cited_document_is_in_the_repository() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    sources = [name for name in tracked if name.endswith((".py", ".ts", ".tsx", ".mjs", ".md", ".toml")) or
               name == ".importlinter"]
    missing = {}
    for name in sources:
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        for cited in CITED.findall(text):
            if not ((ROOT / cited).is_file() or (ROOT / name).parent.joinpath(cited).is_file()):
                missing.setdefault(cited, []).append(name)
    assert not missing, missing


def test_the_architecture_is_written_down() -> None:
    text = (ROOT / "docs/ARCHITECTURE.md").read_text(encoding="utf-8")
    for section in ("## The layers", "## From a file to a compiled diagram", "## One run, one loop", "## One turn: every door",
                    "## The studio: file ↔ API ↔ store ↔ canvas", "## Adding a block type", "```mermaid"):
        assert section in text
