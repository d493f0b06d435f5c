"""Delay distributions in the store (schema version 8): every packet's sojourn per link direction
and every datagram's one-way delay, stored as the engine's buckets (`delay_histograms`), and the
percentile metrics computed from them, read back through `bufferlab.load`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

import bufferlab
from bufferlab import runner
from bufferlab.spec import Scenario
from bufferlab.store.schema import StoreError
from conftest import bufferlab as command

pytestmark = pytest.mark.engine

# Two greedy flows and a 64 kb/s voice-like CBR flow through a 40-packet FIFO at 10 Mb/s.
VOICE = """
    name = "voice"
    seed = 1
    duration = "3s"

    [topology]
    kind = "dumbbell"
    bottleneck_rate = "10Mbps"
    queue = "40p"
    rtt = "40ms"

    [[flows]]
    [[flows]]
    [[flows]]
    name = "voice"
    traffic = { kind = "cbr", rate = "64kbps", packet = "200B" }
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("delays")
    spec = root / "voice.toml"
    spec.write_text(VOICE.replace("\n    ", "\n"), encoding="utf-8")
    db = root / "store.duckdb"
    result = command("run", str(spec), "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    return db, json.loads(result.stdout)["run_id"]


def quantile_ms(buckets: pl.DataFrame, q: float) -> float:
    """The q-percentile by the rule the docs state: the midpoint of the bucket that holds the
    ⌈q·n⌉-th smallest value."""
    rank = max(1, math.ceil(q * int(buckets["count"].sum())))
    row = buckets.filter(buckets["count"].cum_sum() >= rank).row(0, named=True)
    return (row["lower_ns"] + (row["upper_ns"] - row["lower_ns"]) / 2) / 1e6


def test_the_stored_buckets_are_the_engine_s_and_count_every_packet(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    result, _ = runner.simulate(Scenario.from_toml_text(VOICE))
    with bufferlab.load(db) as res:
        rows = res.table("delay_histograms", run_id)
        channels = res.table("channels", run_id)
    assert rows.drop("run_id").sort("subject", "id", "lower_ns").equals(
        result.delay_histograms.sort("subject", "id", "lower_ns"))
    # One value per packet sent on every channel that sent one; one per datagram received.
    counted = rows.filter(pl.col("subject") == "channel").group_by("id").agg(pl.col("count").sum())
    sent = channels.filter(pl.col("sent_packets") > 0).select(pl.col("channel").alias("id"), "sent_packets")
    assert counted.join(sent, on="id", how="full").filter(pl.col("count") != pl.col("sent_packets")).height == 0
    assert counted.height == sent.height
    assert rows.filter(pl.col("subject") == "flow")["id"].unique().to_list() == [2]  # the CBR flow only


def test_the_percentiles_are_stored_beside_the_means_and_follow_from_the_buckets(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    with bufferlab.load(db) as res:
        links = res.table("link_metrics", run_id)
        flows = res.table("flow_metrics", run_id)
        btl = links.filter(pl.col("bottleneck")).row(0, named=True)
        sojourns = res.delay_distribution(run_id)  # the bottleneck's by default
        voice = res.delay_distribution(run_id, flow="voice")
    assert 0 < btl["p50_qdisc_delay_l2"] <= btl["p95_qdisc_delay_l2"] <= btl["p99_qdisc_delay_l2"]
    for q, name in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        assert btl[f"{name}_qdisc_delay_l2"] == quantile_ms(sojourns, q)
        assert flows.filter(pl.col("name") == "voice")[f"{name}_one_way_delay_l3"][0] == quantile_ms(voice, q)
    # A FIFO of 40 packets at 10 Mb/s holds at most 48 ms: the voice packets wait at most that
    # on top of the path's 20 ms of propagation.
    assert 20 < flows.filter(pl.col("name") == "voice")["p99_one_way_delay_l3"][0] < 20 + 48 + 1
    assert sojourns["cdf"][-1] == 1.0 and voice["cdf"].is_sorted()
    # TCP flows keep no per-packet one-way delays: null, not zero.
    assert flows.filter(pl.col("name") != "voice")["p99_one_way_delay_l3"].null_count() == 2


def test_a_tcp_flow_or_an_unknown_link_has_no_distribution_to_read(stored: tuple[Path, str]) -> None:
    db, run_id = stored
    with bufferlab.load(db) as res:
        with pytest.raises(StoreError, match="is not a datagram flow"):
            res.delay_distribution(run_id, flow="flow_0")
        with pytest.raises(StoreError, match='no link direction "nope_forward"'):
            res.delay_distribution(run_id, link="nope")
