"""diagrama's engine: load diagrams, validate them into graphs, run them.

This `__all__` is the public face for users and block authors, pinned by
tests/engine/test_exported_members.py. Names load on first use (PEP 562), so
`import engine` stays cheap and pulls in no HTTP, web, batch or Celery code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.format.lazy import lazy_face

if TYPE_CHECKING:
    from engine.compile.block import (
        Block,
        BlockRegistry,
        NoInputs,
        NoOutputs,
        Report,
        RunSettings,
        WithFailures,
        entry_point_blocks,
    )
    from engine.compile.diagram import CompiledBlock, Diagram
    from engine.compile.templating import truthy
    from engine.errors import (
        BlockError,
        BlockTimeout,
        CheckpointFailed,
        DiagramaError,
        DiagramError,
        DiagramInvalid,
        HttpError,
        InputError,
        InternalError,
        LoopLimitReached,
        LoopPassFailed,
        OutputTruncated,
        Problem,
        ProviderBlocked,
        ProviderError,
        ProviderRefused,
        RunError,
        RunSuspended,
        RunTimeout,
        ScenarioFailed,
        StepLimitReached,
        SubdiagramFailed,
        TemplateError,
        TemplateSyntax,
        ToolError,
        TraceWriteFailed,
        UsageError,
        WaitTimeout,
        WireError,
    )
    from engine.format.levels import ErrorLevel, MessageLevel
    from engine.format.schemas import schema_problems, schema_refusal
    from engine.format.tables import DataTable, HistoryRow, Table, TableError, history_rows, history_table, to_table
    from engine.format.values import dumps, json_result
    from engine.runtime.api import default_registry, load, run, run_async, validate
    from engine.runtime.context import RunContext, Services
    from engine.runtime.execute import execute
    from engine.runtime.result import RunResult
    from engine.runtime.trace import Event, read_events

_HOMES = {
    "engine.compile.block": ["Block", "BlockRegistry", "NoInputs", "NoOutputs", "Report", "RunSettings", "WithFailures",
                             "entry_point_blocks"],
    "engine.compile.diagram": ["CompiledBlock", "Diagram"],
    "engine.compile.templating": ["truthy"],
    "engine.errors": [
        "BlockError", "BlockTimeout", "CheckpointFailed", "DiagramError", "DiagramInvalid", "DiagramaError", "HttpError",
        "InputError", "InternalError", "LoopLimitReached", "LoopPassFailed", "OutputTruncated", "Problem",
        "ProviderBlocked", "ProviderError", "ProviderRefused", "RunError", "RunSuspended", "RunTimeout", "ScenarioFailed",
        "StepLimitReached", "SubdiagramFailed", "TemplateError", "TemplateSyntax", "ToolError", "TraceWriteFailed",
        "UsageError", "WaitTimeout", "WireError",
    ],
    "engine.format.values": ["dumps", "json_result"],
    "engine.format.levels": ["ErrorLevel", "MessageLevel"],
    "engine.format.schemas": ["schema_problems", "schema_refusal"],
    "engine.format.tables": ["DataTable", "HistoryRow", "Table", "TableError", "history_rows", "history_table", "to_table"],
    "engine.runtime.api": ["default_registry", "load", "run", "run_async", "validate"],
    "engine.runtime.context": ["RunContext", "Services"],
    "engine.runtime.execute": ["execute"],
    "engine.runtime.result": ["RunResult"],
    "engine.runtime.trace": ["Event", "read_events"],
}

__all__ = [
    "Block",
    "BlockError",
    "BlockRegistry",
    "BlockTimeout",
    "CheckpointFailed",
    "CompiledBlock",
    "DataTable",
    "Diagram",
    "DiagramError",
    "DiagramInvalid",
    "DiagramaError",
    "ErrorLevel",
    "Event",
    "HistoryRow",
    "HttpError",
    "InputError",
    "InternalError",
    "LoopLimitReached",
    "LoopPassFailed",
    "MessageLevel",
    "NoInputs",
    "NoOutputs",
    "OutputTruncated",
    "Problem",
    "ProviderBlocked",
    "ProviderError",
    "ProviderRefused",
    "Report",
    "RunContext",
    "RunError",
    "RunResult",
    "RunSettings",
    "RunSuspended",
    "RunTimeout",
    "ScenarioFailed",
    "Services",
    "StepLimitReached",
    "SubdiagramFailed",
    "Table",
    "TableError",
    "TemplateError",
    "TemplateSyntax",
    "ToolError",
    "TraceWriteFailed",
    "UsageError",
    "WaitTimeout",
    "WireError",
    "WithFailures",
    "default_registry",
    "dumps",
    "entry_point_blocks",
    "execute",
    "history_rows",
    "history_table",
    "json_result",
    "load",
    "read_events",
    "run",
    "run_async",
    "schema_problems",
    "schema_refusal",
    "to_table",
    "truthy",
    "validate",
]


__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())
