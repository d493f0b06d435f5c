"""Inputs the command fuzzer (test_fuzz_commands.py) found refused badly, each through the real
command: exit 2, one line naming what to change, nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz_commands import build_world, check_invocation, copy_world

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("world") / "template"
    run_id = build_world(folder)
    return folder, run_id


@pytest.fixture
def world(template: tuple[Path, str], tmp_path: Path) -> Path:
    folder = copy_world(template[0], tmp_path / "world")
    yield folder
    (folder / "readonly").chmod(0o755)


def one_line(args: list[str], world: Path) -> str:
    status, _, err = check_invocation(args, world)
    assert status == 2, err
    return err.strip()


@pytest.mark.parametrize("kind", ["timeseries", "cwnd"])
def test_a_figure_too_small_for_its_panels_is_refused_and_leaves_no_file(template: tuple[Path, str], world: Path,
                                                                          kind: str) -> None:
    # Was: exit 1, "internal: UserWarning: constrained_layout not applied ..." (matplotlib's warning).
    line = one_line(["plot", kind, template[1], "--db", "stored.duckdb", "-o", "new/deeper/fig.svg", "--size", "1x1"],
                    world)
    assert line.startswith('error: --size: "1x1" leaves the panels of the figure no room'), line
    assert not (world / "new").exists()


def test_bufferlab_without_a_command_names_the_commands_in_one_line(world: Path) -> None:
    # Was: the whole --help text folded into one line after "error: usage: Usage: ...".
    line = one_line([], world)
    assert line.startswith("error: COMMAND: missing (known: advise, ccperf, check"), line
    assert "Usage" not in line


def test_results_without_a_subcommand_names_its_subcommands(world: Path) -> None:
    line = one_line(["results"], world)
    assert line.startswith("error: COMMAND: missing (known: "), line
    assert "export" in line and "Usage" not in line


def test_a_sweep_file_that_is_a_folder_is_refused_without_an_errno(world: Path) -> None:
    # Was: "readonly: cannot read: [Errno 21] Is a directory: 'readonly'".
    assert one_line(["sweep", "folder", "--workers", "1"], world) == "error: folder: is a folder, not a file"
