"""The summary metrics, on hand-made counters whose answers are known; the printed summary, which
`bufferlab run` renders while it stores the run and prints once the run is stored."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from bufferlab import runner
from bufferlab.cli import render
from bufferlab.analysis import summary as m
from bufferlab.cli import main
from bufferlab.cli.render import print_summary, render_summary
from bufferlab.store import writer as store
from bufferlab.store.schema import StoreError
from conftest import SMALL_DUMBBELL


def flow(**overrides: object) -> dict:
    base = {"name": "f", "start_ns": 1_000_000_000, "completed_ns": None, "bytes_delivered": 1_250_000,
            "segments_sent": 1000, "segments_retransmitted": 10, "rtos": 1, "rtt_samples": 4,
            "rtt_sum_ns": 100_000_000}
    base.update(overrides)
    return base


def channel(**overrides: object) -> dict:
    base = {"name": "btl_forward", "rate_bps": 100_000_000, "busy_ns": 9_000_000_000, "sent_packets": 1000,
            "sojourn_sum_ns": 2_000_000_000, "queue_packet_ns": 50 * 10_000_000_000,
            "dropped_queue_packets": 7, "dropped_loss_packets": 2, "max_queue_packets": 100}
    base.update(overrides)
    return base


def flow_summary(record: dict, end_ns: int) -> m.FlowSummary:
    """The summary of a run of the one flow `record` (its figures taken from its counters)."""
    result = {"engine_version": "x", "end_ns": end_ns, "events": 1, "flows": [record], "channels": []}
    s = m.summarise(result, endpoints=[("a", "b")], bottleneck=None, run_id="r", from_store=False, seed=1,
                    wall_time_s=0.5)
    return s.flows[0]


def test_goodput_of_a_running_flow_counts_to_the_end_of_the_run() -> None:
    # 1.25 MB = 10 Mbit delivered over 11 s - 1 s = 10 s -> 1 Mb/s.
    assert flow_summary(flow(), end_ns=11_000_000_000).goodput_mbps == pytest.approx(1.0)


def test_goodput_of_a_completed_flow_counts_to_its_completion() -> None:
    assert flow_summary(flow(completed_ns=2_000_000_000), end_ns=11_000_000_000).goodput_mbps == pytest.approx(10.0)


def test_goodput_undefined_before_the_flow_starts() -> None:
    assert flow_summary(flow(), end_ns=1_000_000_000).goodput_mbps is None


def test_loss_rate_is_retransmitted_over_sent() -> None:
    assert flow_summary(flow(), 11_000_000_000).loss_rate == pytest.approx(0.01)
    assert flow_summary(flow(segments_sent=0, segments_retransmitted=0), 11_000_000_000).loss_rate is None


def test_mean_srtt_is_the_mean_rtt_sample() -> None:
    assert flow_summary(flow(), 11_000_000_000).mean_srtt_ms == 25.0
    assert flow_summary(flow(rtt_samples=0, rtt_sum_ns=0), 11_000_000_000).mean_srtt_ms is None


def test_completion_time_from_syn_to_last_ack() -> None:
    assert flow_summary(flow(completed_ns=3_500_000_000), 11_000_000_000).completion_time_s == 2.5
    assert flow_summary(flow(), 11_000_000_000).completion_time_s is None


def test_channel_metrics() -> None:
    btl = m.summarise_channel(channel(), 10_000_000_000)
    assert btl.utilisation == pytest.approx(0.9)
    assert btl.mean_queue_packets == pytest.approx(50.0)
    assert btl.mean_sojourn_ms == pytest.approx(2.0)
    assert m.summarise_channel(channel(rate_bps=None), 10).utilisation is None
    assert m.summarise_channel(channel(sent_packets=0), 10).mean_sojourn_ms is None


def test_a_summary_s_figures_are_the_catalogue_s_for_the_same_flows_and_channel() -> None:
    # One implementation of each figure (bufferlab-core's metrics::figures): the summary shows
    # what the metric catalogue computes with its tables, bit for bit.
    from bufferlab.analysis import metrics

    flows = [flow(), flow(name="g", completed_ns=4_000_000_000, bytes_delivered=3_333_333, rtt_sum_ns=10**8 + 1,
                          rtt_samples=7, segments_retransmitted=3, segments_sent=2345)]
    channels = [channel(name="access_forward", rate_bps=10**9), channel()]
    end_ns = 11_000_000_007
    counters = {"engine_version": "x", "end_ns": end_ns, "events": 1, "flows": flows, "channels": channels}
    data = metrics.RunData(end_ns=end_ns, flows=flows, channels=channels, endpoints=[("a", "b")] * 2,
                           flow_specs=[{"kind": "tcp"}] * 2, bottleneck=1)
    s = m.summarise(counters, endpoints=[("a", "b")] * 2, bottleneck=None, run_id="r", from_store=False, seed=1,
                    wall_time_s=0.5)
    figures = data.computed["flow_figures"]
    assert [f.goodput_mbps for f in s.flows] == [g / 1e6 for g in figures["goodput_bps"]]
    assert [f.loss_rate for f in s.flows] == figures["loss_rate"]
    assert [f.mean_srtt_ms for f in s.flows] == [ns / 1e6 for ns in figures["mean_srtt_ns"]]
    links = data.computed["link_metrics"]
    assert s.bottleneck is not None and links["bottleneck"] == [False, True]
    assert s.bottleneck.utilisation == links["utilization_l1"][1]
    assert s.bottleneck.mean_queue_packets == links["mean_qdisc_length_l2"][1]
    assert s.bottleneck.mean_sojourn_ms == links["mean_qdisc_delay_l2"][1]


def test_bottleneck_is_the_slowest_busy_channel_data_direction_first() -> None:
    channels = [
        channel(name="access_forward", rate_bps=1_000_000_000),
        channel(name="btl_forward", rate_bps=10_000_000, busy_ns=900),
        channel(name="btl_backward", rate_bps=10_000_000, busy_ns=30),
        channel(name="idle_forward", rate_bps=1_000_000, sent_packets=0),
        channel(name="unlimited_forward", rate_bps=None),
    ]
    assert m.pick_bottleneck(channels) == 1
    assert m.pick_bottleneck(channels, named=2) == 2
    assert m.pick_bottleneck([channel(rate_bps=None)]) is None


def test_summary_uses_display_units() -> None:
    result = {"engine_version": "x", "end_ns": 11_000_000_000, "events": 5, "flows": [flow()],
              "channels": [channel()]}
    s = m.summarise(result, endpoints=[("a", "b")], bottleneck=None, run_id="r", from_store=False, seed=1,
                    wall_time_s=0.5)
    f = s.flows[0]
    assert (f.goodput_mbps, f.mean_srtt_ms, f.src, f.dst) == (pytest.approx(1.0), 25.0, "a", "b")
    assert s.bottleneck is not None and s.bottleneck.rate_mbps == 100.0 and s.bottleneck.drops == 7
    assert s.to_json_dict()["flows"][0]["retransmissions"] == 10


def test_reductions_that_raised_the_window_are_noted_with_their_count_and_the_basis_to_change() -> None:
    # Two flows, one of whose fast recoveries set ssthresh above the window in use (FlightSize
    # counting SACKed data); a stored run of an older schema has no count (None): none noted.
    result = {"engine_version": "x", "end_ns": 11_000_000_000, "events": 5, "channels": [channel()],
              "flows": [flow(recoveries=12, raising_reductions=5), flow(recoveries=8, raising_reductions=0)]}
    s = m.summarise(result, endpoints=[("a", "b")] * 2, bottleneck=None, run_id="r", from_store=False, seed=1,
                    wall_time_s=0.5)
    assert [(f.recoveries, f.raising_reductions) for f in s.flows] == [(12, 5), (8, 0)]
    [note] = s.notes
    assert note.startswith("5 of 20 fast recoveries (1 of 2 flows) set ssthresh above the window in use")
    assert 'tcp.ssthresh_from = "cwnd"' in note and s.to_json_dict()["notes"] == [note]
    assert f"note: {note[:40]}" in printed(s)
    for older in (None, 0):
        result["flows"] = [flow(recoveries=12, raising_reductions=older)]
        quiet = m.summarise(result, endpoints=[("a", "b")], bottleneck=None, run_id="r", from_store=True, seed=1,
                            wall_time_s=0.5)
        assert quiet.notes == [] and "note:" not in printed(quiet)


def test_a_shaped_channel_is_measured_against_its_token_rate() -> None:
    # A 1 Gb/s line shaped to 100 Mb/s, busy 1 s of 10 s at line rate: it sent 1 Gbit, all that
    # the 100 Mb/s token rate allows in 10 s.
    shaped = channel(rate_bps=1_000_000_000, shaping_rate_bps=100_000_000, busy_ns=1_000_000_000)
    btl = m.summarise_channel(shaped, end_ns=10_000_000_000)
    assert btl.rate_mbps == 100.0 and btl.utilisation == pytest.approx(1.0)
    # The shaped link, not the faster unshaped one, is the bottleneck.
    fast = channel(name="access_forward", rate_bps=500_000_000, busy_ns=2_000_000_000)
    assert m.pick_bottleneck([fast, shaped]) == 1


def printed(summary: m.RunSummary, **console_options: object) -> str:
    out = io.StringIO()
    print_summary(summary, scenario="s", db="r.duckdb", console=Console(file=out, width=132, **console_options))
    return out.getvalue()


def test_the_printed_summary_is_the_same_text_with_or_without_colours() -> None:
    # Rich highlights numbers and paths only where colours are shown (a terminal); a pipe gets
    # the same text without them (and without the cost of the highlighter).
    counters = {"end_ns": 11_000_000_000, "events": 1234, "engine_version": "0.1.0", "flows": [flow()],
                "channels": [channel()]}
    summary = m.summarise(counters, endpoints=[("src_0", "dst_0")], bottleneck=0, run_id="ab" * 32,
                          from_store=False, seed=1, wall_time_s=0.25, queues=["100p"])
    plain = printed(summary)
    colour = printed(summary, force_terminal=True, color_system="truecolor")
    assert "\x1b" not in plain and plain.startswith("s: 11 s simulated, seed 1")
    assert re.sub(r"\x1b\[[0-9;]*m", "", colour) == plain
    header = colour.splitlines()[0]
    assert "\x1b[1;36m11\x1b[0m" in header  # repr.number: bold cyan


def test_the_printed_summary_shows_names_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    # An emoji code (":fire:") in a name is printed as written.
    counters = {"end_ns": 11_000_000_000, "events": 1, "engine_version": "0.1.0",
                "flows": [flow(name="f:fire:")], "channels": [channel()]}
    summary = m.summarise(counters, endpoints=[("h:smile:", "d")], bottleneck=0, run_id="ab" * 32,
                          from_store=False, seed=1, wall_time_s=0.25)
    print_summary(summary, scenario="s:cd:", db="r:x:.duckdb")
    out = capsys.readouterr().out
    assert out.startswith("s:cd:: 11 s simulated") and "(r:x:.duckdb, run abab" in out
    assert "│ f:fire: │ h:smile: → d │" in out


def test_the_printed_summary_shows_brackets_in_names_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    # "[...]" in a flow, host or channel name is the user's text, not rich markup: "[/x]" alone
    # would make rich raise (a closing tag with nothing open).
    counters = {"end_ns": 11_000_000_000, "events": 1, "engine_version": "0.1.0",
                "flows": [flow(name="f[/x]")], "channels": [channel(name="[bold]btl_forward")]}
    summary = m.summarise(counters, endpoints=[("[red]h", "d")], bottleneck=0, run_id="ab" * 32,
                          from_store=False, seed=1, wall_time_s=0.25)
    print_summary(summary, scenario="s", db="r.duckdb")
    out = capsys.readouterr().out
    assert "│ f[/x] │ [red]h → d │" in out
    assert "│ [bold]btl_forward │" in out


def test_a_summary_rendered_now_prints_later_what_print_summary_prints(capsys: pytest.CaptureFixture[str]) -> None:
    counters = {"end_ns": 11_000_000_000, "events": 1234, "engine_version": "0.1.0", "flows": [flow()],
                "channels": [channel()]}
    summary = m.summarise(counters, endpoints=[("src_0", "dst_0")], bottleneck=0, run_id="ab" * 32,
                          from_store=False, seed=1, wall_time_s=0.25, queues=["100p"])
    rendered = render_summary(summary, scenario="s", db="r.duckdb")
    assert capsys.readouterr().out == ""  # nothing printed yet
    rendered.print()
    later = capsys.readouterr().out
    print_summary(summary, scenario="s", db="r.duckdb")
    assert later == capsys.readouterr().out and later.startswith("s: 11 s simulated, seed 1")


@pytest.fixture
def small(write_scenario) -> Path:
    return write_scenario(SMALL_DUMBBELL)


def test_a_failing_write_prints_no_summary(small: Path, db: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rendered: list[str] = []
    real_render = render.render_summary

    def render_summary(*args: Any, **kwargs: Any) -> render.RenderedSummary:
        rendered.append(kwargs["scenario"])
        return real_render(*args, **kwargs)

    def refuse(self: store.Store, *args: Any, **kwargs: Any) -> None:
        raise StoreError("--db", "refused for the test")

    monkeypatch.setattr(render, "render_summary", render_summary)
    monkeypatch.setattr(store.Store, "save", refuse)
    assert main(["run", str(small), "--db", str(db)]) == 2
    out, err = capsys.readouterr()
    # The summary is rendered once the run is stored: here never.
    assert rendered == []
    assert out == "" and err == "error: --db: refused for the test\n"


def test_the_summary_the_command_prints_is_what_print_summary_prints(small: Path, db: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    summaries: list[Any] = []
    real_run = runner.run

    def run(*args: Any, **kwargs: Any) -> Any:
        summaries.append(real_run(*args, **kwargs))
        return summaries[-1]

    monkeypatch.setattr(runner, "run", run)
    assert main(["run", str(small), "--db", str(db)]) == 0
    printed = capsys.readouterr().out
    # What the command printed is what `print_summary` prints of the same summary on a pipe.
    reference = io.StringIO()
    print_summary(summaries[0], scenario="small", db=str(db), console=Console(file=reference, width=132, emoji=False))
    assert "simulated and stored" in printed and printed == reference.getvalue()


@pytest.mark.parametrize("scenario", ["shaped_bottleneck.toml", "tree_mice.toml"])
def test_a_stored_run_s_summary_is_the_fresh_one_s(scenario: str, db: Path) -> None:
    # A fresh run's summary reads the figures derive took for the catalogue; a stored run's takes
    # them from its stored counters: the same function of the same counters (a shaper's token
    # rate and flows that never complete included), so the same numbers bit for bit.
    from bufferlab.spec import Scenario
    from conftest import SCENARIOS

    data = Scenario.from_toml(SCENARIOS / scenario).to_dict()
    data["duration"] = "2s"
    spec = Scenario.from_dict(data)
    fresh, stored = runner.run(spec, db), runner.run(spec, db)
    assert (fresh.from_store, stored.from_store) == (False, True)
    assert stored.bottleneck is not None and any(f.completion_time_s is None for f in stored.flows)
    same = {**fresh.to_json_dict(), "from_store": True, "wall_time_s": stored.wall_time_s}
    assert json.dumps(stored.to_json_dict()) == json.dumps(same)
