"""The public face is pinned: adding to or removing from `engine.__all__` has to be done on purpose."""

from __future__ import annotations

import subprocess
import sys

import engine
import engine.providers
import engine.tools

PUBLIC = [
    "Block", "BlockError", "BlockRegistry", "BlockTimeout", "CompiledBlock", "DataTable", "Diagram", "DiagramError",
    "DiagramInvalid", "DiagramaError", "ErrorLevel", "Event", "HistoryRow", "InputError", "LoopLimitReached",
    "MessageLevel", "NoInputs", "NoOutputs", "Problem", "ProviderError", "Report", "RunContext", "RunError",
    "RunResult", "RunSettings", "RunTimeout", "Services", "StepLimitReached", "Table", "TableError", "TemplateError",
    "ToolError", "UsageError", "default_registry", "execute", "history_rows", "history_table", "load", "read_events",
    "run", "run_async", "to_table", "truthy", "validate",
    # the rest of the error tree a caller may meet, and what block authors use beside Block
    "InternalError", "OutputTruncated", "ProviderBlocked", "ProviderRefused", "ScenarioFailed", "TemplateSyntax",
    "TraceWriteFailed", "WireError", "WithFailures", "dumps", "entry_point_blocks", "json_result", "HttpError",
    # durable runs: a Wait's signal and its timeout, a state that cannot be checkpointed
    "CheckpointFailed", "RunSuspended", "WaitTimeout",
    # what the Subdiagram block and a concurrent Loop raise
    "LoopPassFailed", "SubdiagramFailed",
    # a JSON Schema written in a diagram, held to values from outside (a Wait's form), patterns in linear time
    "schema_problems", "schema_refusal",
]


def test_engine_all_is_exactly_the_public_face() -> None:
    assert sorted(engine.__all__) == sorted(PUBLIC)


def test_every_public_name_resolves() -> None:
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name


def test_tools_face_lists_what_blocks_use() -> None:
    assert set(engine.tools.__all__) >= {"ToolRegistry", "check_arguments"}
    for name in engine.tools.__all__:
        assert getattr(engine.tools, name) is not None


def test_import_engine_loads_no_http_web_batch_or_celery() -> None:
    code = (
        "import sys, engine; engine.load; engine.Diagram; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'starlette', 'sqlalchemy', 'celery')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_import_engine_tools_loads_no_provider_module() -> None:
    code = "import sys, engine.tools; print(sorted(m for m in sys.modules if m.startswith('engine.providers')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
