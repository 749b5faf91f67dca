"""diagrama's engine: load diagrams, validate them into graphs, run them."""

from __future__ import annotations

from engine.api import default_registry, load, run, run_async, validate
from engine.block import Block, BlockRegistry, NoInputs, NoOutputs, Report, RunSettings
from engine.context import RunContext, Services
from engine.diagram import CompiledBlock, Diagram
from engine.errors import (
    BlockError,
    BlockTimeout,
    DiagramaError,
    DiagramError,
    DiagramInvalid,
    InputError,
    LoopLimitReached,
    Problem,
    ProviderError,
    RunError,
    RunTimeout,
    StepLimitReached,
    TemplateError,
    ToolError,
    UsageError,
)
from engine.execute import RunResult, execute
from engine.spec import ErrorLevel, MessageLevel
from engine.tables import DataTable, HistoryRow, Table, TableError, history_rows, history_table, to_table
from engine.templating import truthy
from engine.trace import Event, read_events

__all__ = [
    "Block",
    "BlockError",
    "BlockRegistry",
    "BlockTimeout",
    "CompiledBlock",
    "DataTable",
    "Diagram",
    "DiagramError",
    "DiagramInvalid",
    "DiagramaError",
    "ErrorLevel",
    "Event",
    "HistoryRow",
    "InputError",
    "LoopLimitReached",
    "MessageLevel",
    "NoInputs",
    "NoOutputs",
    "Problem",
    "ProviderError",
    "Report",
    "RunContext",
    "RunError",
    "RunResult",
    "RunSettings",
    "RunTimeout",
    "Services",
    "StepLimitReached",
    "Table",
    "TableError",
    "TemplateError",
    "ToolError",
    "UsageError",
    "default_registry",
    "execute",
    "history_rows",
    "history_table",
    "load",
    "read_events",
    "run",
    "run_async",
    "to_table",
    "truthy",
    "validate",
]
