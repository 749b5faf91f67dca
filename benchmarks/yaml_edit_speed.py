"""The studio's YAML on a generated 200-block diagram, in ms: read it as data, and save one block's move.

`read_yaml_text(text)` (engine.format's reader, the one `diagrama run` uses) is the studio's GET of a file;
`apply_edit(text, new)` with one block's `position` changed is its PUT (the smallest text edit, checked by
reading it back with that same reader). Each is timed cold (the editor's tree cache emptied first, as for a
file the server has not read yet) and warm (the same text again, as when the studio saves a file it has just
opened or saved). One JSON line per figure (median and min of --repeat).

    python -m benchmarks.yaml_edit_speed [--blocks 200] [--repeat 10]
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.studio_open import generated_diagram
from engine.format.yamlfile import read_yaml_text
from engine.web.yaml_edit import apply_edit
from engine.web.yaml_edit.tree import clear_cache


def to_json(text: str) -> Any:
    return read_yaml_text(text, "generated.yaml")[0]


def timed(run: Callable[[], Any], repeat: int, cold: bool) -> list[float]:
    times = []
    for _ in range(repeat):
        if cold:
            clear_cache()
        began = time.perf_counter()
        run()
        times.append((time.perf_counter() - began) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    text = generated_diagram(args.blocks)
    new = copy.deepcopy(to_json(text))
    new["blocks"][args.blocks // 2]["position"] = [120, 340]
    moved = apply_edit(text, new)
    assert len(moved.splitlines()) == len(text.splitlines()) + 1 and to_json(moved) == new  # one `position:` line added
    machine = {"python": sys.version.split()[0], "machine": platform.machine()}
    for name, run in (("yaml_to_json", lambda: to_json(text)), ("yaml_apply_edit_move", lambda: apply_edit(text, new))):
        for cache in ("cold", "warm"):
            times = timed(run, args.repeat, cache == "cold")
            print(json.dumps({"benchmark": name, "blocks": args.blocks, "cache": cache,
                              "ms_median": round(statistics.median(times), 1), "ms_min": round(min(times), 1),
                              "n": len(times), **machine}))


if __name__ == "__main__":
    main()
