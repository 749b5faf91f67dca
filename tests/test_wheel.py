"""What a built wheel carries beyond the packages: the examples the studio's gallery offers (an installed wheel has
no repository diagrams/ folder beside it), read from there when no checkout's folder is."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from engine.web.navigation import PACKAGED_EXAMPLES, examples_folder

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # builds the wheel (the studio's bundle skipped)
def test_the_wheel_carries_every_example_where_the_gallery_reads_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from hatchling.builders.wheel import WheelBuilder

    monkeypatch.setenv("DIAGRAMA_SKIP_UI", "1")  # hatch_build.py: no npm build for this
    built = [Path(path) for path in WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])]
    names = set(zipfile.ZipFile(built[0]).namelist())
    packaged = PACKAGED_EXAMPLES.relative_to(ROOT).as_posix()
    examples = [path.relative_to(ROOT / "diagrams").as_posix() for path in (ROOT / "diagrams").rglob("*")
                if path.is_file() and "__pycache__" not in path.parts]
    assert examples and all(f"{packaged}/{example}" in names for example in examples), \
        sorted(set(examples) - {name.removeprefix(f"{packaged}/") for name in names})
    assert "engine/web/navigation.py" in names and not any(name.startswith("diagrams/") for name in names)


def test_the_gallery_reads_a_checkouts_examples_else_the_wheels(tmp_path: Path) -> None:
    checkout, packaged = tmp_path / "diagrams", tmp_path / "site-packages" / "examples"
    assert examples_folder(checkout, packaged) == packaged  # installed: no diagrams/ beside the package
    checkout.mkdir()
    assert examples_folder(checkout, packaged) == checkout
    assert examples_folder(ROOT / "diagrams") == ROOT / "diagrams"  # this checkout
