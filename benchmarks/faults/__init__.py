"""Issue 38's fault script: `python -m benchmarks.faults` (benchmarks/faults/__main__.py says how to run it)."""
