"""The interrupts module: a write held in `deferred()` notes SIGINT/SIGTERM and raises them once it
has finished; `reacting(stop)` calls `stop` as the signal arrives. At no moment of a write is a
signal met by its default action: the command's handler is back, unchanged, after every block
(a SIGTERM that found SIG_DFL would end a sweep with exit -15 and no message)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from bufferlab.errors import InterruptedAfterWrite, Terminated, TerminatedAfterWrite
from bufferlab.interrupts import deferred, reacting


def _command_handler(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


@pytest.fixture
def command_handlers() -> Iterator[None]:
    """SIGINT and SIGTERM handled as the bufferlab command handles them, restored afterwards."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _command_handler)
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


# Raised as the "after the write" kinds, which the command reports as "stored" (still a Terminated
# and a KeyboardInterrupt for everything that unwinds on them).
@pytest.mark.parametrize(("sig", "raised"), [(signal.SIGTERM, TerminatedAfterWrite),
                                             (signal.SIGINT, InterruptedAfterWrite)])
def test_a_signal_during_a_deferred_write_is_raised_after_the_write_finishes(command_handlers: None, sig: int,
                                                                            raised: type[BaseException]) -> None:
    steps: list[str] = []
    with pytest.raises(raised) as caught:
        with deferred():
            steps.append("began")
            signal.raise_signal(sig)
            steps.append("finished")  # the signal did not cut the write short
    assert steps == ["began", "finished"]
    assert isinstance(caught.value, Terminated) == (sig == signal.SIGTERM)
    assert isinstance(caught.value, KeyboardInterrupt)


def test_sigterm_is_never_left_to_its_default_action_around_deferred_writes(command_handlers: None) -> None:
    seen = [signal.getsignal(signal.SIGTERM)]
    for _ in range(3):  # one write after another, as a sweep stores its runs
        with deferred():
            seen.append(signal.getsignal(signal.SIGTERM))
            with deferred():  # a nested write keeps the outer one's note-taking
                seen.append(signal.getsignal(signal.SIGTERM))
            seen.append(signal.getsignal(signal.SIGTERM))
        seen.append(signal.getsignal(signal.SIGTERM))
    assert signal.SIG_DFL not in seen and None not in seen
    assert signal.getsignal(signal.SIGTERM) is _command_handler  # exactly the command's handler is back
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_write_that_raises_gives_the_command_its_handlers_back(command_handlers: None) -> None:
    with pytest.raises(ValueError):
        with deferred():
            raise ValueError("the store refused the write")
    assert signal.getsignal(signal.SIGTERM) is _command_handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_reacting_stops_at_once_while_the_write_goes_on(command_handlers: None) -> None:
    events: list[str] = []
    with pytest.raises(Terminated):
        with reacting(lambda: events.append("workers stopped")):
            with deferred():
                signal.raise_signal(signal.SIGTERM)
                events.append("write finished")
    assert events == ["workers stopped", "write finished"]


def test_outside_reacting_a_noted_signal_stops_nothing(command_handlers: None) -> None:
    events: list[str] = []
    with reacting(lambda: events.append("stopped")):
        pass
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            signal.raise_signal(signal.SIGINT)
    assert events == []


# The command, its store's write slowed down: it says when the write begins, then takes a second.
_SLOW_WRITE_COMMAND = """
import os, sys, time
from bufferlab import cli
from bufferlab.store import writer
real_save = writer.Store.save
def save(self, *args, **kwargs):
    open(os.environ["WRITE_BEGUN"], "w").close()
    time.sleep(1.0)
    return real_save(self, *args, **kwargs)
writer.Store.save = save
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                     (signal.SIGTERM, 143, "interrupted by SIGTERM")])
def test_a_signal_during_the_command_s_write_lets_the_run_commit_then_stops_it(tmp_path: Path, sig: int,
                                                                              status: int, said: str) -> None:
    # `bufferlab run` writes in its own process, in one transaction: a signal that comes during
    # the write is held back until the run is stored whole (a killed run loses no finished result).
    from conftest import REPO, SCENARIOS, stored_tables

    db, begun = tmp_path / "r.duckdb", tmp_path / "write-begun"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITE_COMMAND, "run", str(SCENARIOS / "dumbbell.toml"),
                             "--set", "duration=1s", "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, env={**os.environ, "WRITE_BEGUN": str(begun)})
    deadline = time.monotonic() + 60
    while not begun.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (status, f"error: {said}: the run being stored when it came was stored whole "
                                              "first; nothing after it was done\n")
    assert out == ""  # stopped before its summary
    assert len(stored_tables(db)["runs"][1]) == 1
