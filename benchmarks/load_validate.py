"""Time to load and validate a generated 1,000-block diagram, in ms.

Two shapes: a chain of Set blocks whose `set` and `when` templates repeat (as real
diagrams repeat `{{ history }}`), and one where every template is distinct, the
worst case for the per-source template cache. Medians of several repeats.

    python -m benchmarks.load_validate [--blocks 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from blocks.registry import registry
from engine.compile.loader import load_diagram


def generated(blocks: int, distinct: bool) -> str:
    lines = ["diagram: generated", "blocks:", "  - id: start", "    type: Start",
             "    inputs: {question: hi}", "    variables: {n: 0, text: ''}", "    next: b0"]
    for index in range(blocks - 1):
        last = index == blocks - 2
        value = f"{{{{ n + {index} }}}}" if distinct else "{{ n + 1 }}"
        lines += [f"  - id: b{index}", "    type: Set", f"    label: step {index}", "    set:",
                  f"      n: \"{value}\"", "      text: \"{{ question }} {{ n }}\""]
        if not last:
            lines += ["    next:", f"      - to: b{index + 1}", "        when: \"{{ n >= 0 }}\""]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    blocks = registry()
    with tempfile.TemporaryDirectory() as folder:
        for distinct in (False, True):
            path = Path(folder) / f"generated_{distinct}.yaml"
            path.write_text(generated(args.blocks, distinct))
            times = []
            for _ in range(args.repeat):
                # Each load starts as a fresh `diagrama validate` would: the last one's diagram freed (its
                # deallocation is not timed) and its garbage collected, before the clock starts.
                diagram = None
                gc.collect()
                began = time.perf_counter()
                diagram = load_diagram(path, blocks)
                times.append((time.perf_counter() - began) * 1000)
            assert diagram is not None and len(diagram.blocks) == args.blocks
            print(json.dumps({"benchmark": "load_and_validate", "blocks": args.blocks,
                              "templates": "distinct" if distinct else "repeated",
                              "ms_median": round(statistics.median(times), 1),
                              "ms_first": round(times[0], 1), "python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
