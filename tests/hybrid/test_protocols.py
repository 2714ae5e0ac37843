"""Interaction-order simulations of BKNSS §4, §5, §6 (skhybrid.hybrid._protocols)."""

import numpy as np
import pytest

from skhybrid.hybrid._protocols import (
    OneOutOf2dParityTask,
    ParityChoosesSecretTask,
    hypothesis_testing,
    one_out_of_2d_parity,
    parity_chooses_secret,
    prf_bits,
    success_rate,
)
from skhybrid.mechanisms._noise import record_noise

SEEDS = range(8)


def _run4(order, strategy="split", c=4, d=3, m=40, n=400_000, eps=2.0):
    def run(s):
        rng = np.random.default_rng(s)
        return one_out_of_2d_parity(OneOutOf2dParityTask(c, d, m, n, rng), eps, rng,
                                    order=order, strategy=strategy)
    return run


def _run5(order, c=8, m=40, n=250_000, eps=2.0):
    def run(s):
        rng = np.random.default_rng(s)
        return parity_chooses_secret(ParityChoosesSecretTask(c, m, n, rng), eps, rng,
                                     order=order)
    return run


def test_one_out_of_2d_parity_needs_agents_first():
    # 24 seeds: with 8, a curator-first rate of ~1/6 shows 3/8 in some random streams
    seeds = range(24)
    good = success_rate(_run4("agents-first"), seeds)
    split = success_rate(_run4("curator-first", "split"), seeds)
    guess = success_rate(_run4("curator-first", "guess"), seeds)
    assert good >= 0.6
    assert split <= 0.3 and guess <= 0.3
    assert good > split + 0.4


def test_parity_chooses_secret_needs_curator_first():
    good = success_rate(_run5("curator-first"), SEEDS)
    bad = success_rate(_run5("agents-first"), SEEDS)
    assert good >= 0.85
    assert bad <= 0.75  # a coin flip: the group of r holds ~n/2^c agents
    assert good > bad + 0.2


def test_transcripts_record_the_order():
    run = _run4("agents-first", n=50_000)(0)
    assert run.order() == ["agents", "curator"]
    assert [m.round for m in run.transcript] == [1, 2, 3]
    run = _run4("curator-first", "guess", n=50_000)(0)
    assert run.order() == ["curator", "agents"]
    run = _run5("curator-first", n=20_000)(0)
    assert run.order() == ["curator", "agents"]
    run = _run5("agents-first", n=20_000)(0)
    assert run.order()[0] == "agents"


def test_secret_sharing_and_task_definitions():
    rng = np.random.default_rng(1)
    task = OneOutOf2dParityTask(5, 3, 10, 100, rng)
    assert task.s == np.bitwise_xor.reduce(task.shares)
    assert task.r(task.s).shape == (5,)
    np.testing.assert_array_equal(task.r(3), task.r(3))  # lazily defined, fixed
    t5 = ParityChoosesSecretTask(6, 10, 100, rng)
    j = t5.index(t5.r)
    assert t5.secret(j) == np.bitwise_xor.reduce(t5.share(j, np.arange(11)))
    assert np.array_equal(t5.y, (t5.x.astype(int) @ t5.r.astype(int)) % 2)
    # the PRF is roughly balanced
    bits = prf_bits(7, np.arange(4000), 0, 1)
    assert abs(bits.mean() - 0.5) < 0.05


def test_each_agent_sends_one_report():
    n = 20_000
    with record_noise() as draws:
        _run5("curator-first", n=n)(0)
    assert sum(d.count for d in draws if d.tag == "hadamard_response") == n
    with record_noise() as draws:
        _run4("agents-first", n=n)(0)
    assert sum(d.count for d in draws if d.tag == "hadamard_response") == n


def test_bad_arguments():
    rng = np.random.default_rng(0)
    task = OneOutOf2dParityTask(4, 2, 10, 100, rng)
    with pytest.raises(ValueError, match="order"):
        one_out_of_2d_parity(task, 1.0, rng, order="both")
    with pytest.raises(ValueError, match="strategy"):
        one_out_of_2d_parity(task, 1.0, rng, order="curator-first", strategy="all")
    with pytest.raises(ValueError, match="d <= 10"):
        one_out_of_2d_parity(OneOutOf2dParityTask(4, 11, 10, 100, rng), 1.0, rng,
                             order="curator-first")
    with pytest.raises(ValueError, match="need"):
        ParityChoosesSecretTask(0, 10, 10, rng)


def test_hypothesis_testing_gains_little():
    res = hypothesis_testing(0.1, 50, 200, 1.0, np.random.default_rng(0), n_trials=3000)
    # Theorem 6.2: the derived single-model protocol keeps a quarter of the advantage.
    assert res["reduction"] >= res["reduction_bound"] - 0.03
    # combining two independent tests helps, but by less than 4x the better advantage
    gamma = res["hybrid"] - 0.5
    assert gamma <= 4 * (max(res["curator"], res["local"]) - 0.5) + 0.03
    assert res["hybrid"] >= max(res["curator"], res["local"]) - 0.03
