"""The batch planner: greedy and cheapest cuts within the bounds, and the run-cost fit."""

from __future__ import annotations

import random

import pytest

from thoughtvec.service.core.planner import RunCost, plan_batches

GRU = RunCost(per_run=2e-3, per_step=20e-6, per_row_step=63e-6)  # about invertible-linear's, measured
TINY_RUN = RunCost(per_run=1e-9, per_step=0.0, per_row_step=1e-4)
HUGE_RUN = RunCost(per_run=10.0, per_step=0.0, per_row_step=1e-4)


def planned_cost(lengths, batches, cost: RunCost) -> float:
    return sum(cost.seconds(len(b), max(max(1, lengths[i]) for i in b)) for b in batches)


def check_bounds(lengths, batches, max_size, max_tokens) -> None:
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))  # each input once
    for b in batches:
        assert 1 <= len(b) <= max_size
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= max_tokens
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat)  # neighbours in length, shortest first


def test_greedy_respects_size_and_padded_tokens():
    lengths = [5, 1, 9, 3, 3, 30, 2, 8]
    batches = plan_batches(lengths, max_size=3, max_tokens=20)
    check_bounds(lengths, batches, 3, 20)
    assert [len(b) for b in batches] == [3, 2, 2, 1]  # each filled until the next would break a bound


@pytest.mark.parametrize("cost", [GRU, TINY_RUN, HUGE_RUN, RunCost(0.0, 1e-3, 0.0)])
def test_cheapest_stays_in_bounds_and_never_costs_more_than_greedy(cost):
    rng = random.Random(7)
    for _ in range(200):
        lengths = [rng.randint(0, 60) for _ in range(rng.randint(1, 130))]
        max_size, max_tokens = rng.choice([(32, 8192), (8, 100), (4, 40), (1, 8192)])
        cheapest = plan_batches(lengths, max_size, max_tokens, cost)
        check_bounds(lengths, cheapest, max_size, max_tokens)
        greedy = plan_batches(lengths, max_size, max_tokens)
        assert planned_cost(lengths, cheapest, cost) <= planned_cost(lengths, greedy, cost) + 1e-12


def test_a_long_sentence_is_run_apart_when_its_padding_costs_more_than_a_run():
    lengths = [3] * 31 + [40]
    assert [len(b) for b in plan_batches(lengths, 32, 8192)] == [32]  # greedy pads 31 rows to 40
    cheapest = plan_batches(lengths, 32, 8192, GRU)
    assert [len(b) for b in cheapest] == [31, 1] and cheapest[1] == [31]
    assert planned_cost(lengths, cheapest, GRU) < 0.3 * planned_cost(lengths, [list(range(32))], GRU)


def test_the_cut_follows_the_cost_of_a_run():
    lengths = [4, 9, 4, 12, 9, 4]
    assert plan_batches(lengths, 32, 8192, HUGE_RUN) == [[0, 2, 5, 1, 4, 3]]  # a run costs too much to split
    assert plan_batches(lengths, 32, 8192, TINY_RUN) == [[0, 2, 5], [1, 4], [3]]  # no padding at all


def test_fit_recovers_the_terms_of_measured_runs():
    shapes = [(b, n) for b in (1, 8, 32) for n in (8, 32)]
    fitted = RunCost.fit([(b, n, GRU.seconds(b, n)) for b, n in shapes])
    assert fitted.per_run == pytest.approx(GRU.per_run) and fitted.per_step == pytest.approx(GRU.per_step)
    assert fitted.per_row_step == pytest.approx(GRU.per_row_step)
    # a nil per-step cost measured with noise would fit below zero: that term is dropped, the rest refitted
    true = RunCost(1e-3, 0.0, 1e-5)
    noisy = [(b, n, true.seconds(b, n) * (0.97 if n == 32 and b == 1 else 1.0)) for b, n in shapes]
    fitted = RunCost.fit(noisy)
    assert fitted.per_step == 0.0 and fitted.per_row_step == pytest.approx(1e-5, rel=0.05)
    assert fitted.per_run == pytest.approx(1e-3, rel=0.1)
    with pytest.raises(ValueError, match="at least 3 samples"):
        RunCost.fit(noisy[:2])
