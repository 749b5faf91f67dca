"""`python -m engine.cli`: the same as the `diagrama` command."""

from engine.cli import main

main()
