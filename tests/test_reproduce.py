"""`bufferlab reproduce NAME --quick`: every reproduction runs, writes non-empty figures and a
summary naming each of its seed's observations, and shows the directions theory and the seeds
agree on."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlab.experiments.base import FIGURE_FORMATS, reproduce
from bufferlab.experiments.registry import reproductions
from bufferlab.study.executors import LocalPoolExecutor

from conftest import bufferlab

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def quick_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reproduce") / "r.duckdb"


class CountedPool(LocalPoolExecutor):
    """A pool that counts the sweeps run on it."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.sweeps = 0

    def run(self, tasks):
        self.sweeps += 1
        return super().run(tasks)


EXECUTORS: dict[str, list[CountedPool]] = {}


@pytest.fixture(scope="module")
def quick_runs(quick_store: Path) -> dict[str, object]:
    """Every reproduction's quick variant, once, into one store (as `reproduce --quick` does)."""
    tmp = quick_store.parent

    def pool_for(name: str) -> CountedPool:
        EXECUTORS.setdefault(name, []).append(CountedPool(2))
        return EXECUTORS[name][-1]

    return {name: reproduce(r, quick_store, tmp / name, quick=True, executor_factory=lambda name=name: pool_for(name))
            for name, r in reproductions().items()}


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


@pytest.mark.parametrize("name", list(reproductions()))
def test_a_quick_reproduction_writes_figures_and_a_summary_of_every_observation(quick_runs, name: str) -> None:
    report = quick_runs[name]
    assert not report.interrupted and all(not s.failed for s in report.sweeps.values())
    assert report.figures and len(report.figures) % len(FIGURE_FORMATS) == 0
    for path in report.figures:
        assert path.stat().st_size > 1000, path
        if path.suffix == ".png":
            width, height = _png_size(path)
            assert width > 300 and height > 200
    summary = report.summary.read_text()
    for o in report.observations:
        assert f"| {o.key} |" in summary and o.verdict in summary
    assert f"bufferlab reproduce {name} --quick" in summary


def _holds(report, key: str) -> bool | None:
    return next(o.holds for o in report.observations if o.key == key)


def test_dhamdhere2006_persistent_flows_lose_less_and_gain_under_the_large_buffer(quick_runs) -> None:
    report = quick_runs["dhamdhere2006"]
    assert _holds(report, "4") and _holds(report, "1")


def test_quic_sizing_pause_equals_the_drain_time(quick_runs) -> None:
    report = quick_runs["quic_sizing"]
    assert _holds(report, "pause") and _holds(report, "drain") and _holds(report, "W_max")


def test_barman2004_cubic_windows_end_closer_than_hstcp(quick_runs) -> None:
    report = quick_runs["barman2004"]
    assert _holds(report, "2") and _holds(report, "3")


def test_appenzeller2004_utilisation_rises_with_buffer_and_with_n(quick_runs) -> None:
    report = quick_runs["appenzeller2004"]
    assert _holds(report, "1") and _holds(report, "2")


def test_splitbuff_judges_fig1_in_the_order_of_its_buffers_whatever_order_the_runs_ended_in(
        quick_runs, quick_store: Path) -> None:
    # Two workers finish the runs in any order; the observations read them in the sweep's order
    # (25, 100, 500 ms), so Fig. 1b's "BDP FIFO" is the 500 ms one, and Fig. 1a's trend runs from
    # the smallest buffer to the largest.
    report = quick_runs["splitbuff"]
    fig1a = next(o for o in report.observations if o.key == "Fig. 1a")
    assert [part.split(":")[0] for part in fig1a.measured.split(", ")] == ["25 ms", "100 ms", "500 ms"]
    from bufferlab.experiments.splitbuff import _fig1_table
    from bufferlab.store.reader import load

    res = load(quick_store)
    table = _fig1_table(res, report.studies)
    fig1b = next(o for o in report.observations if o.key == "Fig. 1b")
    assert fig1b.measured == f"{table['fifo 500 ms']['short_10ms']['qdelay_ms']:.0f} ms"


def test_splitbuff_stores_its_metrics_and_no_series(quick_runs, quick_store: Path) -> None:
    # Its observations and figures read flow metrics only (`[record] store_series = false`).
    import duckdb

    studies = list(quick_runs["splitbuff"].studies.values())
    con = duckdb.connect(str(quick_store), read_only=True)
    try:
        marks = ", ".join("?" for _ in studies)
        runs = con.execute(f"SELECT count(*) FROM runs WHERE study_id IN ({marks})", studies).fetchone()[0]
        metrics = con.execute(f"SELECT count(DISTINCT run_id) FROM flow_metrics WHERE run_id IN "
                              f"(SELECT run_id FROM runs WHERE study_id IN ({marks}))", studies).fetchone()[0]
        series = con.execute(f"SELECT count(*) FROM flow_timeseries WHERE run_id IN "
                             f"(SELECT run_id FROM runs WHERE study_id IN ({marks}))", studies).fetchone()[0]
    finally:
        con.close()
    assert runs == metrics > 0 and series == 0


def test_a_reproduction_runs_all_its_studies_on_one_pool_and_ends_its_workers(quick_runs) -> None:
    # ccperf has nine studies: one pool started, nine sweeps run on it, its workers ended after.
    assert len(quick_runs["ccperf"].sweeps) == 9
    assert [pool.sweeps for pool in EXECUTORS["ccperf"]] == [9]
    assert all(len(pools) == 1 and not pools[0]._processes() for pools in EXECUTORS.values())


def test_reproduce_list_says_what_each_one_is_and_how_long_it_takes() -> None:
    out = bufferlab("reproduce", "--list")
    assert out.returncode == 0
    for name in reproductions():
        assert name in out.stdout
    assert "--quick" in out.stdout


def test_an_unknown_reproduction_is_one_line_exit_2() -> None:
    out = bufferlab("reproduce", "nosuch", "--quick")
    assert out.returncode == 2 and out.stderr.startswith('error: NAME: unknown reproduction "nosuch"')
