"""Every command's options checked before anything is simulated, stored or drawn: numbers finite and
in range, lists without empty entries, output paths writable, input files read with a limit; each
mistake one line ``error: <option>: <reason>`` (the option by its long name), exit 2, and nothing
left behind (no store, no figure, no folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SMALL_DUMBBELL, bufferlab
from fuzz_specs import run_cli

pytestmark = pytest.mark.engine


def refused(args: list[str], field: str) -> str:
    """`bufferlab ARGS` in this process: exit 2 and one line naming `field`; returns the reason."""
    status, out, err = run_cli(args)
    lines = err.splitlines()
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), err
    assert "Traceback" not in err
    return lines[0][len(f"error: {field}: "):]


@pytest.fixture
def small(write_scenario) -> Path:
    return write_scenario(SMALL_DUMBBELL)


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one small run, and the run's id."""
    folder = tmp_path_factory.mktemp("stored")
    spec = folder / "small.toml"
    spec.write_text(SMALL_DUMBBELL.replace("\n    ", "\n"), encoding="utf-8")
    db = folder / "store.duckdb"
    status, out, err = run_cli(["run", str(spec), "--db", str(db), "--json"])
    assert status == 0, err
    import json

    return db, json.loads(out)["run_id"]


def mix(db: Path, *extra: str) -> list[str]:
    return ["advise", "--rate", "10Mbps", "--target", "utilisation>=0.9", "--duration", "1s", "--seeds", "1",
            "--max-bdp", "2", "--db", str(db), *extra]


# --- numbers: finite and in range -------------------------------------------------------------------

@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "many"])
def test_advise_refuses_a_negative_or_non_finite_mice_rate_before_storing(tmp_path: Path, value: str) -> None:
    db = tmp_path / "store.duckdb"
    reason = refused(mix(db, "--mice", value), "--mice")
    assert reason.startswith("expected a number of 0 or more, got")
    assert not db.exists()


@pytest.mark.parametrize(("option", "value"), [("--resolution", "nan"), ("--resolution", "1"), ("--max-bdp", "inf"),
                                               ("--max-bdp", "0"), ("--seeds", "0"), ("--seeds", "1.5"),
                                               ("--workers", "0"), ("--flows", "-3")])
def test_advise_refuses_every_number_out_of_its_range(tmp_path: Path, option: str, value: str) -> None:
    db = tmp_path / "store.duckdb"
    assert refused(mix(db, option, value), option).startswith("expected ")
    assert not db.exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-2", "1e9"])
def test_serve_refuses_an_interval_it_cannot_wait(stored_run: tuple[Path, str], value: str) -> None:
    db, _ = stored_run
    assert refused(["serve", str(db), "--interval", value, "--port", "0"], "--interval") == \
        f"expected a number from 0.1 to 3600, got {value}"


def test_number_options_word_their_ranges_alike_across_commands(stored_run: tuple[Path, str], tmp_path: Path,
                                                                small: Path) -> None:
    db, run_id = stored_run
    assert refused(["size", "--rate", "10Mbps", "--rtt", "10ms", "--flows", "0"], "--flows") == \
        "expected a whole number of 1 or more, got 0"
    assert refused(["sweep", "x.toml", "--workers", "0"], "--workers") == \
        "expected a whole number from 1 to 1024, got 0"
    assert refused(["reproduce", "ccperf", "--workers", "0"], "--workers") == \
        "expected a whole number from 1 to 1024, got 0"
    assert refused(["run", str(small), "--seed", "-1", "--db", str(tmp_path / "x.duckdb")], "--seed") == \
        "expected a whole number from 0 to 18446744073709551615, got -1"
    assert refused(["plot", "timeseries", run_id, "--db", str(db), "--dpi", "5"], "--dpi") == \
        "expected a whole number from 10 to 1200, got 5"
    assert not (tmp_path / "x.duckdb").exists()


# --- lists: no empty entry ------------------------------------------------------------------------

def test_empty_list_options_are_refused(stored_run: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = stored_run
    assert refused(mix(tmp_path / "a.duckdb", "--cca", ","), "--cca") == 'empty controller in ","'
    assert refused(["size", "--rate", "10Mbps", "--rtt", "10ms,,20ms"], "--rtt") == 'empty RTT in "10ms,,20ms"'
    assert refused(["plot", "timeseries", run_id, "--db", str(db), "--flows", ","], "--flows") == \
        'empty name in ","'
    assert refused(["results", "study", "x", "--metrics", "", "--db", str(db)], "--metrics") == \
        "expected at least one metric"
    assert refused(["plot", "timeseries", "", "--db", str(db)], "RUN").startswith("empty run id")
    assert not (tmp_path / "a.duckdb").exists()


def test_an_empty_query_is_one_line(stored_run: tuple[Path, str]) -> None:
    db, _ = stored_run
    for sql in ("", "   "):
        assert refused(["results", "query", sql, "--db", str(db)], "SQL").startswith("empty query")


# --- figures the renderer cannot draw --------------------------------------------------------------

@pytest.mark.parametrize(("size", "dpi", "reason"), [
    ("nanx3", None, "width and height must be from 1 to 100 inches"),
    ("infx3", None, "width and height must be from 1 to 100 inches"),
    ("1e9x1e9", None, "width and height must be from 1 to 100 inches"),
    ("0.001x0.001", None, "width and height must be from 1 to 100 inches"),
    ("90x90", None, "at 150 dpi is 13500 pixels a side, more than a PNG of 10000 (lower --size or --dpi)"),
    ("10x5", "1200", "at 1200 dpi is 12000 pixels a side, more than a PNG of 10000 (lower --size or --dpi)"),
])
def test_a_figure_size_the_renderer_cannot_draw_is_refused(stored_run: tuple[Path, str], tmp_path: Path, size: str,
                                                           dpi: str | None, reason: str) -> None:
    db, run_id = stored_run
    out = tmp_path / "figure.png"
    args = ["plot", "timeseries", run_id, "--db", str(db), "--size", size, "-o", str(out)]
    assert refused(args + (["--dpi", dpi] if dpi else []), "--size").endswith(reason)
    assert not out.exists()


# --- output paths: checked before the work ---------------------------------------------------------

def test_advise_checks_its_figure_path_before_simulating(tmp_path: Path) -> None:
    """Before: advise simulated and stored its probes, then failed on -o (exit 1)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    db = tmp_path / "store.duckdb"
    reason = refused(mix(db, "-o", str(blocker / "advice.png")), "--output")
    assert reason == f"cannot write into {blocker}: {blocker} is a file, not a folder"
    assert not db.exists()
    assert refused(mix(db, "-o", "/proc/no-such/advice.png"), "--output") == \
        "cannot write into /proc/no-such: No such file or directory"
    assert refused(mix(db, "-o", str(tmp_path / "advice.jpg")), "--output").startswith('unknown format ".jpg"')
    folder = tmp_path / "advice.png"
    folder.mkdir()
    assert refused(mix(db, "-o", str(folder)), "--output") == f"{folder} is a folder, not a file"
    assert not db.exists()


def test_plot_report_serve_and_reproduce_check_their_outputs_first(stored_run: tuple[Path, str],
                                                                   tmp_path: Path) -> None:
    db, run_id = stored_run
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert refused(["plot", "timeseries", run_id, "--db", str(db), "-o", str(blocker / "f.png")], "--output") == \
        f"cannot write into {blocker}: {blocker} is a file, not a folder"
    for command in (["report", str(db)], ["serve", str(db), "--port", "0"]):
        assert refused([*command, "-o", "/proc/no-such"], "--output") == \
            "cannot write into /proc/no-such: No such file or directory"
        assert refused([*command, "-o", str(blocker)], "--output") == f"{blocker} is a file, not a folder"
        assert refused([*command, "-o", str(blocker / "site")], "--output") == \
            f"cannot write into {blocker / 'site'}: {blocker} is a file, not a folder"
    repro_db = tmp_path / "repro.duckdb"
    assert refused(["reproduce", "ccperf", "--quick", "--db", str(repro_db), "--out", str(blocker)], "--out") == \
        f"{blocker} is a file, not a folder"
    assert not repro_db.exists()
    for command in (["results", "export", "--table", "runs"], ["results", "csv", run_id, "--link", "btl"],
                    ["results", "pcap", run_id, "--link", "btl"]):
        assert refused([*command, "--db", str(db), "-o", str(blocker / "out")], "--output") == \
            f"cannot write into {blocker}: {blocker} is a file, not a folder"


def test_checking_an_output_folder_leaves_nothing_behind(stored_run: tuple[Path, str], tmp_path: Path) -> None:
    """The check makes the missing folders and a file to see that it can, then removes them: a
    command refused later (here: the run does not exist) leaves no empty folders."""
    db, _ = stored_run
    out = tmp_path / "new" / "deeper" / "figure.png"
    refused(["plot", "timeseries", "feedbeef", "--db", str(db), "-o", str(out)], "RUN")
    assert list(tmp_path.iterdir()) == []


# --- input files: read with a limit ---------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "check"])
def test_a_spec_file_that_never_ends_is_refused(tmp_path: Path, command: str) -> None:
    db = tmp_path / "store.duckdb"
    args = [command, "/dev/zero"] + (["--db", str(db)] if command == "run" else [])
    assert refused(args, "/dev/zero").startswith("more than 16 MB: not a spec file")
    assert not db.exists()


def test_a_spec_fed_through_a_pipe_is_read_once(tmp_path: Path) -> None:
    """A FIFO can be read once: the spec is read once, with its limit, and runs."""
    import os
    import threading

    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    text = SMALL_DUMBBELL.replace("\n    ", "\n")

    def feed() -> None:
        with open(fifo, "w", encoding="utf-8") as handle:
            handle.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    status, _, err = run_cli(["check", str(fifo)])
    writer.join()
    assert status == 0, err


# --- flags named as the user wrote them --------------------------------------------------------------

def test_ccperf_names_its_flags_not_the_fields_they_set(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    base = ["ccperf", "--bw=80Mbps", "--qlen=10p", "--stop-time=1s", "--db", str(db)]
    assert refused([*base, "--rtts=1ns"], "--rtts").startswith("1ns is odd")
    assert refused(["ccperf", "--bw=80Mbps", "--rtts=10ms,10ms", "--qlen=1000000000p", "--stop-time=1s",
                    "--db", str(db)], "--qlen").startswith("the run could need")
    # A field changed by --set keeps its own name.
    assert refused([*base, "--rtts=10ms", "--set", "flows[0].rtt=1ns"], "flows[0].rtt").startswith("1ns is odd")
    assert not db.exists()


def test_advise_names_the_mix_flags_not_the_fields_they_set(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    assert refused(mix(db, "--rtt", "1ns"), "--rtt").startswith("1ns is odd")
    assert refused(mix(db, "--mice", "1e300"), "--mice").startswith("the run could need")
    assert refused(mix(db, "--flows", "100000000"), "--flows")
    assert not db.exists()


def test_an_option_is_named_by_its_long_name(stored_run: tuple[Path, str], tmp_path: Path) -> None:
    db, run_id = stored_run
    assert refused(["plot", "timeseries", run_id, "--db", str(db), "-o", str(tmp_path / "x.gif")],
                   "--output").startswith('unknown format ".gif"')


def test_help_of_changed_options_reads_well() -> None:
    done = bufferlab("serve", "--help")
    assert done.returncode == 0
    assert "--interval NUMBER" in done.stdout and "--port INTEGER" in done.stdout
    done = bufferlab("plot", "--help")
    assert "each side from 1 to 100" in " ".join(done.stdout.split())
