"""`python -m benchmarks.faults`: issue 38's targets, each measured with real processes, one table row a figure.

    python -m benchmarks.faults                       # every scenario, full size (about 20 minutes on two cores)
    python -m benchmarks.faults --quick               # small sizes: each scenario in about a minute
    python -m benchmarks.faults --only sigkill --trials 5
    python -m benchmarks.faults --only streams,postgres_local --json

Scenarios (benchmarks/faults/<name>.py says what each does): sigkill, sigterm, blips, streams, postgres_local.
Needs redis-server and PostgreSQL's binaries (Debian's postgresql package) for the Celery and PostgreSQL ones.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import traceback

from benchmarks.faults.report import Outcome, Row, machine, table

SCENARIOS = {
    "sigkill": "benchmarks.faults.sigkill",
    "sigterm": "benchmarks.faults.sigterm",
    "blips": "benchmarks.faults.blips",
    "streams": "benchmarks.faults.throughput",
    "postgres_local": "benchmarks.faults.throughput",
}


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.faults", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(SCENARIOS), help="scenarios, comma-separated")
    parser.add_argument("--quick", action="store_true", help="small sizes, to try it in a minute a scenario")
    parser.add_argument("--json", action="store_true", help="one JSON object: rows, details, machine")
    parser.add_argument("--trials", type=int, help="sigkill: trials (20; --quick 3)")
    parser.add_argument("--trial-timeout", type=float, help="sigkill: seconds a killed run has to end (120; quick 60)")
    parser.add_argument("--visibility-timeout", type=float,
                        help="sigkill, blips: DIAGRAMA_VISIBILITY_TIMEOUT for the API and workers (default: unset)")
    parser.add_argument("--seconds", type=float, help="streams, postgres_local: seconds a load level (20; quick 5)")
    parser.add_argument("--open-streams", type=int, help="streams: event streams held open on Celery (1000; quick 200)")
    parser.add_argument("--client-procs", type=int, default=2, help="client processes for a load (default 2)")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--keep", action="store_true", help="keep each scenario's folder (logs, store, effects)")
    parser.add_argument("--verbose", "-v", action="store_true", help="each trial and phase as it goes, on stderr")
    found = parser.parse_args(argv)
    unknown = [name for name in found.only.split(",") if name not in SCENARIOS]
    if unknown:
        parser.error(f"no scenario {', '.join(unknown)}; there are {', '.join(SCENARIOS)}")
    return found


def main(argv: list[str] | None = None) -> int:
    given = options(argv)
    rows: list[Row] = []
    details: dict[str, object] = {}
    for name in given.only.split(","):
        if not given.json:
            print(f"faults: {name} …", file=sys.stderr, flush=True)
        try:
            outcome: Outcome = getattr(importlib.import_module(SCENARIOS[name]), name)(given)
        except KeyboardInterrupt:
            print("faults: stopped", file=sys.stderr)
            return 130
        except Exception as exc:  # the other scenarios still run; the row says what broke
            traceback.print_exc()
            outcome = Outcome()
            outcome.row(name, "scenario could not run", f"{type(exc).__name__}: {exc}"[:160], "runs", False)
        rows += outcome.rows
        details[name] = outcome.details
        if not given.json:
            print(table(outcome.rows), file=sys.stderr, flush=True)
    if given.json:
        print(json.dumps({"rows": [dataclasses.asdict(row) for row in rows], "details": details,
                          "machine": machine(), "quick": given.quick}, default=str))
    else:
        print(f"\n{table(rows)}\n{machine()}")
    return 0 if all(row.met is not False for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
