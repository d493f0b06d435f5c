"""The Python side agrees with the engine's contract (spec.rs, the binding's result tables)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from bufferlab import runner
from bufferlab.pipeline.result import ENGINE_TABLES, EngineResult, engine_schemas
from bufferlab.spec import Scenario
from bufferlab.store.tables import TABLES
from conftest import SMALL_DUMBBELL


def small_engine_spec() -> dict:
    return Scenario.from_toml_text(SMALL_DUMBBELL).to_engine()


def run_spec(spec: dict) -> EngineResult:
    return EngineResult.from_engine(runner.core().run(json.dumps(spec)))


def test_python_tcp_defaults_are_the_engine_s() -> None:
    # Spelling out the engine's TCP defaults must simulate exactly what the engine's own defaults do.
    spelled = small_engine_spec()
    implicit = json.loads(json.dumps(spelled))
    for flow in implicit["flows"]:
        del flow["tcp"]
    assert run_spec(spelled).equals(run_spec(implicit))


def test_a_result_has_every_table_in_its_declared_schema() -> None:
    result = run_spec(small_engine_spec())
    for name, schema in engine_schemas().items():
        assert result.table(name).schema == schema, name
    assert result.flows["flow"].to_list() == [0, 1]
    assert result.channels["channel"].to_list() == list(range(result.channels.height))
    assert result.flows.schema["delivery_delay_byte_ns"] == pl.Decimal(38, 0)
    assert result.flows.schema["path"] == pl.List(pl.UInt32)


def test_store_tables_are_the_engine_tables_with_a_run_id() -> None:
    schemas = engine_schemas()
    for name in ENGINE_TABLES:
        stored = [c for c in TABLES[name] if c != "run_id"]
        assert stored[:len(schemas[name])] == list(schemas[name]), name
    assert TABLES["flows"]["delivery_delay_byte_ns"] == "HUGEINT"
    assert TABLES["flows"]["path"] == "UINTEGER[]"
    assert TABLES["captures"]["is_data"] == "BOOLEAN"
    assert TABLES["captures"]["flags"] == "UTINYINT"
    assert TABLES["flow_timeseries"]["time_ns"] == "UBIGINT NOT NULL"


def test_a_split_queue_has_a_row_per_sub_buffer_and_series_per_sub_buffer() -> None:
    spec = small_engine_spec()
    spec["links"][0]["queue_forward"] = len(spec["queues"])
    spec["queues"].append({"kind": "splitbuff", "limit_packets": 20, "sub_buffers": 3,
                           "update_interval": 50_000_000, "alpha": 0.5, "quantum": 1500})
    result = run_spec(spec)
    assert result.queue_classes.select("channel", "sub_buffer").rows() == [(0, 0), (0, 1), (0, 2)]
    # Conservation per sub-buffer: enqueued = sent + queued at the end.
    for c in result.queue_classes.iter_rows(named=True):
        assert c["enqueued_packets"] == c["sent_packets"] + c["queued_packets"]
    samples = result.class_timeseries.group_by("sub_buffer", maintain_order=True).len()
    assert samples["sub_buffer"].to_list() == [0, 1, 2]
    assert samples["len"].to_list() == [10, 10, 10]


def test_captured_packets_carry_their_sack_blocks_as_edge_columns() -> None:
    spec = small_engine_spec()
    spec["captures"] = [{"link": 0, "direction": "backward"}]
    capture = run_spec(spec).captures
    assert capture.height > 0 and capture["packet"].to_list() == list(range(capture.height))
    assert not capture["is_data"].any()
    for k in (1, 2, 3):
        # A block is [start, end) with start < end when used, zeros when not.
        used = capture.filter(pl.col("sack_blocks") >= k)
        assert (used[f"sack{k}_start"] < used[f"sack{k}_end"]).all()
        unused = capture.filter(pl.col("sack_blocks") < k)
        assert (unused[f"sack{k}_start"] == 0).all() and (unused[f"sack{k}_end"] == 0).all()


def test_engine_version_is_reported() -> None:
    version = runner.engine_version()
    assert version and run_spec(small_engine_spec()).engine_version == version


def test_stepped_run_refuses_to_finish_early_or_twice() -> None:
    stepped = runner.core().Run(json.dumps(small_engine_spec()))
    assert stepped.end_ns == 1_000_000_000
    assert not stepped.advance(500_000_000)
    with pytest.raises(ValueError, match="not over yet"):
        stepped.finish()
    assert stepped.advance(stepped.end_ns)
    assert EngineResult.from_engine(stepped.finish()).equals(run_spec(small_engine_spec()))
    with pytest.raises(ValueError, match="already finished"):
        stepped.finish()


def test_a_table_s_rows_and_numpy_columns_are_what_polars_reads() -> None:
    # `bufferlab run` derives without polars (`_core.Table.to_pylist`, `.column`): the same
    # values as polars' reading of the same Arrow tables, the 128-bit counters as ints.
    import numpy as np

    result = run_spec(small_engine_spec())
    for name in ("flows", "channels", "queue_classes", "captures"):
        expected = [{k: int(v) if type(v).__name__ == "Decimal" else v for k, v in row.items()}
                    for row in result.table(name).to_dicts()]
        assert result.arrow(name).to_pylist() == expected
    series = result.arrow("flow_timeseries")
    for column in ("flow", "time_ns", "cwnd_bytes", "delivery_rate_bps"):
        view = np.asarray(series.column(column))
        assert view.dtype == result.flow_timeseries[column].to_numpy().dtype
        assert np.array_equal(view, result.flow_timeseries[column].to_numpy())
        assert not view.flags.writeable  # a view of the engine's buffer, not a copy
    with pytest.raises(ValueError, match="name: a Utf8 column has no numpy view"):
        np.asarray(result.arrow("flows").column("name"))


def test_a_table_s_column_values_are_its_rows_values_nulls_and_128_bit_counters_included() -> None:
    # `_core.Table.column_values` converts one column; `to_pylist` is built from the same values.
    result = run_spec(small_engine_spec())
    flows = result.arrow("flows")
    assert flows.column_types()  # every column, whatever its type
    for name in ("flows", "channels", "queue_classes", "captures"):
        table = result.arrow(name)
        rows = table.to_pylist()
        for column, kind in table.column_types():
            values = table.column_values(column)
            assert values == [row[column] for row in rows], (name, column)
            assert values == result.table(name)[column].to_list() or kind == "Decimal128"
    types = dict(flows.column_types())
    assert types["delivery_delay_byte_ns"] == "Decimal128" and types["completed_ns"] == "UInt64"
    delays = flows.column_values("delivery_delay_byte_ns")
    assert all(type(v) is int for v in delays) and delays == [int(v) for v in result.flows["delivery_delay_byte_ns"]]
    # Greedy flows never complete: their completion time is null.
    completed = flows.column_values("completed_ns")
    assert completed == result.flows["completed_ns"].to_list()
    with pytest.raises(ValueError, match='no column "nope"'):
        flows.column_values("nope")


def test_counters_rows_read_by_column_or_index_are_the_table_s_rows() -> None:
    # derive reads the channels by column (`Rows.values`) and a row by index, never making all rows.
    from bufferlab.pipeline.result import Rows, record_values

    result = run_spec(small_engine_spec())
    channels = result.counters()["channels"]
    assert isinstance(channels, Rows)
    expected = result.arrow("channels").to_pylist()
    assert [channels[i] for i in range(len(channels))] == expected and channels[-1] == expected[-1]
    for column in ("name", "rate_bps", "shaping_rate_bps", "queue_packet_ns", "not_a_column"):
        assert record_values(channels, column) == record_values(expected, column)
    with pytest.raises(IndexError):
        channels[len(expected)]
    assert list(channels) == expected  # iterating makes the rows, once
    assert record_values(channels, "queue_packet_ns") == [row["queue_packet_ns"] for row in expected]


def test_tables_made_from_python_values_keep_their_types_and_nulls() -> None:
    Table = runner.core().Table
    made = Table.from_columns("t", [("s", "Utf8", ["a", None]), ("x", "Float64", [0.1, None]),
                                    ("n", "UInt64", [2**64 - 1, 3]), ("i", "UInt32", [1, None]),
                                    ("b", "Boolean", [True, None]), ("at", "Timestamp(us)", [1_500_000, None])])
    more = made.with_columns([("y", "Float64", [float("nan"), 2])])
    frame = pl.DataFrame(more)
    assert dict(frame.schema) == {"s": pl.String(), "x": pl.Float64(), "n": pl.UInt64(), "i": pl.UInt32(),
                                  "b": pl.Boolean(), "at": pl.Datetime("us"), "y": pl.Float64()}
    assert frame["s"].to_list() == ["a", None] and frame["x"].to_list() == [0.1, None]
    assert frame["n"].to_list() == [2**64 - 1, 3] and frame["b"].to_list() == [True, None]
    assert more.column_types()[-2:] == [("at", "Timestamp(us)"), ("y", "Float64")]
    with pytest.raises(ValueError, match="length"):
        made.with_columns([("short", "Float64", [1.0])])
    with pytest.raises(ValueError, match="no column type"):
        Table.from_columns("t", [("z", "Int8", [1])])


def test_an_engine_table_pickles_as_the_same_table_through_its_arrow_ipc_stream() -> None:
    # A sweep's workers send derived runs to the process that stores them.
    import pickle

    from bufferlab._core import Table

    result = run_spec(small_engine_spec())
    for name in ("flows", "flow_timeseries"):
        table = result.arrow(name)
        back = pickle.loads(pickle.dumps(table))
        assert isinstance(back, Table) and back.name == name and back.column_types() == table.column_types()
        assert pl.DataFrame(back).equals(result.table(name))


def test_an_engine_table_sends_its_arrow_ipc_stream_beside_a_protocol_5_pickle() -> None:
    # A Dask worker pickles a finished run with a buffer callback: the stream goes as a buffer of
    # its own, not copied into the pickle; a pickler without one (the spool's, protocol 4's,
    # copy's) gets it as bytes.
    import copy
    import pickle

    table = run_spec(small_engine_spec()).arrow("flow_timeseries")
    stream = table.to_ipc()
    buffers: list[pickle.PickleBuffer] = []
    pickled = pickle.dumps(table, protocol=5, buffer_callback=buffers.append)
    assert [bytes(b.raw()) for b in buffers] == [stream] and len(pickled) < 200
    views = [memoryview(b) for b in buffers]
    for back in (pickle.loads(pickled, buffers=views), pickle.loads(pickle.dumps(table, protocol=5)),
                 pickle.loads(pickle.dumps(table, protocol=4)), copy.deepcopy(table)):
        assert back.name == table.name and back.to_ipc() == stream
