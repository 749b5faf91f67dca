"""MCP servers as a registry declares them: an `mcp_servers:` entry, and the server it resolves to (its `${VAR}`s read
from the environment, its command or URL as written for listings, what of it is scrubbed). The client's side,
listing and calling, is engine.tools.mcp's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.format.redact import REDACTED

__all__ = ["McpServer", "McpServerEntry", "environment", "expand_env", "resolve_server"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpServerEntry(BaseModel):
    """One `mcp_servers:` entry of a registry file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="the server's name in errors, traces and listings")
    command: list[str] | None = Field(default=None, min_length=1,
                                      description="stdio transport: the command and its arguments, run in the registry's "
                                                  "folder (python is the interpreter running diagrama)")
    url: str | None = Field(default=None, pattern=r"^https?://", description="streamable HTTP transport: the endpoint")
    env: dict[str, str] = Field(default={}, description="environment for a stdio server; ${VAR} reads this "
                                                                  "process's environment; never written to traces")
    group: str = Field(default="default", description="the tool group its tools join")
    include: list[str] | None = Field(default=None, description="only these tools")
    exclude: list[str] = Field(default=[], description="all tools but these")
    timeout: float = Field(default=20, gt=0, description="seconds to connect and list, and for each call")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerEntry:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (a streamable HTTP server), not both or neither")
        if self.url is not None and self.env:
            raise ValueError("env is for a stdio server's process; an HTTP server has its own environment")
        return self


@dataclass(frozen=True)
class McpServer:
    """A server as a registry declared it, its `${VAR}`s resolved; equal configurations share a listing."""

    name: str
    command: tuple[str, ...] | None
    url: str | None
    env: tuple[tuple[str, str], ...]
    cwd: str
    timeout: float
    group: str
    source: str = field(compare=False)
    line: int | None = field(compare=False)
    written: str = field(default="", compare=False)
    """The command or URL as the registry wrote it, `${VAR}`s unexpanded: what listings show."""
    expanded: tuple[str, ...] = field(default=(), compare=False)
    """The values its `${VAR}`s took in the command or URL: scrubbed like its environment's."""

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line is not None else self.source

    @property
    def transport(self) -> str:
        """How it is reached, for listings: `stdio: python server.py` or the URL, as written (never a variable's
        value, never the environment)."""
        if self.written:
            return f"stdio: {self.written}" if self.command is not None else f"http: {self.written}"
        return f"stdio: {' '.join(self.command)}" if self.command is not None else f"http: {self.url}"

    def scrub(self, text: str) -> str:
        """`text` without the values of this server's environment and `${VAR}`s (a server may echo them)."""
        for value in sorted({*(value for _, value in self.env), *self.expanded}, key=len, reverse=True):
            if len(value) >= 4:
                text = text.replace(value, REDACTED)
        return text


def expand_env(value: str, environ: Mapping[str, str]) -> str:
    """`value` with each `${VAR}` replaced from `environ`; KeyError names a variable that is not set."""

    def one(match: re.Match[str]) -> str:
        return environ[match.group(1)]

    return _VARIABLE.sub(one, value)


def resolve_server(entry: McpServerEntry, registry_file: Path, line: int | None,
                   environ: Mapping[str, str]) -> McpServer:
    """The server an entry declares, its `${VAR}`s read from `environ` (KeyError: one is not set)."""
    env = tuple(sorted((key, expand_env(value, environ)) for key, value in entry.env.items()))
    command = tuple(expand_env(part, environ) for part in entry.command) if entry.command is not None else None
    url = expand_env(entry.url, environ) if entry.url is not None else None
    written = " ".join(entry.command) if entry.command is not None else entry.url or ""
    expanded = tuple(environ[name] for name in _VARIABLE.findall(written))
    return McpServer(entry.name, command, url, env, str(registry_file.parent.resolve()), entry.timeout, entry.group,
                     str(registry_file), line, written, expanded)


def environment(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return environ if environ is not None else os.environ
