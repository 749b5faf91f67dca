"""The YAML pane's API (engine.web.source) and the second round's server fixes: broken files read, typed text
parsed by the run's reader with lines, the exact text a save would write, a text saved as typed, registries and
their groups while the diagram has problems, subfolders, new files' mode, a duplicate's name, the self-link, the
version history of saved files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from blocks.registry import registry
from engine.cli import app as cli_app
from engine.compile.loader import load_diagram_text
from engine.errors import DiagramInvalid
from tests.web.studio_client import HEADERS, loaded

ORDER = "order_agent.yaml"






BROKEN = {
    "unclosed.yaml": "diagram: a\nblocks:\n  - id: start\n    type: Start\n    with: {max_tokens: [512\n",
    "empty.yaml": "",
    "tab.yaml": "diagram: t\nblocks:\n\t- id: start\n",
    "five.yaml": "diagram: f\nblocks: 5\n",
    "ones.yaml": "diagram: o\nblocks: [1]\n",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_file_opens_with_its_problems_and_its_source(client, folder: Path, name: str) -> None:
    (folder / name).write_text(BROKEN[name], encoding="utf-8")
    file = client("GET", f"/api/diagrams/{name}")
    assert file.status_code == 200, file.text
    assert file.json()["diagram"] is None
    assert file.json()["problems"], file.json()
    source = client("GET", f"/api/diagrams/{name}/source")
    assert source.status_code == 200
    assert source.json()["text"] == BROKEN[name]
    assert source.json()["hash"] == file.json()["hash"]
    listing = client("GET", "/api/diagrams")
    assert name in [entry["path"] for entry in listing.json()]


def test_parse_reads_a_typed_text_with_lines_and_block_spans(client) -> None:
    text = (
        "diagram: typed\nblocks:\n  - id: start\n    type: Start\n    next: ask\n"
        "  - id: ask\n    type: Set\n    set:\n      a: \"{{ questoin }}\"\n"
    )
    parsed = client("POST", "/api/parse", json={"path": "typed.yaml", "text": text}, headers=HEADERS).json()
    assert parsed["diagram"]["blocks"][1]["id"] == "ask"
    assert parsed["blocks"] == {"start": {"first": 3, "last": 5}, "ask": {"first": 6, "last": 9}}
    problem = next(p for p in parsed["problems"] if p["block"] == "ask")
    assert problem["line"] == 9 and problem["column"] is not None, problem
    broken = client("POST", "/api/parse", json={"path": "typed.yaml", "text": text + "  - {id: [\n"}, headers=HEADERS).json()
    assert broken["diagram"] is None
    assert broken["problems"][0]["line"] >= 10  # where the reader stops: the unclosed `[` or the end


def test_preview_is_the_text_the_save_writes_and_writes_nothing(client, folder: Path) -> None:
    file = loaded(client, ORDER)
    before = (folder / ORDER).read_text(encoding="utf-8")
    diagram = file["diagram"]
    diagram["blocks"][-1]["set"] = {"answer": "Sorry!"}
    preview = client("POST", f"/api/diagrams/{ORDER}/preview", json={"base_hash": file["hash"], "diagram": diagram},
                     headers=HEADERS)
    assert preview.status_code == 200, preview.text
    assert (folder / ORDER).read_text(encoding="utf-8") == before
    saved = client("PUT", f"/api/diagrams/{ORDER}", json={"base_hash": file["hash"], "diagram": diagram}, headers=HEADERS)
    assert saved.status_code == 200
    assert (folder / ORDER).read_text(encoding="utf-8") == preview.json()["text"]
    assert set(preview.json()["blocks"]) == {block["id"] for block in diagram["blocks"]}


def test_the_pane_saves_its_text_as_typed_and_refuses_a_stale_base(client, folder: Path) -> None:
    file = loaded(client, ORDER)
    text = (folder / ORDER).read_text(encoding="utf-8") + "# a comment typed in the pane\n"
    saved = client("PUT", f"/api/diagrams/{ORDER}/source", json={"base_hash": file["hash"], "text": text}, headers=HEADERS)
    assert saved.status_code == 200, saved.text
    assert (folder / ORDER).read_text(encoding="utf-8") == text
    assert saved.json()["valid"] is True
    stale = client("PUT", f"/api/diagrams/{ORDER}/source", json={"base_hash": file["hash"], "text": "x: 1\n"},
                   headers=HEADERS)
    assert stale.status_code == 409
    base = client("GET", f"/api/diagrams/{ORDER}/source", params={"hash": file["hash"]}).json()
    assert base["text"] + "# a comment typed in the pane\n" == text  # the conflict's base, remembered


def test_registry_groups_are_offered_while_the_diagram_has_problems(client, folder: Path) -> None:
    text = (folder / ORDER).read_text(encoding="utf-8").replace("{{ result }}", "{{ resutl }}")
    parsed = client("POST", "/api/parse", json={"path": ORDER, "text": text}, headers=HEADERS).json()
    assert not parsed["valid"]
    groups = {r["group"]: r for r in parsed["registries"]}
    assert "orders" in groups, parsed["registries"]
    assert groups["orders"]["description"] == "Looking up and changing customers' orders"
    files = client("GET", "/api/registries").json()
    assert any(f["path"] == "registry/orders.yaml" and "orders" in f["groups"] for f in files), files


def test_subfolders_are_listed_and_new_files_follow_the_umask(client, folder: Path) -> None:
    (folder / "team").mkdir()
    (folder / "team" / "inner.yaml").write_text("diagram: inner\nblocks:\n  - id: start\n    type: Start\n",
                                                encoding="utf-8")
    assert "team/inner.yaml" in [entry["path"] for entry in client("GET", "/api/diagrams").json()]
    assert client("GET", "/api/diagrams/team/inner.yaml").status_code == 200
    mask = os.umask(0o022)
    os.umask(mask)
    created = client("POST", "/api/diagrams", json={"path": "fresh.yaml"}, headers=HEADERS)
    assert created.status_code == 201
    assert stat.S_IMODE((folder / "fresh.yaml").stat().st_mode) == 0o666 & ~mask


def test_a_duplicate_gets_its_own_diagram_name(client, folder: Path) -> None:
    made = client("POST", "/api/diagrams", json={"path": "order_copy.yaml", "copy_of": ORDER}, headers=HEADERS)
    assert made.status_code == 201
    text = (folder / "order_copy.yaml").read_text(encoding="utf-8")
    assert "diagram: order_copy" in text
    original = (folder / ORDER).read_text(encoding="utf-8").splitlines()
    assert sum(a != b for a, b in zip(original, text.splitlines(), strict=True)) == 1


SELF_LINK = "diagram: d\nblocks:\n  - id: start\n    type: Start\n    next: done\n  - id: done\n    type: Set\n" \
            "    set: {{a: 1}}\n    next: {next}\n"


def test_an_unconditional_self_link_is_a_problem_in_the_engine(tmp_path: Path) -> None:
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram_text(SELF_LINK.format(next="done"), tmp_path / "d.yaml", registry())
    problem = next(p for p in caught.value.problems if p.code == "self_link")
    assert (problem.block, problem.field, problem.line) == ("done", "next", 9)
    # a loop that can end is not
    counted = SELF_LINK.format(next="[{to: start, when: '{{ a > 3 }}'}, {to: done}]")
    load_diagram_text(counted, tmp_path / "d.yaml", registry())
    # the CLI says so too, from the same check
    (tmp_path / "d.yaml").write_text(SELF_LINK.format(next="done"), encoding="utf-8")
    checked = CliRunner().invoke(cli_app, ["validate", str(tmp_path / "d.yaml")])
    assert checked.exit_code != 0
    assert "links to itself" in checked.output and "done" in checked.output, checked.output


def test_saved_versions_are_listed_newest_first_and_read_again(client, folder: Path, tmp_path: Path) -> None:
    original = (folder / ORDER).read_text(encoding="utf-8")
    assert client("GET", f"/api/diagrams/{ORDER}/versions").json() == []  # nothing saved by the studio yet
    file = loaded(client, ORDER)
    diagram = file["diagram"]
    diagram["blocks"][-1]["set"] = {"answer": "Sorry!"}
    first = client("PUT", f"/api/diagrams/{ORDER}", json={"base_hash": file["hash"], "diagram": diagram}, headers=HEADERS)
    assert first.status_code == 200, first.text
    typed = (folder / ORDER).read_text(encoding="utf-8") + "# typed\n"
    second = client("PUT", f"/api/diagrams/{ORDER}/source", json={"base_hash": first.json()["hash"], "text": typed},
                    headers=HEADERS)
    assert second.status_code == 200, second.text

    versions = client("GET", f"/api/diagrams/{ORDER}/versions").json()
    # the text the first save replaced, the first save's, the second's: newest first, each with its file's hash
    assert [v["hash"] for v in versions] == [second.json()["hash"], first.json()["hash"], file["hash"]]
    assert versions[0]["saved"] >= versions[1]["saved"] >= versions[2]["saved"] > 1_600_000_000  # seconds
    oldest = client("GET", f"/api/diagrams/{ORDER}/versions/{versions[-1]['id']}").json()
    assert oldest["text"] == original and oldest["hash"] == file["hash"]
    assert versions[0]["lines"] == typed.count("\n")
    # kept beside the runs, not in the served folder
    assert not [p for p in folder.rglob("*") if "version" in p.name.lower()]
    assert list((tmp_path / "runs" / ".versions").iterdir())
    for wrong in ("nope", "1-zz", "..%2F..%2Fx"):
        assert client("GET", f"/api/diagrams/{ORDER}/versions/{wrong}").status_code == 404, wrong
    assert client("GET", "/api/diagrams/absent.yaml/versions").status_code == 404
