"""Fingerprints of everything a run produces, to show that an optimisation of the pipeline changed
no output: run it with the interpreter of each checkout and compare the files.

    python benchmarks/compare_outputs.py after.json                        # this checkout
    ../main/.venv/bin/python benchmarks/compare_outputs.py before.json     # main, from this directory
    python benchmarks/compare_outputs.py --compare before.json after.json  # lists every difference

For every scenario of scenarios/*.toml, every case of the scale ladder (benchmarks/bench_scale.py)
and bench_pipeline's sampled run of 1000 flows: the SHA-256 of the engine spec JSON (`plan(...)
.spec_json`) with the run id, the resolution's names, aliases and queue descriptions; and, for
the scenarios, the small ladder cases and the sampled run (with --big also 10,000 flows at
10 Gb/s), a simulated and derived run: the SHA-256 of every stored table's rows (the engine's
tables, flows and channels with their summary columns, the metric tables), of the run summary
(its wall time aside) and of the user's spec. --specs-only skips the runs.

--stored: besides, each scenario is run by the command itself (`python -m bufferlab run ...
--json` into a new store, in a fresh process: the store's writer process where the checkout has
one) and every table of the store it wrote, as a user reads it (`store.reader.PUBLIC_TABLES`:
the tables stored keyed by a run number are read through their views, with the run id joined
back), is fingerprinted, its rows in order, without the columns that differ between two writes
of one run (`VARYING`) and without how the checkout keys its rows (`INTERNAL`). `meta` is left
out: it holds the schema version, which a change of the store's layout changes, not of results.
The command is then run a second time, answered from that store, and both printed summaries
(`--json`) are fingerprinted without what varies between runs (`SUMMARY_VARYING`): a stored
run's summary must equal the fresh one's (`summary_fresh`, `summary_stored`).

The bufferlab imported is the interpreter's (an editable install: its checkout's), the benchmark
cases this directory's, so both runs fingerprint the same inputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# The cases simulated besides the scenarios (the 10,000-flow case with --big: ~15 s each).
SIMULATED = ("dumbbell", "100x1g", "1000x1g", "large_1000")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def inputs() -> list[tuple[str, Any]]:
    """(name, scenario path or mapping) of every input fingerprinted."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_pipeline import large_case
    from bench_scale import CASES

    scenarios: list[tuple[str, Any]] = [(path.name, path) for path in sorted((ROOT / "scenarios").glob("*.toml"))]
    return scenarios + [(name, make()) for name, (_, make) in CASES.items()] + [("large_1000", large_case(1000))]


def fingerprint(source: Any, simulate_it: bool) -> dict[str, Any]:
    """The fingerprints of one input (see the module docstring)."""
    from bufferlab.analysis.derive import derive
    from bufferlab.pipeline.plan import plan
    from bufferlab.pipeline.result import rows
    from bufferlab.pipeline.simulate import simulate
    from bufferlab.spec import load_scenario

    planned = plan(load_scenario(source))
    resolved = planned.resolved
    entry: dict[str, Any] = {
        "spec_json": _sha(planned.spec_json), "run_id": planned.run_id,
        "names": _sha(json.dumps([resolved.node_names, resolved.flow_names, resolved.flow_endpoints,
                                  resolved.channel_names, resolved.flow_rtts_ns, resolved.bottleneck,
                                  resolved.generator_names, resolved.notes, resolved.random_draws])),
        "aliases": _sha(json.dumps(resolved.field_aliases, sort_keys=True)),
        "queues": _sha(json.dumps(resolved.queue_descriptions))}
    if simulate_it:
        derived = derive(planned, simulate(planned))
        entry["tables"] = {name: _sha(repr(rows(table))) for name, table in derived.stored_tables().items()}
        summary = derived.summary.to_json_dict()
        for varying in ("wall_time_s", "run_id", "engine_version"):  # run_id is compared apart, above
            summary.pop(varying)
        entry["summary"] = _sha(json.dumps(summary, sort_keys=True))
        entry["user_spec_json"] = _sha(derived.user_spec_json)
    return entry


# The stored columns that differ between two writes of the same run (when, and how long the engine took),
# and those that follow the engine's version string, which changes with every change of the engine's
# source (the run's id, in every table; compared apart, as each scenario's `run_id`).
VARYING = {"created_at", "wall_time_s", "updated_at", "run_id", "engine_version"}
# Columns of the store's own bookkeeping: `runs.run`, the run's number in its store, which keys the
# rows of its series and captures since schema version 5 (`store.tables`).
INTERNAL = {"run"}


# The printed summary's fields that differ between two runs of the same scenario (or follow the
# engine's version, or the store's temporary path), and whether it was served from the store.
SUMMARY_VARYING = {"wall_time_s", "run_id", "engine_version", "db", "from_store"}


def _printed_summary(printed: str) -> str:
    """The SHA-256 of a `bufferlab run --json` summary without its `SUMMARY_VARYING` fields."""
    summary = {key: value for key, value in json.loads(printed).items() if key not in SUMMARY_VARYING}
    return _sha(json.dumps(summary, sort_keys=True))


def stored_fingerprint(scenario: Path) -> dict[str, str]:
    """The SHA-256 of every table of a new store that `bufferlab run SCENARIO` wrote (see --stored)."""
    import duckdb

    from bufferlab.store.reader import PUBLIC_TABLES

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "stored.duckdb"
        command = [sys.executable, "-m", "bufferlab", "run", str(scenario), "--db", str(db), "--json"]
        # The first run simulates and stores; the second is answered from the store.
        fresh, stored = (subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
                         for _ in range(2))
        con = duckdb.connect(str(db), read_only=True)
        try:
            out = {"summary_fresh": _printed_summary(fresh), "summary_stored": _printed_summary(stored)}
            for table in sorted(PUBLIC_TABLES):
                columns = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                                     f"table_name = '{table}' ORDER BY ordinal_position").fetchall()]
                kept = ", ".join(c for c in columns if c not in VARYING | INTERNAL)
                out[table] = _sha(repr(con.execute(f"SELECT {kept} FROM {table} ORDER BY ALL").fetchall()))
            return out
        finally:
            con.close()


def differences(before: Mapping[str, Any], after: Mapping[str, Any], path: str = "") -> list[str]:
    """Every fingerprint that differs or is missing on one side, by its path."""
    out = []
    for key in sorted(set(before) | set(after)):
        where = f"{path}{key}"
        if key not in before or key not in after:
            out.append(f"{where}: only {'after' if key not in before else 'before'}")
        elif isinstance(before[key], Mapping) and isinstance(after[key], Mapping):
            out += differences(before[key], after[key], where + ".")
        elif before[key] != after[key]:
            out.append(f"{where}: differs")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="where to write the fingerprints (JSON)")
    parser.add_argument("--specs-only", action="store_true", help="no runs: the engine specs and resolutions only")
    parser.add_argument("--big", action="store_true", help="also simulate 10,000 flows at 10 Gb/s")
    parser.add_argument("--stored", action="store_true", help="also fingerprint the store the command writes")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="list the differences of two files")
    args = parser.parse_args(argv)
    if args.compare:
        found = differences(*(json.loads(Path(p).read_text()) for p in args.compare))
        print("\n".join(found) if found else "identical")
        return 1 if found else 0
    if not args.out:
        parser.error("give the output file, or --compare BEFORE AFTER")
    simulated = {name for name, _ in inputs() if name.endswith(".toml")} | set(SIMULATED)
    if args.big:
        simulated.add("10000x10g")
    out = {}
    for name, source in inputs():
        out[name] = fingerprint(source, not args.specs_only and name in simulated)
        if args.stored and isinstance(source, Path):
            out[name]["stored"] = stored_fingerprint(source)
        print(name, file=sys.stderr, flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
