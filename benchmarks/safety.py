"""Issue 25's figures beside the soak: concurrent saves, fuzzed bodies, and `--otel` with a dead collector.

    python -m benchmarks.safety                    # all three
    python -m benchmarks.safety --only otel --repeats 7

- 30 saves from the same loaded hash, sent at once over HTTP to `diagrama serve` (its own process): how
  many are answered 200 (one) and 409 (the others), and whether the file is the winner's;
- 5,000 seeded random JSON bodies at `POST /api/validate` and `PUT /api/diagrams/...` (the generator the
  fuzz test uses): the answers by status, and how many were 5xx (none);
- `diagrama run diagrams/order_agent.yaml --offline` as a process, without `--otel` and with `--otel` to a
  collector port that refuses connections, and to one that accepts and never answers: wall time (median of
  3, the variants in turn).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import hashlib
import os
import random
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.soak import ROOT, Studio, _diagrama

KEYS = ["diagram", "blocks", "id", "type", "next", "on_error", "body", "with", "set", "position", "to", "when",
        "inputs", "variables", "tools", "error_level", "message_level", "label", "description", "timeout", "x"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: scalars a diagram may hold or must refuse, lists and mappings of diagram keys."""
    kind = rng.randrange(12 if depth < 4 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**53 + 1, 10**30, -(10**30), rng.randrange(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e308, -1e308, 3.14])
    if kind in (4, 5, 6, 7):
        return rng.choice(["", "start", "ask", "done", "Start", "Set", "ClaudeRequest", "Loop", "{{ x", "{{ 1/0 }}",
                           "{% for %}", "a" * 300, "é\u2028\x00", "[1]", "{a: 1}", "- x", "*alias", "&anchor x",
                           "Handle", "Debug", "registry/orders.yaml", "../../etc/passwd", "{{ tools('orders') }}"])
    if kind in (8, 9):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(KEYS): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def mutated(rng: random.Random, diagram: dict[str, Any]) -> Any:
    """The diagram with one to four random changes: a value, a key, a block replaced or removed, a block added."""
    found = copy.deepcopy(diagram)
    for _ in range(rng.randrange(1, 5)):
        blocks = found.get("blocks") if isinstance(found, dict) else None
        choice = rng.randrange(6)
        if choice == 0 and isinstance(blocks, list) and blocks:
            blocks[rng.randrange(len(blocks))] = random_value(rng)
        elif choice == 1 and isinstance(blocks, list) and blocks:
            block = blocks[rng.randrange(len(blocks))]
            if isinstance(block, dict):
                block[rng.choice(KEYS)] = random_value(rng)
        elif choice == 2 and isinstance(blocks, list) and blocks:
            block = blocks[rng.randrange(len(blocks))]
            if isinstance(block, dict) and block:
                block.pop(rng.choice(list(block)))
        elif choice == 3 and isinstance(found, dict):
            found[rng.choice(KEYS)] = random_value(rng)
        elif choice == 4 and isinstance(blocks, list):
            blocks.insert(rng.randrange(len(blocks) + 1), random_value(rng))
        elif isinstance(found, dict) and found:
            found.pop(rng.choice(list(found)))
    return found


def concurrent_saves(studio: Studio, folder: Path, writers: int = 30) -> dict[str, Any]:
    view = studio.client.get("/api/diagrams/order_agent.yaml").json()

    async def go() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=writers)
        async with httpx.AsyncClient(base_url=str(studio.client.base_url), limits=limits, timeout=60) as client:
            return list(await asyncio.gather(*(
                client.put("/api/diagrams/order_agent.yaml", headers=studio.headers,
                           json={"base_hash": view["hash"], "diagram": view["diagram"] | {"description": f"writer {n}"}})
                for n in range(writers))))

    answers = asyncio.run(go())
    statuses = [answer.status_code for answer in answers]
    winner = statuses.index(200) if 200 in statuses else None
    text = (folder / "order_agent.yaml").read_text(encoding="utf-8")
    return {"200": statuses.count(200), "409": statuses.count(409),
            "other": len(statuses) - statuses.count(200) - statuses.count(409),
            "file is the winner's": winner is not None and f"writer {winner}\n" in text,
            "409s carry the file's hash": all(answer.json()["hash"] == hashlib.sha256(text.encode()).hexdigest()
                                              for answer in answers if answer.status_code == 409)}


def fuzz(studio: Studio, folder: Path, bodies: int = 5000, seed: int = 25) -> dict[int, int]:
    """`bodies` random bodies, four validations to a save; the answers by status."""
    rng = random.Random(seed)
    original = studio.client.get("/api/diagrams/order_agent.yaml").json()["diagram"]
    (folder / "fuzz.yaml").write_bytes((folder / "order_agent.yaml").read_bytes())
    statuses: dict[int, int] = {}
    for number in range(bodies):
        draft = mutated(rng, original) if rng.random() < 0.8 else random_value(rng)
        if number % 5 == 4:
            current = studio.client.get("/api/diagrams/fuzz.yaml/hash").json().get("hash", "x")
            body = {"base_hash": current, "diagram": draft} if rng.random() < 0.9 else draft
            answer = studio.client.put("/api/diagrams/fuzz.yaml", json=body, headers=studio.headers)
            if answer.status_code == 404:
                (folder / "fuzz.yaml").write_bytes((folder / "order_agent.yaml").read_bytes())
        else:
            body = {"diagram": draft, "path": rng.choice(["order_agent.yaml", "new.yaml", "../x.yaml"])} \
                if rng.random() < 0.9 else draft
            answer = studio.client.post("/api/validate", json=body, headers=studio.headers)
        statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    return dict(sorted(statuses.items()))


def _hanging_collector() -> tuple[str, threading.Event]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue
        listener.close()

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", stop


def otel_exit(repeats: int = 3) -> dict[str, float]:
    """Median wall time of `diagrama run` (order agent, offline) without --otel, and with --otel to a dead and a
    hanging collector (the exporter's own timeout left at its 10 s)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    hanging, stop = _hanging_collector()
    variants = (("without --otel", [], None), ("--otel, collector down", ["--otel"], dead),
                ("--otel, collector hangs", ["--otel"], hanging))
    times: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory() as runs:
        for _ in range(repeats):  # the variants in turn, so that a shared machine's load falls on each alike
            for name, extra, endpoint in variants:
                environ = os.environ | ({"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint} if endpoint else {})
                began = time.perf_counter()
                subprocess.run([*_diagrama(), "run", str(ROOT / "diagrams" / "order_agent.yaml"), "--offline",
                                "--quiet", "--runs-dir", runs, *extra], env=environ, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - began)
    found = {name: statistics.median(seconds) for name, seconds in times.items()}
    stop.set()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["studio", "otel"], help="the saves and the fuzz, or the --otel timings")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each --otel variant (the median is shown)")
    options = parser.parse_args()
    if options.only != "otel":
        with tempfile.TemporaryDirectory() as place:
            folder = Path(place) / "diagrams"
            studio = Studio(folder)
            try:
                print("30 concurrent saves from one hash:", concurrent_saves(studio, folder))
                began = time.perf_counter()
                statuses = fuzz(studio, folder)
                print(f"5,000 fuzzed bodies in {time.perf_counter() - began:.0f} s: by status {statuses}; "
                      f"5xx: {sum(count for status, count in statuses.items() if status >= 500)}")
            finally:
                studio.close()
    if options.only != "studio":
        timings = otel_exit(options.repeats)
        base = timings["without --otel"]
        for name, seconds in timings.items():
            print(f"diagrama run {name:<26} {seconds:6.2f} s"
                  + (f"  ({seconds - base:+.2f} s)" if name != "without --otel" else ""))


if __name__ == "__main__":
    main()
