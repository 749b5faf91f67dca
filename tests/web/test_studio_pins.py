"""Issue 43, add 4: pinned outputs. A block's output pinned in the studio is a scenario file beside the diagram (so the
pin is a test too), and the studio's runs of the diagram take the pinned answer instead of asking for one."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from engine.cli import app as cli_app
from engine.providers.simulator import Simulator
from engine.runtime.context import Services
from engine.testing.scenarios import load_scenarios
from tests.web.studio_client import HEADERS, make_client

DIAGRAM = "classify_one.yaml"
PINS = "classify_one.pins.scenario.yaml"


def test_pinning_writes_a_valid_scenario_that_diagrama_test_passes(client, folder: Path) -> None:
    assert client("GET", f"/api/diagrams/{DIAGRAM}/pins").json() == {"file": None, "pins": []}
    pinned = client("PUT", f"/api/diagrams/{DIAGRAM}/pins/classify", json={"output": "change_address",
                    "inputs": {"text": "Can I change the address?"}}, headers=HEADERS)
    assert pinned.status_code == 200, pinned.text
    assert pinned.json() == {"file": PINS, "pins": [{"block": "classify", "text": "change_address", "output": None}]}
    [scenario] = load_scenarios(folder / PINS)
    assert scenario.diagram == (folder / DIAGRAM).resolve()
    assert scenario.spec.inputs == {"text": "Can I change the address?"}
    assert [r.model_dump(exclude_none=True) for r in scenario.spec.replies["classify"]] == [{"text": "change_address"}]
    tested = CliRunner().invoke(cli_app, ["test", str(folder / PINS)])
    assert tested.exit_code == 0 and "1 passed" in tested.output, tested.output


def test_pins_are_refused_for_unknown_blocks_and_under_read_only(client, folder: Path, tmp_path: Path) -> None:
    unknown = client("PUT", f"/api/diagrams/{DIAGRAM}/pins/clasify", json={"output": "x"}, headers=HEADERS)
    assert unknown.status_code == 422 and "no block 'clasify'" in unknown.text
    assert client("DELETE", f"/api/diagrams/{DIAGRAM}/pins/classify", json={}, headers=HEADERS).status_code == 404
    read_only = make_client(folder, tmp_path / "runs2", read_only=True)
    assert read_only("PUT", f"/api/diagrams/{DIAGRAM}/pins/classify", json={"output": "x"},
                     headers=HEADERS).status_code == 403
    assert not (folder / PINS).exists()


def test_a_run_with_a_pin_does_not_ask_for_the_pinned_block_and_unpinning_asks_again(folder: Path,
                                                                                    tmp_path: Path) -> None:
    simulator = Simulator()  # the studio's offline vendor: every request a run makes without a pin comes here
    client = make_client(folder, tmp_path / "runs", services=Services(offline=True, simulator=simulator))
    first = client("POST", f"/api/diagrams/{DIAGRAM}/runs", json={"inputs": {}}, headers=HEADERS).extensions["run"]
    assert first["status"] == "succeeded"
    assert [r.block for r in simulator.requests] == ["classify"]
    client("PUT", f"/api/diagrams/{DIAGRAM}/pins/classify", json={"output": "return"}, headers=HEADERS)
    pinned = client("POST", f"/api/diagrams/{DIAGRAM}/runs", json={"inputs": {}}, headers=HEADERS).extensions["run"]
    assert pinned["status"] == "succeeded" and pinned["variables"]["label"] == "return"
    assert [r.block for r in simulator.requests] == ["classify"]  # no second request: the pin answered
    step = next(s for s in pinned["steps"] if s["block"] == "classify")
    assert step["outputs"]["result"] == "return"
    removed = client("DELETE", f"/api/diagrams/{DIAGRAM}/pins/classify", json={}, headers=HEADERS)
    assert removed.json() == {"file": None, "pins": []} and not (folder / PINS).exists()
    client("POST", f"/api/diagrams/{DIAGRAM}/runs", json={"inputs": {}}, headers=HEADERS)
    assert [r.block for r in simulator.requests] == ["classify", "classify"]
