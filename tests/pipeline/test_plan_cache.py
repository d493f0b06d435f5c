"""The plan cache (`pipeline.plan_cache`): a run of a spec planned before reads its plan back
instead of validating the spec, and only while everything the plan came from is unchanged."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlab.pipeline import plan_cache
from bufferlab.pipeline.plan import plan
from bufferlab.spec import Scenario
from bufferlab.spec.distributions import files_read

from conftest import EMPIRICAL_SIZES_SCENARIO, SCENARIOS, bufferlab, stored_tables

DUMBBELL = SCENARIOS / "dumbbell.toml"

TOPOLOGY = """
[topology]
kind = "dumbbell"
flows = {flows}
bottleneck_rate = "10Mbps"
queue = "{queue}"
rtt = "20ms"
"""

def planned_and_kept(path: Path, *assignments: str, seed: int | None = None) -> tuple[bytes, object]:
    """Plan the spec at `path` as `bufferlab run` does on a miss, keep it, return (request, plan)."""
    asked = plan_cache.request(path, path.read_bytes(), assignments, seed)
    with files_read() as files:
        scenario = Scenario.from_toml(path)
        if assignments:
            from bufferlab.spec.overrides import parse_assignment

            scenario = scenario.with_overrides(dict(parse_assignment(a) for a in assignments))
        if seed is not None:
            scenario = scenario.with_seed(seed)
        planned = plan(scenario)
    plan_cache.keep(asked, planned, plan_cache.sources_of_planning(files))
    return asked, planned


def kept_file(asked: bytes) -> Path:
    return plan_cache._file(plan_cache.directory(), asked)


@pytest.mark.parametrize("spec", ["dumbbell.toml", "tree_mice.toml", "bimodal_rtts.toml", "shaped_bottleneck.toml"])
def test_a_kept_plan_reads_back_equal_to_the_plan_validation_gives(spec: str) -> None:
    asked, planned = planned_and_kept(SCENARIOS / spec)
    assert plan_cache.load(asked, None) == planned


def test_the_request_changes_with_every_input_the_user_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = DUMBBELL.read_bytes()
    base = plan_cache.request(DUMBBELL, text, (), None)
    assert plan_cache.request(DUMBBELL, text, (), None) == base
    others = [plan_cache.request(DUMBBELL, text + b"\n# edited\n", (), None),
              plan_cache.request(DUMBBELL, text, ("topology.queue=50p",), None),
              plan_cache.request(DUMBBELL, text, (), 7),
              plan_cache.request(tmp_path / "dumbbell.toml", text, (), None)]
    monkeypatch.chdir(tmp_path)  # relative file names in --set are read from the working directory
    others.append(plan_cache.request(DUMBBELL, text, (), None))
    assert len({base, *others}) == 6


def test_a_plan_whose_table_file_changed_is_made_again(write_scenario, tmp_path: Path) -> None:
    table = tmp_path / "sizes.cdf"
    table.write_text("1000 0.5\n100000 1.0\n", encoding="utf-8")
    path = write_scenario(EMPIRICAL_SIZES_SCENARIO)
    asked, planned = planned_and_kept(path)
    kept = marshal.loads(kept_file(asked).read_bytes())
    assert str(table.resolve()) in {source for source, _, _ in kept["sources"]}
    assert plan_cache.load(asked, None) == planned
    table.write_text("1000 0.25\n100000 1.0\n", encoding="utf-8")
    assert plan_cache.load(asked, None) is None


def test_a_plan_made_by_code_since_edited_is_made_again(tmp_path: Path) -> None:
    asked, planned = planned_and_kept(DUMBBELL)
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    plan_cache.keep(asked, planned, [*plan_cache.sources_of_planning([]), (str(source), source.stat().st_mtime_ns,
                                                                           source.stat().st_size)])
    assert plan_cache.load(asked, None) == planned
    stamps = [stamp[0] for stamp in plan_cache.sources_of_planning([])]
    assert any(s.endswith(os.path.join("bufferlab", "spec", "scenario.py")) for s in stamps)
    assert any(s.endswith(os.path.join("pydantic", "main.py")) for s in stamps)
    source.write_text("x = 22\n")
    assert plan_cache.load(asked, None) is None


@pytest.mark.parametrize("content", [b"", b"not marshal at all", b"\xe3\x00\x01"])
def test_a_corrupt_plan_file_is_a_miss(content: bytes) -> None:
    asked, _ = planned_and_kept(DUMBBELL)
    kept_file(asked).write_bytes(content)
    assert plan_cache.load(asked, None) is None


def test_a_plan_in_the_file_of_another_request_is_a_miss() -> None:
    # As when two requests' names collide: the file says which request its plan answers.
    asked, _ = planned_and_kept(DUMBBELL)
    other = plan_cache.request(DUMBBELL, b"other text", (), None)
    kept_file(asked).rename(kept_file(other))
    assert plan_cache.load(other, None) is None


def test_a_plan_over_the_budget_is_not_served() -> None:
    asked, planned = planned_and_kept(DUMBBELL)
    assert plan_cache.load(asked, planned.memory_bytes) == planned
    assert plan_cache.load(asked, planned.memory_bytes - 1) is None


def test_at_most_max_plans_are_kept_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_cache, "MAX_PLANS", 3)
    planned = plan(Scenario.from_toml(DUMBBELL))
    requests = [plan_cache.request(DUMBBELL, b"%d" % i, (), None) for i in range(5)]
    for i, asked in enumerate(requests):
        plan_cache.keep(asked, planned, [])
        os.utime(kept_file(asked), ns=(i * 10**9, i * 10**9))
    plan_cache.keep(requests[4], planned, [])  # the newest again: the oldest two go
    assert sorted(plan_cache.directory().iterdir()) == sorted(kept_file(asked) for asked in requests[2:])


def test_at_most_max_cache_bytes_are_kept_the_newest(monkeypatch: pytest.MonkeyPatch) -> None:
    planned = plan(Scenario.from_toml(DUMBBELL))
    requests = [plan_cache.request(DUMBBELL, b"%d" % i, (), None) for i in range(4)]
    plan_cache.keep(requests[0], planned, [])
    monkeypatch.setattr(plan_cache, "MAX_CACHE_BYTES", int(2.5 * kept_file(requests[0]).stat().st_size))
    for i, asked in enumerate(requests):
        plan_cache.keep(asked, planned, [])
        os.utime(kept_file(asked), ns=(i * 10**9, i * 10**9))
    plan_cache.keep(requests[3], planned, [])  # two and a half plans' bytes: the newest two stay
    assert sorted(plan_cache.directory().iterdir()) == sorted(kept_file(asked) for asked in requests[2:])


def test_a_plan_over_max_plan_bytes_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    planned = plan(Scenario.from_toml(DUMBBELL))
    monkeypatch.setattr(plan_cache, "MAX_PLAN_BYTES", len(planned.spec_json))  # its tables come on top
    plan_cache.keep(plan_cache.request(DUMBBELL, b"", (), None), planned, [])
    assert not plan_cache.directory().exists() or not list(plan_cache.directory().iterdir())


def test_the_cache_is_off_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(plan_cache.ENVIRONMENT, "off")
    assert plan_cache.directory() is None
    monkeypatch.delenv(plan_cache.ENVIRONMENT)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert plan_cache.directory() == tmp_path / "bufferlab" / "plans"


def modules_after_run(*args: str) -> list[str]:
    """The heavy modules a fresh `bufferlab run ARGS` (in one interpreter) has loaded."""
    probe = ("import sys, io, contextlib\nfrom bufferlab.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    assert main({['run', *args]!r}) == 0\n"
             "print(json.dumps([m for m in ('pydantic', 'pydantic_core') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", "import json\n" + probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_second_run_of_a_spec_loads_no_pydantic_and_stores_the_same_run(tmp_path: Path) -> None:
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    args = (str(DUMBBELL), "--set", "duration=2s", "--seed", "3", "--json")
    assert modules_after_run(*args, "--db", str(first)) == ["pydantic", "pydantic_core"]
    assert modules_after_run(*args, "--db", str(second)) == []
    assert stored_tables(first) == stored_tables(second)


def test_the_command_prints_the_same_with_a_kept_plan(write_scenario, tmp_path: Path) -> None:
    # A spec whose seed does not matter: the note on --seed comes from the kept plan too.
    path = write_scenario('name = "quiet"\nduration = "1s"\n' + TOPOLOGY.format(flows=2, queue="100p"))
    runs = [bufferlab("run", str(path), "--db", str(tmp_path / f"{i}.duckdb"), "--seed", "5", "--json")
            for i in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert len(list(plan_cache.directory().iterdir())) == 1
    assert runs[0].stderr == runs[1].stderr and "every seed gives this same run" in runs[0].stderr
    summaries = [json.loads(r.stdout) for r in runs]
    for s, i in zip(summaries, range(2)):
        assert s.pop("db") == str(tmp_path / f"{i}.duckdb")
        s.pop("wall_time_s")
    assert summaries[0] == summaries[1]


def test_a_run_refused_by_the_budget_says_so_with_a_kept_plan(tmp_path: Path) -> None:
    args = ("run", str(DUMBBELL), "--set", "duration=1s", "--set", "sample_interval=1ms")
    assert bufferlab(*args, "--db", str(tmp_path / "a.duckdb"), "--json").returncode == 0
    refused = bufferlab(*args, "--db", str(tmp_path / "b.duckdb"), "--max-memory", "1MB")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "more than the budget of 1 MB" in refused.stderr
    assert not (tmp_path / "b.duckdb").exists()


def test_an_edited_spec_file_runs_as_edited(write_scenario, tmp_path: Path) -> None:
    spec = 'name = "edit"\nduration = "1s"\n' + TOPOLOGY
    path = write_scenario(spec.format(flows=1, queue="10p"))
    first = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"), "--json")
    path.write_text(spec.format(flows=1, queue="20p"))
    second = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"), "--json")
    assert first.returncode == second.returncode == 0
    assert json.loads(first.stdout)["run_id"] != json.loads(second.stdout)["run_id"]
    path.write_text("this is = not toml [")
    broken = bufferlab("run", str(path), "--db", str(tmp_path / "r.duckdb"))
    assert broken.returncode == 2 and "invalid TOML" in broken.stderr


def test_an_unwritable_cache_directory_is_no_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(plan_cache.ENVIRONMENT, str(blocker / "plans"))
    done = bufferlab("run", str(DUMBBELL), "--set", "duration=1s", "--db", str(tmp_path / "r.duckdb"), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
