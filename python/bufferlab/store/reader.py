"""Reading a result store: `bufferlab.load(db)` and what `bufferlab results` prints.

    >>> import bufferlab
    >>> res = bufferlab.load("results/bufferlab.duckdb")
    >>> res.runs                                   # polars DataFrame, one row per run
    >>> res.flow_metrics.filter(pl.col("run_id") == res.run_id("3fa2"))
    >>> res.timeseries("3fa2", flows=["flow_0"]).to_pandas()
    >>> res.monitor("3fa2", link="btl")            # seed 000's middlebox table
    >>> res.write_pcap("3fa2", "x.pcap", link="btl")

Every table is a polars DataFrame (``.to_pandas()`` converts). A `Results` holds no connection:
each query opens the store read-only and closes it again (`store.connection`), so a notebook that
keeps one open never blocks a sweep that is writing, and a query that meets a writer's lock waits
for it. The queries of a `with res.one_connection():` block share one connection instead (the
commands' few queries, a report's page), which holds the lock until the block ends. A store of an older schema is migrated first (`store.migration`).

polars (and pyarrow and numpy, which DuckDB's conversion to polars brings) are imported by the
first query that returns a DataFrame, not with this module: `bufferlab results list` prints
plain rows (`Results.rows`) and loads none of them, so that it answers at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..errors import writing
from ..pipeline.engine import core
from .connection import connect
from .counters import stored_counters
from .schema import DEFAULT_DB, SCHEMA_VERSION, StoreError, check_run_id
from .tables import KEYS, NUMBERED_TABLES, TABLES, stored_table
from .writer import Store, schema_version_of

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = ["Results", "RecoveryCounts", "load", "reading", "series_stored"]

# Tables a user may read or export by name.
PUBLIC_TABLES = tuple(t for t in TABLES if t != "meta")
# The most rows a query the user wrote (`user_query`) may return: its result is held in memory
# whole, so a query of billions of rows (`SELECT * FROM range(1e12)`) is refused once this many
# have been produced instead of filling the machine's memory. Whole tables leave through
# `bufferlab results export`, which has no such bound.
MAX_QUERY_ROWS = 10_000_000


def _frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
    """The rows of `sql` as a DataFrame (DuckDB 2 converts a relation's result, not a
    cursor's)."""
    frame: pl.DataFrame = con.sql(sql, params=list(params) if params else None).pl()  # typed Any by DuckDB
    return frame


@dataclass(frozen=True)
class RecoveryCounts:
    """Fast recoveries over some runs' flows (`Results.recovery_counts`): the flows, those with a
    recovery that set ssthresh above the window in use, the recoveries, those that did, and the
    runs stored before schema version 11, whose engine did not count them (NULL)."""

    flows: int
    raising_flows: int
    recoveries: int
    raised: int
    uncounted_runs: int


class Results:
    """A read-only view of a result store. Usable as a context manager (kept for symmetry with
    `Store`: there is no connection to close)."""

    def __init__(self, path: str | Path = DEFAULT_DB) -> None:
        self.path = Path(path)
        # The connection the queries of a `one_connection` block share; None outside one.
        self._shared: duckdb.DuckDBPyConnection | None = None
        if not self.path.exists():
            raise StoreError("--db", f"no store at {self.path}")
        with self._connection() as con:
            version = schema_version_of(con, self.path)
        if version != SCHEMA_VERSION:
            # An older store: migrate it once (read-write), then read it.
            Store(self.path).close()

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._shared is not None:
            yield self._shared
            return
        con = connect(self.path, read_only=True)
        try:
            yield con
        finally:
            con.close()

    @contextmanager
    def one_connection(self) -> Iterator[Results]:
        """Inside the block, every query shares one read-only connection, opened once. Opening
        the store is not free, and a command's report of one run makes about ten queries. The
        connection holds the store's lock until
        the block ends, so a writer waits for it meanwhile: keep the block to a few queries, as
        the commands do; everywhere else each query opens and closes its own."""
        if self._shared is not None:
            yield self
            return
        with self._connection() as con:
            self._shared = con
            try:
                yield self
            finally:
                self._shared = None

    def _fetch(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self.rows(sql, params)[1]

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Any SQL over the store's tables, as its column names and rows of Python values: no
        DataFrame, so no polars to import (for a short listing)."""
        with self._connection() as con:
            cursor = con.execute(sql, list(params or []))
            return [column[0] for column in cursor.description or []], cursor.fetchall()

    def close(self) -> None:
        """Nothing to release (every query closes its own connection)."""

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- tables ---------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Any SQL over the store's tables, as a DataFrame."""
        with self._connection() as con:
            return _frame(con, sql, params)

    def user_query(self, sql: str) -> pl.DataFrame:
        """SQL the user wrote (`bufferlab results query`), as a DataFrame, on a connection of its
        own that reads the store and nothing else (`connection.connect`, `sandboxed`): a COPY to
        a file, a read of one, an ATTACH or an extension's install fail as DuckDB errors."""
        con = connect(self.path, read_only=True, sandboxed=True)
        try:
            relation = con.sql(sql)
            if relation is None:  # a statement that returns no rows (SET, PRAGMA ...)
                raise StoreError("SQL", "the statement returns no rows (a query is a SELECT, e.g. "
                                        '"SELECT name, seed FROM runs")')
            # One row past the bound tells a result that reaches it from one that exceeds it;
            # DuckDB stops producing rows there.
            frame: pl.DataFrame = relation.limit(MAX_QUERY_ROWS + 1).pl()
            if frame.height > MAX_QUERY_ROWS:
                raise StoreError("SQL", f"the result has more than {MAX_QUERY_ROWS:,} rows, more than a query's "
                                        "result may hold (aggregate, add a LIMIT, or use `bufferlab results export`)")
            return frame
        finally:
            con.close()

    def table(self, name: str, run: str | None = None) -> pl.DataFrame:
        """A whole table, or its rows of one run (a run id or a unique prefix of one)."""
        if name not in PUBLIC_TABLES:
            raise StoreError("--table", f'unknown table "{name}" (known: {", ".join(PUBLIC_TABLES)})')
        if run is None or name == "studies":
            return self.query(f"SELECT * FROM {name}")
        if name in NUMBERED_TABLES:
            return self._rows_of_run(name, self.run_id(run))
        return self.query(*self._run_rows_sql(name, run))

    def table_columns(self, name: str, run: str) -> dict[str, list[Any]]:
        """One run's rows of a per-run table that is not a time series (the metric tables, runs,
        flows, channels...), column by column as Python values: `table(name, run)` without a
        DataFrame, so without polars (for the command's metric tables)."""
        if name not in PUBLIC_TABLES or name in NUMBERED_TABLES or name == "studies":
            raise StoreError("--table", f'"{name}" has no columns of one run to read this way')
        columns, rows = self.rows(*self._run_rows_sql(name, run))
        return {column: [row[i] for row in rows] for i, column in enumerate(columns)}

    def _run_rows_sql(self, name: str, run: str) -> tuple[str, list[Any]]:
        """The query of one run's rows of table `name`, in key order."""
        order = KEYS.get(name)
        suffix = f" ORDER BY {', '.join(order)}" if order else ""
        return f"SELECT * FROM {name} WHERE run_id = ?{suffix}", [self.run_id(run)]

    def _rows_of_run(self, table: str, run_id: str, *, entity: str | None = None) -> pl.DataFrame:
        """The rows of one run of a numbered table (`tables.NUMBERED_TABLES`) in key order, as its
        view reads them (with `entity`, the flows or channels table: each row's flow or channel
        name in front). They are read from the data table by the run's number, and the run id is
        put back in polars, one value for every row: DuckDB handing over the same 64 characters
        for each of them would be half the query."""
        import polars as pl

        keys = KEYS[table]
        named, joined = "", ""
        if entity is not None:
            named = "e.name, "
            joined = f" JOIN {entity} e ON e.run_id = $1 AND e.{keys[0]} = t.{keys[0]}"
        frame = self.query(f"SELECT {named}t.* EXCLUDE (run) FROM {stored_table(table)} t{joined} "
                           f"WHERE t.run = (SELECT run FROM runs WHERE run_id = $1) "
                           f"ORDER BY {', '.join(f't.{key}' for key in keys)}", [run_id])
        columns = frame.columns
        at = 1 if entity is not None else 0
        return frame.with_columns(pl.lit(run_id, dtype=pl.String).alias("run_id")).select(
            *columns[:at], "run_id", *columns[at:])

    @property
    def runs(self) -> pl.DataFrame:
        return self.query("SELECT * FROM runs ORDER BY created_at, run_id")

    @property
    def studies(self) -> pl.DataFrame:
        return self.table("studies")

    @property
    def flows(self) -> pl.DataFrame:
        return self.query("SELECT * FROM flows ORDER BY run_id, flow")

    @property
    def channels(self) -> pl.DataFrame:
        return self.query("SELECT * FROM channels ORDER BY run_id, channel")

    @property
    def flow_metrics(self) -> pl.DataFrame:
        return self.query("SELECT * FROM flow_metrics ORDER BY run_id, flow")

    @property
    def link_metrics(self) -> pl.DataFrame:
        return self.query("SELECT * FROM link_metrics ORDER BY run_id, channel")

    @property
    def network_metrics(self) -> pl.DataFrame:
        return self.query("SELECT * FROM network_metrics ORDER BY run_id")

    def timeseries(self, run: str, *, kind: str = "flow", names: Sequence[str] | None = None,
                   flows: Sequence[str] | None = None) -> pl.DataFrame:
        """The time series of one run: ``kind="flow"`` (one row per flow and sample, with the flow's
        name) or ``kind="channel"``; `names` (or `flows`) keeps only those flows or channels."""
        import polars as pl

        if kind not in ("flow", "channel"):
            raise StoreError("--kind", f'unknown kind "{kind}" (known: flow, channel)')
        frame = self._rows_of_run(f"{kind}_timeseries", self.run_id(run), entity="flows" if kind == "flow" else "channels")
        wanted = names if names is not None else flows
        if wanted is not None:
            frame = frame.filter(pl.col("name").is_in(list(wanted)))
        return frame

    @property
    def delay_histograms(self) -> pl.DataFrame:
        return self.query("SELECT * FROM delay_histograms ORDER BY run_id, subject, id, lower_ns")

    def delay_distribution(self, run: str, *, link: str | None = None, direction: str = "forward",
                           flow: str | None = None) -> pl.DataFrame:
        """A stored delay distribution of one run, its non-empty buckets in increasing order
        (lower_ns, upper_ns: the values a bucket holds, inclusive; count; cdf: the fraction of
        values at or below upper_ns): the sojourn times of the packets `<link>_<direction>` sent,
        or with `flow` the one-way delays (send to arrival) of a datagram flow's packets. Without
        either, the bottleneck's sojourn times."""
        import polars as pl

        run_id = self.run_id(run)
        if flow is not None:
            found = self._fetch("SELECT flow FROM flows WHERE run_id = ? AND name = ?", [run_id, flow])
            if not found:
                raise StoreError("--flows", f'run {run_id[:12]} has no flow "{flow}" (see bufferlab results show)')
            subject, entity, what = "flow", int(found[0][0]), f'flow "{flow}"'
        else:
            channel = self.bottleneck(run_id) if link is None else f"{link}_{direction}"
            if channel is None:
                raise StoreError("--links", f"run {run_id[:12]} has no bottleneck; name a link")
            found = self._fetch("SELECT channel FROM channels WHERE run_id = ? AND name = ?", [run_id, channel])
            if not found:
                raise StoreError("--links", f'run {run_id[:12]} has no link direction "{channel}"')
            subject, entity, what = "channel", int(found[0][0]), f'"{channel}"'
        frame = self.query("SELECT lower_ns, upper_ns, count FROM delay_histograms_data WHERE "
                           "run = (SELECT run FROM runs WHERE run_id = ?) AND subject = ? AND id = ? ORDER BY lower_ns",
                           [run_id, subject, entity])
        if frame.height == 0:
            reason = ("is not a datagram flow (cbr, on_off; only those keep their packets' one-way delays) or "
                      "received nothing") if subject == "flow" else "sent no packet"
            raise StoreError("--flows" if subject == "flow" else "--links",
                             f"{what} of run {run_id[:12]} {reason}; no delay distribution is stored (runs stored "
                             "before schema version 8 have none)")
        total = int(frame["count"].sum())
        return frame.with_columns((pl.col("count").cum_sum() / total).alias("cdf"))

    # --- studies --------------------------------------------------------------------------

    def _study_exists(self, name: str) -> None:
        if not self._fetch("SELECT count(*) FROM studies WHERE study_id = ?", [name])[0][0]:
            known = [r[0] for r in self._fetch("SELECT study_id FROM studies ORDER BY study_id")]
            listed = ", ".join(known[:12]) + (" ..." if len(known) > 12 else "") if known else "none"
            raise StoreError("STUDY", f'no study "{name}" in {self.path} (studies: {listed})')

    def study_axes(self, name: str) -> list[str]:
        """The swept keys of a sweep's study, in the sweep's order ([] for a plain group of runs)."""
        self._study_exists(name)
        rows = self._fetch("SELECT axes_json FROM studies WHERE study_id = ?", [name])
        return list(json.loads(rows[0][0])) if rows and rows[0][0] else []

    def study_runs(self, name: str) -> pl.DataFrame:
        """One row per (point, seed) of a sweep's study: run_id, point, seed, status, error and one
        column per axis (the value as written). A study of plain runs (`run --study`) lists its
        runs as points of their own."""
        import polars as pl

        axes = self.study_axes(name)
        frame = self.query("SELECT run_id, point, seed, status, error, point_json FROM study_points "
                           "WHERE study_id = ? ORDER BY point, seed", [name])
        if frame.height == 0 and not axes:
            frame = self.query("SELECT run_id, CAST(row_number() OVER (ORDER BY created_at, run_id) - 1 AS UINTEGER) "
                               "AS point, seed, status, CAST(NULL AS VARCHAR) AS error, '{}' AS point_json FROM runs "
                               "WHERE study_id = ? ORDER BY created_at, run_id", [name])
        values = [json.loads(text) for text in frame["point_json"].to_list()]
        columns = [pl.Series(axis, [_axis_value(v.get(axis)) for v in values], strict=False) for axis in axes]
        return frame.drop("point_json").with_columns(columns) if columns else frame.drop("point_json")

    def study(self, name: str) -> pl.DataFrame:
        """One row per sweep point: its axis values, "seeds" (complete runs), and for every metric
        of the catalogue (flow metrics averaged over the run's flows, link metrics of the run's
        bottleneck link, network metrics) its mean over seeds with a 95 % confidence interval
        (m, m_ci_low, m_ci_high; see `analysis.aggregate`)."""
        import polars as pl

        from ..analysis import metrics as catalogue
        from ..analysis.aggregate import aggregate_over_seeds

        runs = self.study_runs(name).filter(pl.col("status") == "complete")
        axes = self.study_axes(name)
        flow_names = list(catalogue.FLOW_METRICS)
        link_names = list(catalogue.LINK_METRICS)
        net_names = list(catalogue.NETWORK_METRICS)
        ids = runs["run_id"].unique().to_list()
        with self._connection() as con:
            con.register("_ids", pl.DataFrame({"run_id": ids}, schema={"run_id": pl.Utf8}).to_arrow())
            flows = _frame(con, "SELECT run_id, " + ", ".join(f"avg({m}) AS {m}" for m in flow_names) +
                                " FROM flow_metrics WHERE run_id IN (SELECT run_id FROM _ids) GROUP BY run_id")
            links = _frame(con, "SELECT run_id, " + ", ".join(link_names) + " FROM link_metrics "
                                "WHERE bottleneck AND run_id IN (SELECT run_id FROM _ids)")
            net = _frame(con, "SELECT run_id, " + ", ".join(net_names) + " FROM network_metrics "
                              "WHERE run_id IN (SELECT run_id FROM _ids)")
        # Points in the study's order, and each point's seeds summed in one order: polars joins
        # keep no row order unless told, and a mean's last bits depend on the order it adds in.
        per_run = runs.join(flows, on="run_id", how="left", maintain_order="left") \
            .join(links, on="run_id", how="left", maintain_order="left") \
            .join(net, on="run_id", how="left", maintain_order="left")
        by = ["point", *axes]
        return aggregate_over_seeds(per_run, by, [*flow_names, *link_names, *net_names])

    # --- runs -----------------------------------------------------------------------------

    def run_id(self, prefix: str) -> str:
        """The full id of the run whose id starts with `prefix`; an error if none or several do."""
        rows = self._fetch("SELECT run_id FROM runs WHERE starts_with(run_id, ?) ORDER BY run_id", [prefix])
        if not rows:
            raise StoreError("RUN", f'no run "{prefix}" in {self.path}')
        if len(rows) > 1:
            raise StoreError("RUN", f'"{prefix}" is the start of {len(rows)} run ids; give more of it')
        return str(rows[0][0])

    def has_run(self, run_id: str) -> bool:
        """Whether the store holds the complete run `run_id` (a full id)."""
        return bool(self._fetch("SELECT count(*) FROM runs WHERE run_id = ? AND status = 'complete'", [run_id])[0][0])

    def counters(self, run_id: str) -> dict[str, Any] | None:
        """The stored counters of a run in the shape of the engine's RunResult (without series);
        None if the store does not have it (`counters.stored_counters`)."""
        return stored_counters(self.path, run_id)

    def spec(self, run: str) -> dict[str, Any]:
        """The engine spec a run ran (nodes, links, flows by index; a dumbbell's flows written as
        columns expanded into those they stand for: `spec.resolved.json_members`)."""
        rows = self._fetch("SELECT spec_json FROM runs WHERE run_id = ?", [self.run_id(run)])
        spec: dict[str, Any] = json.loads(rows[0][0])
        if "many_flows" in spec:
            spec = json.loads(core().expanded_spec(rows[0][0]))
        return spec

    def user_spec(self, run: str) -> dict[str, Any]:
        """The spec of a run as its user wrote it (units as text), e.g. ``{"topology": {"queue": "18p"}}``."""
        text = self.query("SELECT user_spec_json FROM runs WHERE run_id = ?", [self.run_id(run)])["user_spec_json"][0]
        spec: dict[str, Any] = json.loads(text) if text else {}
        return spec

    def series_stored(self, run: str) -> bool:
        """Whether the store holds the run's time series: False for a run made with `[record]
        store_series = false`, which kept its metrics only (its series tables have no rows)."""
        return series_stored(self.user_spec(run))

    def recovery_counts(self, run_ids: Sequence[str]) -> RecoveryCounts:
        """The fast recoveries of the runs `run_ids` (full ids), and those that raised a window
        (`flows.raising_reductions`)."""
        listed = ", ".join(f"'{check_run_id(r)}'" for r in run_ids) or "NULL"
        _, [row] = self.rows(
            "SELECT count(*), count(*) FILTER (WHERE raising_reductions > 0), coalesce(sum(recoveries), 0), "
            "coalesce(sum(raising_reductions), 0), count(DISTINCT run_id) FILTER (WHERE raising_reductions IS NULL) "
            f"FROM flows WHERE run_id IN ({listed})")
        return RecoveryCounts(*(int(v) for v in row))

    def bottleneck(self, run: str) -> str | None:
        """The channel name of a run's bottleneck (the link metrics' `bottleneck` row), or None."""
        names = self.query("SELECT name FROM link_metrics WHERE run_id = ? AND bottleneck",
                           [self.run_id(run)])["name"].to_list()
        return str(names[0]) if names else None

    def capture(self, run: str, *, link: str, direction: str = "forward") -> pl.DataFrame:
        """The packets captured on `<link>_<direction>` of a run, one row each in capture order: the
        engine's captures table (channel, packet, time_ns, flow, is_data, flags, seq, ack, ...)."""
        run_id = self.run_id(run)
        channel = f"{link}_{direction}"
        found = self._fetch("SELECT channel FROM channels WHERE run_id = ? AND name = ?", [run_id, channel])
        row = found[0] if found else None
        if row is None:
            raise StoreError("--link", f'run {run_id[:12]} has no link direction "{channel}"')
        captured = self._fetch(
            "SELECT DISTINCT c.name FROM captures p JOIN channels c ON c.run_id = p.run_id AND c.channel = p.channel "
            "WHERE p.run_id = ? ORDER BY 1", [run_id])
        if channel not in {name for (name,) in captured}:
            known = ", ".join(name for (name,) in captured) or "none"
            raise StoreError("--link", f'run {run_id[:12]} has no capture of "{channel}" (captured: {known}); '
                                       'add [[captures]] to the spec')
        return self.query("SELECT * EXCLUDE (run_id, capture) FROM captures WHERE run_id = ? AND channel = ? "
                          "ORDER BY packet", [run_id, row[0]])

    def flow_names(self, run: str) -> list[str]:
        """Names of every flow of a run, listed and generated, by index."""
        return [str(name) for (name,) in self._fetch(
            "SELECT name FROM flows WHERE run_id = ? ORDER BY flow", [self.run_id(run)])]

    def packet_flows(self, run: str) -> list[dict[str, Any]]:
        """Every flow of a run as packet export needs it (`pcap.flow_descriptions`)."""
        run_id = self.run_id(run)
        names = ["src_node", "dst_node", "generator"]
        rows = self._fetch(f"SELECT {', '.join(names)} FROM flows WHERE run_id = ? ORDER BY flow", [run_id])
        records = [dict(zip(names, row)) for row in rows]
        from ..analysis import pcap  # numpy: imported by the commands that export packets only

        return pcap.flow_descriptions(self.spec(run_id), records)

    def monitor(self, run: str, *, link: str, direction: str = "forward",
                split_bytes: int | None = None) -> pl.DataFrame:
        """Seed 000's middlebox table for the captured link direction (see `analysis.monitor`);
        flows of fewer than `split_bytes` (default `monitor.DEFAULT_SPLIT_BYTES`, 100 kB) are
        small."""
        from ..analysis import monitor

        if split_bytes is None:
            split_bytes = monitor.DEFAULT_SPLIT_BYTES
        return monitor.middlebox_flows(self.capture(run, link=link, direction=direction), self.flow_names(run),
                                       split_bytes=split_bytes)

    def write_pcap(self, run: str, path: str | Path, *, link: str, direction: str = "forward",
                   full_payload: bool = False) -> int:
        """Write the captured link direction as a pcap file; returns the packets written."""
        capture = self.capture(run, link=link, direction=direction)
        flows = self.packet_flows(run)
        from ..analysis import pcap

        with writing(path):
            return pcap.write_pcap(path, capture, flows, full_payload=full_payload)

    def write_capture_csv(self, run: str, path: str | Path, *, link: str, direction: str = "forward",
                          header: bool = True) -> int:
        """Write the captured link direction as CSV with seed 000's tshark fields."""
        capture = self.capture(run, link=link, direction=direction)
        flows = self.packet_flows(run)
        from ..analysis import monitor

        with writing(path):
            return monitor.capture_csv(path, capture, flows, header=header)


def _axis_value(value: Any) -> Any:
    """An axis value as a column cell: tables and lists as their JSON text (one type per column)."""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def load(db: str | Path = DEFAULT_DB) -> Results:
    """Open a result store for reading: tables as polars DataFrames (see `Results`)."""
    return Results(db)


@contextmanager
def reading(db: Results | str | Path) -> Iterator[Results]:
    """A `Results` as given (its holder decides how it connects), or the store at path `db`,
    opened for the block with its queries on one connection (`Results.one_connection`): how a
    command or a figure reads a few things of one store."""
    if isinstance(db, Results):
        yield db
        return
    with load(db) as res, res.one_connection():
        yield res


def flat_for_csv(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV holds no nested values: list columns (a flow's path) become their JSON text, "[0,2]",
    and struct columns theirs."""
    import polars as pl

    flat = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.List | pl.Array):
            items = pl.col(name).cast(pl.List(pl.String)).list.join(",")
            flat.append(pl.concat_str([pl.lit("["), items, pl.lit("]")]).alias(name))
        elif isinstance(dtype, pl.Struct):
            flat.append(pl.col(name).struct.json_encode().alias(name))
    return frame.with_columns(flat) if flat else frame


def export_frame(frame: pl.DataFrame, path: str | Path, fmt: str) -> None:
    """Write a DataFrame as Parquet or CSV (nested columns as JSON text, see `flat_for_csv`)."""
    if fmt not in ("parquet", "csv"):
        raise StoreError("--format", f'unknown format "{fmt}" (known: parquet, csv)')
    with writing(path):
        if fmt == "parquet":
            frame.write_parquet(path)
        else:
            flat_for_csv(frame).write_csv(path)


def series_stored(user_spec: Mapping[str, Any]) -> bool:
    """Whether a run of this spec (as its user wrote it) stores its time series: not with
    `[record] store_series = false`."""
    record = user_spec.get("record")
    return not (isinstance(record, Mapping) and record.get("store_series") is False)
