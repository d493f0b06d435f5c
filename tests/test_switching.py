"""The short switch interval while helper threads run Python (`bufferlab.switching`)."""

from __future__ import annotations

import sys
import threading

import pytest

from bufferlab import switching


def test_overlapping_helpers_keep_the_short_interval_until_the_last_ends() -> None:
    before = sys.getswitchinterval()
    switching.begin_quick_switches()  # a preload still importing ...
    assert sys.getswitchinterval() == pytest.approx(switching.QUICK_SWITCH_S)
    with switching.quick_switches():  # ... when the summary's rendering begins
        assert sys.getswitchinterval() == pytest.approx(switching.QUICK_SWITCH_S)
    switching.end_quick_switches()
    assert sys.getswitchinterval() == pytest.approx(before)


def test_a_helper_that_fails_sets_the_interval_back() -> None:
    before = sys.getswitchinterval()
    with pytest.raises(ZeroDivisionError), switching.quick_switches():
        1 / 0  # noqa: B018 - the failure is the point
    assert sys.getswitchinterval() == pytest.approx(before)


def test_helpers_in_threads_that_end_in_either_order_set_the_interval_back() -> None:
    before = sys.getswitchinterval()
    first_in, second_in, first_may_end = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with switching.quick_switches():
            first_in.set()
            first_may_end.wait(30)

    def second() -> None:
        first_in.wait(30)
        with switching.quick_switches():
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert second_in.wait(30)
    threads[1].join(30)  # the second ended first: the first still runs with the short interval
    assert sys.getswitchinterval() == pytest.approx(switching.QUICK_SWITCH_S)
    first_may_end.set()
    threads[0].join(30)
    assert sys.getswitchinterval() == pytest.approx(before)
