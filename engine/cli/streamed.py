"""`diagrama run --stream`: the model's text printed as it comes, a line per block's answer.

Text mode writes the pieces to stdout (the answer is the command's output); `--output json` keeps stdout for its
one object, so the pieces go to stderr there. A block's answer ends its line when another block starts speaking,
before the per-block lines are written (they go to stderr, often the same terminal), and when the run ends. Each
piece is scrubbed of this process's keys, as every line the CLI prints is (a key cut across two pieces is not
recognised: a model that has a key to repeat has been given it).
"""

from __future__ import annotations

from typing import TextIO

from engine.format.redact import Redactor

__all__ = ["StreamPrinter"]


class StreamPrinter:
    __slots__ = ("_block", "_open", "_redactor", "_stream")

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self._stream: TextIO | None = stream
        self._redactor = redactor
        self._block: str | None = None
        self._open = False

    def piece(self, block: str, text: str) -> None:
        """A run's text observer: one piece of `block`'s answer."""
        if block != self._block:
            self.end_line()
            self._block = block
        self._write(self._redactor.text(text))
        self._open = not text.endswith("\n")

    def end_line(self) -> None:
        """End the answer's line, if one is open (before other lines are written, and at the run's end)."""
        if self._open:
            self._open = False
            self._write("\n")

    def _write(self, text: str) -> None:
        stream = self._stream
        if stream is None:
            return
        try:
            stream.write(text)
            stream.flush()
        except BrokenPipeError:
            self._stream = None  # the reader went away (`| head`): the run goes on, silently
