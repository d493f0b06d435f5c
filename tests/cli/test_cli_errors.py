"""Bad input through the real command: exit 2, one stderr line naming the field, no traceback,
nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import bufferlab

GOOD_GRAPH = """
    duration = "1s"
    [[nodes]]
    name = "h1"
    kind = "host"
    [[nodes]]
    name = "r"
    kind = "router"
    [[nodes]]
    name = "h2"
    kind = "host"
    [[links]]
    a = "h1"
    b = "r"
    rate = "{rate}"
    delay = "{delay}"
    [[links]]
    a = "r"
    b = "h2"
    rate = "10Mbps"
    delay = "1ms"
    queue = "{queue}"
    [[flows]]
    src = "h1"
    dst = "h2"
    cca = "{cca}"
    {extra}
"""


def graph(rate: str = "100Mbps", delay: str = "1ms", queue: str = "20p", cca: str = "newreno",
          extra: str = "") -> str:
    return GOOD_GRAPH.format(rate=rate, delay=delay, queue=queue, cca=cca, extra=extra)


# The good graph plus a host h3 that no link reaches, and a flow to it (flows[1]).
UNCONNECTED = graph() + """
    [[nodes]]
    name = "h3"
    kind = "host"
    [[flows]]
    src = "h1"
    dst = "h3"
"""

DUMBBELL_QUEUE_ZERO = """
    duration = "1s"
    [topology]
    kind = "dumbbell"
    flows = 1
    bottleneck_rate = "10Mbps"
    queue = "0p"
    rtt = "20ms"
"""

DUMBBELL_QUEUE_TOO_SMALL = DUMBBELL_QUEUE_ZERO.replace('"0p"', '"1000B"')

MALFORMED = {
    "unknown key": (graph(extra='colour = "red"'), "flows[0].colour: unknown key"),
    "bad unit": (graph(delay="1 fortnight"), 'links[0].delay: unknown time unit "fortnight"'),
    "zero rate": (graph(rate="0Mbps"), 'links[0].rate: zero or negative rate "0Mbps"'),
    "negative rate": (graph(rate="-1Gbps"), 'links[0].rate: zero or negative rate "-1Gbps"'),
    "queue limit 0": (graph(queue="0p"), "links[1].queue: queue limit must be positive"),
    "dumbbell queue limit 0": (DUMBBELL_QUEUE_ZERO, "topology.queue: queue limit must be positive"),
    "dumbbell byte queue below a packet": (
        DUMBBELL_QUEUE_TOO_SMALL, "topology.queue: a 1000-byte limit cannot hold a 1500-byte packet of flows[0]"),
    "byte queue below a packet": (
        graph(queue="1KB"), "links[1].queue_forward: a 1000-byte limit cannot hold a 1500-byte packet of flows[0]"),
    "unconnected nodes": (UNCONNECTED, "flows[1]: no route from h1 to h3"),
    "unknown controller": (graph(cca="westwood"), 'flows[0].cca: unknown controller "westwood" (known: reno, newreno, cubic, highspeed, bbr, bbr3, dctcp, prague, vegas)'),
    "invalid toml": ('duration = "1s\n', "invalid TOML"),
    "red max_p above 1": (DUMBBELL_QUEUE_ZERO.replace('"0p"', '{ kind = "red", max_p = 2 }'),
                          "topology.queue.max_p: probability 2 not in (0, 1]"),
    "red thresholds reversed": (DUMBBELL_QUEUE_ZERO.replace('"0p"', '{ kind = "red", min_th = "20p", max_th = "10p" }'),
                                "topology.queue.max_th: max_th (10 packets) must exceed min_th (20 packets)"),
    "pie gain zero": (DUMBBELL_QUEUE_ZERO.replace('"0p"', '{ kind = "pie", alpha = 0 }'),
                      "topology.queue.alpha: gain 0 must be positive"),
}


def assert_one_line_error(result, expected: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_spec_exits_2_with_one_line_and_stores_nothing(case: str, write_scenario, db: Path) -> None:
    text, expected = MALFORMED[case]
    path = write_scenario(text)
    result = bufferlab("run", str(path), "--db", str(db))
    assert_one_line_error(result, expected)
    assert not db.exists()
    assert not db.parent.exists()


def test_malformed_spec_does_not_touch_an_existing_store(write_scenario, db: Path) -> None:
    good = write_scenario(graph(), "good.toml")
    assert bufferlab("run", str(good), "--db", str(db)).returncode == 0
    before = db.read_bytes()
    bad = write_scenario(graph(cca="westwood"), "bad.toml")
    assert_one_line_error(bufferlab("run", str(bad), "--db", str(db)), "flows[0].cca")
    assert db.read_bytes() == before


def test_missing_scenario_file(tmp_path: Path, db: Path) -> None:
    result = bufferlab("run", str(tmp_path / "nope.toml"), "--db", str(db))
    assert_one_line_error(result, "nope.toml: no such file")
    assert not db.exists()


def test_unknown_option_of_run(write_scenario, db: Path) -> None:
    result = bufferlab("run", str(write_scenario(graph())), "--colour", "red", "--db", str(db))
    assert_one_line_error(result, "--colour: unknown flag")
    assert not db.exists()


def test_bad_seed_option(write_scenario, db: Path) -> None:
    result = bufferlab("run", str(write_scenario(graph())), "--seed", "minus one", "--db", str(db))
    assert_one_line_error(result, "--seed: ")


def test_missing_scenario_argument() -> None:
    assert_one_line_error(bufferlab("run"), "SCENARIO: missing")


def test_unknown_command() -> None:
    assert_one_line_error(bufferlab("frobnicate"), "frobnicate: unknown command")


def test_help_and_version_exit_0() -> None:
    help_ = bufferlab("--help")
    assert help_.returncode == 0 and "run" in help_.stdout and "ccperf" in help_.stdout
    version = bufferlab("--version")
    assert version.returncode == 0 and version.stdout.startswith("bufferlab ") and "engine" in version.stdout


def test_value_the_engine_rejects_is_named_in_the_spec_s_terms(write_scenario, db: Path) -> None:
    # The engine bounds the MSS by an IP packet and calls the field tcp.mss; rwnd_bytes -> rwnd.
    path = write_scenario(graph(extra='tcp = { mss = 100000 }'))
    assert_one_line_error(bufferlab("run", str(path), "--db", str(db)), "flows[0].tcp.mss: ")
    path = write_scenario(graph(extra='tcp = { rwnd = "10B" }'))
    assert_one_line_error(bufferlab("run", str(path), "--db", str(db)), "flows[0].tcp.rwnd: ")
    assert not db.exists()


def test_an_empty_test_selection_fails(tmp_path: Path) -> None:
    # conftest turns pytest's exit 5 ("no tests ran") into a failure, so CI cannot pass on nothing.
    import subprocess
    import sys

    from conftest import REPO

    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-k", "no_test_is_called_this", str(REPO / "tests" / "scenario" / "test_units.py")],
                            capture_output=True, text=True, cwd=REPO, check=False)
    assert result.returncode == 1, result.stdout
