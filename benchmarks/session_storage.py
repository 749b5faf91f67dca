"""What a conversation costs the store: N turns of one session whose memory grows by about `--grow` bytes a turn.

Each turn is `diagrama run DIAGRAM --offline --session bench -i message=…` run in this process (click's runner,
the command's own code: the checkpoint store and the run store are written as the command writes them). The
diagram keeps `history` (and a turn count) in its Start `memory`; a ClaudeRequest, answered by the simulator,
appends the message (`--grow` bytes) and the simulator's short reply: the memory grows by a little more a turn.

After 50 and 150 turns (`--turns`), it prints the SQLite file with its WAL, the bytes each table holds (the pages
SQLite's `dbstat` gives it, and the bytes of its rows' values) and the session's memory, as JSON lines with the
Python version and the machine. With `--prune` it then prunes the finished runs' checkpoints (`diagrama runs
--prune --older-than 0s`) and prints the figures again.

    python -m benchmarks.session_storage [--turns 50,150] [--grow 20000] [--prune]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

DIAGRAM = """
diagram: growing-chat
blocks:
  - id: start
    type: Start
    memory: [history, turns]
    inputs: {message: ""}
    variables: {history: [], turns: 0}
    next: reply
  - id: reply
    type: ClaudeRequest
    with:
      model: claude-sonnet-4-5
      role: You are a friendly assistant.
      history: "{{ history }}"
      request: "{{ message }}"
      max_tokens: 100
    set:
      history: "{{ history }}"
      turns: "{{ turns + 1 }}"
"""
"""A conversation that keeps every turn (no `last_turns`): the memory only grows."""

TABLES = ("run_states", "checkpoints", "sessions", "session_memory", "runs")
"""The checkpoint store's tables (`session_memory` where the store has it) and the run store's `runs`."""


def _message(turn: int, size: int) -> str:
    words = f"turn {turn}: " + "the quick brown fox jumps over the lazy dog " * (size // 44 + 1)
    return words[:size]


def _turn(app: Any, diagram: Path, runs: Path, message: str) -> None:
    from click.testing import CliRunner

    ran = CliRunner().invoke(app, ["run", str(diagram), "--offline", "--session", "bench", "--quiet",
                                   "--runs-dir", str(runs), "--input", f"message={message}"])
    if ran.exit_code != 0:
        raise SystemExit(f"a turn failed ({ran.exit_code}): {ran.output[-2000:]}")


def figures(runs: Path) -> dict[str, Any]:
    """The store's size on disk, each table's bytes (pages, and its rows' values), and the session's memory."""
    path = runs / "diagrama.db"
    wal = path.with_name(path.name + "-wal")
    db = sqlite3.connect(path)
    try:
        present = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        pages = dict(db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
        tables: dict[str, dict[str, int]] = {}
        for table in TABLES:
            if table not in present:
                continue
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            values = " + ".join(f"COALESCE(LENGTH(CAST({column} AS BLOB)), 0)" for column in columns)
            rows, held = db.execute(f"SELECT COUNT(*), COALESCE(SUM({values}), 0) FROM {table}").fetchone()
            index_pages = sum(size for name, size in pages.items() if name.startswith(f"sqlite_autoindex_{table}"))
            tables[table] = {"rows": int(rows), "bytes": int(held), "pages": int(pages.get(table, 0)) + index_pages}
        memory = db.execute("SELECT LENGTH(state) FROM sessions WHERE session = 'bench'").fetchone()
    finally:
        db.close()
    return {"store_bytes": path.stat().st_size + (wal.stat().st_size if wal.exists() else 0),
            "memory_bytes": int(memory[0]) if memory and memory[0] else 0, "tables": tables}


def _print(label: str, turns: int, found: dict[str, Any]) -> None:
    mb = found["store_bytes"] / 1e6
    held = ", ".join(f"{name} {table['bytes'] / 1e6:.2f} MB ({table['rows']} rows)"
                     for name, table in found["tables"].items())
    print(f"{label:<14} {turns:>4} turns: store {mb:8.2f} MB, memory {found['memory_bytes'] / 1e6:.2f} MB; {held}",
          file=sys.stderr)
    print(orjson.dumps({"figure": label, "turns": turns, **found, "python": platform.python_version(),
                        "machine": platform.machine(), "cpus": os.cpu_count()}).decode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", default="50,150", help="after how many turns to measure, comma-separated")
    parser.add_argument("--grow", type=int, default=20_000, help="bytes the memory grows by a turn")
    parser.add_argument("--prune", action="store_true", help="then prune the finished runs' checkpoints, measure again")
    args = parser.parse_args()
    marks = sorted({int(mark) for mark in args.turns.split(",")})
    from engine.cli import app

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        diagram = root / "growing_chat.yaml"
        diagram.write_text(DIAGRAM.lstrip("\n"), encoding="utf-8")
        runs = root / "runs"
        os.environ.pop("DIAGRAMA_STORE", None)  # the runs folder's SQLite file
        for turn in range(1, marks[-1] + 1):
            _turn(app, diagram, runs, _message(turn, args.grow))
            if turn in marks:
                _print("after turns", turn, figures(runs))
        if args.prune:
            from click.testing import CliRunner

            pruned = CliRunner().invoke(app, ["runs", "--prune", "--older-than", "0s", "--runs-dir", str(runs)])
            print(pruned.output.strip(), file=sys.stderr)
            db = sqlite3.connect(runs / "diagrama.db")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("VACUUM")
            db.close()
            _print("pruned, vacuum", marks[-1], figures(runs))


if __name__ == "__main__":
    main()
