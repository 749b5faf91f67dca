"""pytest plugin: every `*.scenario.yaml` is collected, one test item per scenario.

Loaded through the `pytest11` entry point wherever diagrama is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.errors import DiagramaError, ScenarioFailed
from engine.testing.scenarios import LoadedScenario, load_scenarios, run_scenario


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    if file_path.name.endswith(".scenario.yaml"):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    def collect(self) -> Any:
        try:
            scenarios = load_scenarios(self.path)
        except DiagramaError as exc:
            raise self.CollectError(str(exc)) from None  # pytest shows our one-line message, not a chain
        for scenario in scenarios:
            yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: LoadedScenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        for tag in scenario.spec.tags:
            self.config.addinivalue_line("markers", f"{tag}: scenario tag")  # so `-m tag` works, unwarned
            self.add_marker(tag)

    def runtest(self) -> None:
        from blocks.registry import registry  # wiring, as the CLI does

        runs_dir = Path(self.config.rootpath) / "runs"
        verdict = run_scenario(self.scenario, registry(), runs_dir)
        if not verdict.passed:
            raise ScenarioFailed(verdict.report())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            return excinfo.value.report
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, (self.scenario.line or 1) - 1, f"scenario: {self.name}"
