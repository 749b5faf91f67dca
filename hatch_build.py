"""Build hook: builds the studio's front-end (engine/web/ui) with npm whenever the package is built or installed.

`pip install .` and `pip install -e .` both run it, so a fresh clone needs no separate front-end step.
First the page's API types (src/api/types.ts, git-ignored) are generated from the committed JSON Schema of the
server's answers (engine/web/api.schema.json, written from engine/web/models.py): this environment has only
hatchling, not pydantic, so the schema file is the bridge. Then the bundle is built; it (engine/web/ui/dist) is
git-ignored too and shipped as a build artifact, never committed.
Set DIAGRAMA_SKIP_UI=1 to skip (the server then answers 503 at `/` and says how to build it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class StudioBuildHook(BuildHookInterface):  # type: ignore[type-arg]  # hatchling's generic config parameter
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name not in ("wheel", "editable") and version != "editable":
            return
        ui = Path(self.root) / "engine" / "web" / "ui"
        if os.environ.get("DIAGRAMA_SKIP_UI") or not (ui / "package.json").is_file():
            return
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("building diagrama's studio needs Node.js 20+ and npm on PATH (or set DIAGRAMA_SKIP_UI=1)")
        installed = ui / "node_modules" / ".package-lock.json"
        lock = ui / "package-lock.json"
        if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
            # `npm ci` installs exactly the committed lockfile, nothing newer.
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=ui, check=True)
        # `build`'s prebuild script writes src/api/types.ts from engine/web/api.schema.json first.
        subprocess.run([npm, "run", "build"], cwd=ui, check=True)
        build_data["artifacts"].append("engine/web/ui/dist/**")
