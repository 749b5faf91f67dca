"""Attacks and faults as an attacker runs them: whole `diagrama` processes, wall time and peak memory.

    python -m benchmarks.attacks

Each case writes a small diagram into a temporary folder, runs `diagrama run` or
`diagrama validate` on it as its own process, and reports the exit status, the error type
the run or check ended with, the wall time (against the timeout the diagram sets, where it
sets one) and the process's peak resident memory. Figures for issue 13's table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HANDLERS = """
import time

def stuck():
    time.sleep(60)  # a sync handler that blocks the thread it runs on
    return "late"
"""


def _setting(template: str) -> str:
    """A diagram whose one Set block evaluates `{{ template }}`."""
    return textwrap.dedent(f"""\
        diagram: attack
        blocks:
          - id: start
            type: Start
            next: grow
          - id: grow
            type: Set
            set: {{big: "{{{{ {template} }}}}"}}
        """)


CASES: dict[str, tuple[str, str, dict[str, str]]] = {
    # name: (command, diagram text, extra files)
    "calculator (((9**99)**99)**99)**99 called by the model": ("run", """\
        diagram: attack
        tools: registry.yaml
        blocks:
          - id: start
            type: Start
            timeout: 30
            next: dispatch
          - id: dispatch
            type: ToolDispatch
            with:
              calls: [{id: "1", name: calculator, arguments: {expression: "(((9**99)**99)**99)**99"}}]
              history: []
            set: {tool_errors: "{{ errors }}"}
        """, {"registry.yaml": "registry: r\nstandard_tools: [calculator]\n"}),
    "sync handler blocking 60 s, Start timeout 2 s": ("run", """\
        diagram: attack
        tools: registry.yaml
        blocks:
          - id: start
            type: Start
            timeout: 2
            next: dispatch
          - id: dispatch
            type: ToolDispatch
            with:
              calls: [{id: "1", name: stuck, arguments: {}}]
              history: []
        """, {"registry.yaml": "registry: r\nallowed_modules: [stuck_handlers]\ntools:\n"
                               "  - {function: stuck, handler: 'stuck_handlers:stuck', description: blocks, timeout: 120}\n",
              "stuck_handlers.py": HANDLERS}),
    **{f"template {template}": ("run", _setting(template), {})
       for template in ("('a'*1000)|replace('a','a'*10**6)", "'a'*10**10", "[1] * 10**8")},
    "YAML billion laughs (9 levels of 9 aliases)": ("validate", "diagram: attack\n" + "\n".join(
        [f"l0: &l0 [{', '.join(['x'] * 9)}]"]
        + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)])
        + "\nblocks:\n  - {id: start, type: Start}\n", {}),
    "YAML self-alias a: &a [*a]": ("validate", "diagram: attack\na: &a [*a]\nblocks:\n  - {id: start, type: Start}\n", {}),
    "template with 300 nested parentheses": ("validate", _setting("(" * 300 + "1" + ")" * 300), {}),
    "history {csv: ../../../../etc/passwd}": ("validate", """\
        diagram: attack
        blocks:
          - id: start
            type: Start
            next: ask
          - id: ask
            type: ClaudeRequest
            with: {model: claude-sonnet-4-5, request: hi, history: {csv: ../../../../../../../../etc/passwd}}
        """, {}),
}


def run_case(command: str, text: str, files: dict[str, str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "attack.yaml").write_text(textwrap.dedent(text))
        for name, content in files.items():
            (base / name).write_text(content)
        # GNU time reports the process's own peak resident memory (%M, KiB) on its last stderr line.
        arguments = ["/usr/bin/time", "-f", "maxrss_kib=%M", sys.executable, "-m", "engine.cli", command,
                     str(base / "attack.yaml")]
        if command == "run":
            arguments += ["--offline", "--output", "json", "--message-level", "Release", "--runs-dir", str(base / "runs")]
        began = time.perf_counter()
        done = subprocess.run(arguments, capture_output=True, text=True, timeout=300,
                              cwd=Path(__file__).resolve().parent.parent, env=os.environ)
        wall = time.perf_counter() - began
    said, _, peak = done.stderr.rstrip().rpartition("maxrss_kib=")
    figure: dict[str, object] = {"exit": done.returncode, "wall_s": round(wall, 2),
                                 "peak_rss_mib": round(int(peak) / 1024) if peak.isdigit() else None}
    if command == "run" and done.stdout.strip().startswith("{"):
        result = json.loads(done.stdout)
        figure["status"] = result.get("status")
        figure["errors"] = [e.get("type") for e in result.get("errors", [])]
        tool_errors = (result.get("variables") or {}).get("tool_errors")
        if tool_errors:
            figure["tool_errors"] = tool_errors
    else:
        figure["said"] = (said or done.stdout).strip().splitlines()[:2]
    return figure


def main() -> None:
    for name, (command, text, files) in CASES.items():
        print(json.dumps({"case": name, "command": command, **run_case(command, text, files)}, ensure_ascii=False),
              flush=True)


if __name__ == "__main__":
    main()
