"""BKNSS App. A's local threshold learner (LocalThresholdClassifier(method="app-a"))."""

import math

import numpy as np
import pytest

from skhybrid.accounting import PrivacyAccountant
from skhybrid.hybrid import LocalThresholdClassifier
from skhybrid.hybrid._constants import app_a_local_size
from skhybrid.hybrid._local_threshold import (
    _app_a_shape,
    app_a_error_bound,
    app_a_min_agents,
    app_a_threshold,
)
from skhybrid.mechanisms._noise import record_noise


def _thr_data(n, b, theta, seed):
    t = np.random.default_rng(seed).integers(0, 2**b, n)
    return t[:, None], (t >= theta).astype(int)


def _true_error(threshold, theta, b):
    grid = np.arange(2**b)  # t is uniform on the domain
    return np.mean((grid >= threshold) != (grid >= theta))


@pytest.mark.parametrize("b, theta", [(8, 94), (10, 700)])
def test_learns_threshold_within_alpha(b, theta):
    alpha = 0.1
    X, y = _thr_data(60_000, b, theta, seed=b)
    errs = [_true_error(LocalThresholdClassifier(threshold_bits=b, alpha=alpha, method="app-a",
                                                 random_state=s).fit(X, y).threshold_, theta, b)
            for s in range(3)]
    assert max(errs) <= alpha


def test_nonprivate_is_within_one_bin():
    X, y = _thr_data(20_000, 8, 94, seed=1)
    clf = LocalThresholdClassifier(threshold_bits=8, alpha=0.1, epsilon=np.inf, method="app-a",
                                   random_state=0).fit(X, y)
    # exact quantiles and counts: the threshold is the bin boundary just above θ (or θ)
    assert _true_error(clf.threshold_, 94, 8) <= 0.1 / 4 + 0.01
    assert clf.boundaries_[0] == 0 and clf.boundaries_[-1] == 256
    assert np.all(np.diff(clf.boundaries_) >= 0)


def test_one_report_per_agent_and_one_epsilon_charge():
    n, b, alpha = 30_000, 8, 0.2
    X, y = _thr_data(n, b, 60, seed=2)
    acc = PrivacyAccountant(epsilon=1.0)
    with record_noise() as draws:
        clf = LocalThresholdClassifier(threshold_bits=b, alpha=alpha, method="app-a",
                                       accountant=acc, random_state=0).fit(
            X, y, curator_mask=np.zeros(n, bool))  # every row a local agent
    events = clf.privacy_events_
    assert len(events) == 1 and events[0].population == "local"
    assert events[0].epsilon == 1.0 and events[0].count == 1
    assert clf.privacy_spent_["local"][0] == pytest.approx(1.0)
    # Randomizing draws: one RR flip per quantile-phase agent, one HRR sign per count agent.
    rr = sum(d.count for d in draws if d.tag == "randomized_response")
    hrr = sum(d.count for d in draws if d.tag == "hadamard_response")
    assert rr + hrr == n
    assert hrr == n - n // 2
    # quantile agents: each search uses all of its group once, in T rounds
    K, n_q, T = _app_a_shape(b, alpha)
    assert sum(1 for d in draws if d.tag == "randomized_response") == n_q * T


def test_too_few_agents_raises_before_charging():
    X, y = _thr_data(1000, 8, 60, seed=3)
    acc = PrivacyAccountant(epsilon=1.0)
    with pytest.raises(ValueError, match="method='app-a' needs at least"):
        LocalThresholdClassifier(threshold_bits=8, method="app-a", accountant=acc).fit(X, y)
    assert len(acc.events) == 0


def test_min_agents_formula():
    K, n_q, T = _app_a_shape(8, 0.1)
    assert (K, n_q, T) == (40, 39, 10)
    c2 = 1 / math.tanh(0.5) ** 2
    # sized at the largest tolerance the quantile search accepts, lambda_max = 0.999999
    per_round = math.ceil(c2 * math.log(2 * T / (0.05 / (4 * n_q))) / (2 * 0.999999**2))
    assert app_a_min_agents(8, 0.1, 1.0) == 2 * n_q * T * per_round


def test_count_term_is_the_documented_formula():
    # app_a_error_bound's docstring: t = c_eps sqrt(2 n2 ln(16K/beta)), count = 2Kt/n2.
    n, b, alpha, beta, eps = 100_000, 8, 0.1, 0.05, 1.0
    K, _, _ = _app_a_shape(b, alpha)
    n2 = n - n // 2
    t = math.sqrt(2 * n2 * math.log(16 * K / beta)) / math.tanh(eps / 2)
    got = app_a_error_bound(n, b, alpha, beta, eps)["count_term"]
    assert got == pytest.approx(2 * K * t / n2, rel=1e-12)


def test_bound_ties_to_constants():
    # At App. A's derived sample size the quantile tolerance is the paper's α/16.
    b, alpha, beta = 8, 0.1, 0.1
    n = app_a_local_size(b, alpha, beta, 1.0)
    bound = app_a_error_bound(n, b, alpha, beta, 1.0)
    assert bound["lam"] <= alpha / 16
    assert bound["bin_width"] <= alpha / 4 + alpha / 8
    assert bound["total"] < alpha
    # and the bound shrinks with n
    assert app_a_error_bound(4 * n, b, alpha, beta, 1.0)["total"] < bound["total"]


def test_error_bound_method_switch():
    clf = LocalThresholdClassifier(threshold_bits=8, alpha=0.1, method="app-a")
    assert clf.error_bound(10**9) == pytest.approx(
        app_a_error_bound(10**9, 8, 0.1, 0.05, 1.0)["total"])


def test_function_matches_estimator():
    X, y = _thr_data(25_000, 6, 20, seed=4)
    res = app_a_threshold(X[:, 0], y, 6, 0.2, 1.0, np.random.default_rng(7))
    clf = LocalThresholdClassifier(threshold_bits=6, alpha=0.2, method="app-a",
                                   random_state=np.random.default_rng(7)).fit(X, y)
    assert res["threshold"] == clf.threshold_
    assert res["counts"].shape == (2, 20)  # K = ⌈4/α⌉ bins
    assert res["n_quantile"] + res["n_count"] == 25_000


def test_bad_method():
    X, y = _thr_data(100, 4, 5, seed=5)
    with pytest.raises(ValueError, match="method"):
        LocalThresholdClassifier(threshold_bits=4, method="tree").fit(X, y)


# ------------------------------------------------ sizes agree with the search (red team 2)


def test_min_agents_fit_does_not_fail_after_the_charge():
    # b=10, alpha=0.7, eps=0.414...: at the documented minimum lambda fell in
    # (0.999999, 1), the search got lambda clipped to 0.999999 and refused after the charge.
    b, alpha, eps = 10, 0.7, 0.4141309037074334
    n = app_a_min_agents(b, alpha, eps)
    X, y = _thr_data(n, b, 300, seed=0)
    acc = PrivacyAccountant(epsilon=10.0)
    clf = LocalThresholdClassifier(threshold_bits=b, alpha=alpha, epsilon=eps, method="app-a",
                                   classes=[0, 1], accountant=acc)
    clf.fit(X, y, curator_mask=np.zeros(n, bool))
    assert 0 <= clf.threshold_ <= 2**b
    with pytest.raises(ValueError, match="needs at least"):  # one fewer: before the charge
        LocalThresholdClassifier(threshold_bits=b, alpha=alpha, epsilon=eps, method="app-a",
                                 classes=[0, 1], accountant=acc).fit(
            X[:-1], y[:-1], curator_mask=np.zeros(n - 1, bool))
    assert len(acc.events) == 1


def test_every_group_holds_what_its_search_asks_for():
    # A scan of 480 settings at and just above app_a_min_agents: the search each group
    # runs (app_a_threshold's sizing) never asks for more agents than the group has.
    from skhybrid.hybrid._local_threshold import _app_a_search

    checked = 0
    for bits in (1, 4, 10, 20, 40, 61):
        for alpha in (0.05, 0.2, 0.5, 0.7, 0.95):
            for eps in np.geomspace(0.01, 50, 16):
                K, n_q, T = _app_a_shape(bits, alpha)
                n0 = app_a_min_agents(bits, alpha, eps)
                for n in (n0, n0 + 1, n0 + 2 * n_q * T - 1):
                    smallest = (n // 2) // n_q  # np.array_split's smallest group
                    search = _app_a_search(smallest // T, bits, alpha, eps)
                    assert search.rounds == T
                    assert search.sample_size <= smallest, (bits, alpha, eps, n)
                    checked += 1
    assert checked == 6 * 5 * 16 * 3


def test_quantiles_are_exact_beyond_2_to_the_53():
    # App. A's search ran on float64 values and midpoints: 2^59 + 1 and 2^59 + 3 were the
    # same number there, so no boundary could separate them.
    b, alpha, eps = 60, 0.6, 50.0
    n = 4 * app_a_min_agents(b, alpha, eps)
    rng = np.random.default_rng(0)
    t = np.where(rng.random(n) < 0.5, 2**59 + 1, 2**59 + 3).astype(np.int64)
    y = (t >= 2**59 + 3).astype(int)
    clf = LocalThresholdClassifier(threshold_bits=b, alpha=alpha, epsilon=eps, method="app-a",
                                   classes=[0, 1], random_state=1).fit(t[:, None], y)
    assert clf.threshold_ == 2**59 + 3
    assert set(clf.boundaries_[1:-1].tolist()) <= {2**59 + 1, 2**59 + 3}
    assert clf.score(t[:, None], y) == 1.0
