"""SelectThenEstimate (BKNSS App. B): selection at the curator, estimate by local agents."""

import math

import numpy as np
import pytest

from skhybrid.hybrid._select_estimate import SelectThenEstimate
from skhybrid.mechanisms._noise import record_noise


def _data(n=60_000, d=40, best=7, seed=0):
    rng = np.random.default_rng(seed)
    mu = np.zeros(d)
    mu[best] = 0.6
    return np.where(rng.random((n, d)) < (1 + mu) / 2, 1, -1)


def test_selects_and_estimates():
    X = _data()
    mask = np.arange(X.shape[0]) < 2000
    est = SelectThenEstimate(epsilon=1.0, random_state=0).fit(X, curator_mask=mask)
    assert est.selected_index_ == 7
    c_eps = 1 / math.tanh(0.5)
    bound = 2 * c_eps * math.sqrt(math.log(2 / 0.01) / (2 * 58_000))  # Hoeffding, β = 0.01
    assert abs(est.estimate_ - X[~mask, 7].mean()) <= bound
    assert est.privacy_spent_ == {"central": (1.0, 0.0), "local": (1.0, 0.0)}
    exact = SelectThenEstimate(epsilon=np.inf).fit(X, curator_mask=mask)
    assert exact.selected_index_ == 7 and exact.estimate_ == X[~mask, 7].mean()


def test_noise_spy_and_events():
    X = _data(n=3000, d=10)
    mask = np.arange(3000) < 1000
    with record_noise() as draws:
        est = SelectThenEstimate(epsilon=0.5, random_state=0).fit(X, curator_mask=mask)
    sel, rr = est.privacy_events_
    assert (sel.mechanism, sel.population, sel.epsilon) == ("exponential", "central", 0.5)
    assert (rr.population, rr.epsilon) == ("local", 0.5)
    select = [d for d in draws if d.kind == "exact_exponential"]
    assert len(select) == 1 and select[0].count == 10
    # Integer sums, Δ = 2: rate γ = ε/(2Δ) on the integers, 1/γ = 8 exactly.
    assert select[0].scale == 2 * 2 / 0.5
    flips = [d for d in draws if d.tag == "randomized_response"]
    assert sum(d.count for d in flips) == 2000  # one report per local agent


def test_curator_only_when_mask_is_none():
    X = _data(n=5000)
    with record_noise() as draws:
        est = SelectThenEstimate(epsilon=1.0, random_state=0).fit(X)
    assert est.curator_only_ and est.privacy_spent_["local"] == (0.0, 0.0)
    assert est.privacy_spent_["central"][0] == pytest.approx(1.0)
    lap = [d for d in draws if d.kind == "discrete_laplace"]  # exact lattice noise
    assert lap[0].scale == pytest.approx(2 / 5000 / 0.5, rel=2e-3)
    assert lap[0].scale >= 2 / 5000 / 0.5


def test_bad_input():
    X = _data(n=100, d=10)
    with pytest.raises(ValueError, match="-1/\\+1"):
        SelectThenEstimate().fit((X + 1) // 2)
    with pytest.raises(ValueError, match="no curator rows"):
        SelectThenEstimate().fit(X, curator_mask=np.zeros(100, bool))
    with pytest.raises(ValueError, match="no local agents"):
        SelectThenEstimate().fit(X, curator_mask=np.ones(100, bool))


def _close_pair_data():
    rng = np.random.default_rng(3)
    mu = np.zeros(12)
    mu[4], mu[9] = 0.5, 0.45
    X = np.where(rng.random((4000, 12)) < (1 + mu) / 2, 1, -1)
    return X, np.arange(4000) < 700


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float64, np.float32, object])
def test_seeded_outputs_pinned_for_every_dtype(dtype):
    # Values computed before the fit stopped converting X to int64 as a whole: reading
    # only the rows and column it needs must not change a seeded output.
    X, mask = _close_pair_data()
    X = X.astype(dtype)
    expected = [({"curator_mask": mask}, 1.0, 0.45770893417866065),
                ({"curator_mask": mask}, np.inf, 0.4903030303030303),
                ({}, 1.0, 0.48930883407592773),
                ({}, np.inf, 0.4895)]
    for kwargs, eps, value in expected:
        est = SelectThenEstimate(epsilon=eps, random_state=5).fit(X, **kwargs)
        assert (est.selected_index_, est.estimate_) == (4, value)


@pytest.mark.parametrize("curator_only", [False, True])
def test_fit_adds_no_n_by_d_copy(monkeypatch, curator_only):
    # The fit used to hold two n x d temporaries (np.isin's, then an int64 copy of X):
    # 0.9 GB beside a 0.4 GB X at 10^6 x 50. Now the check runs blockwise and only the
    # curator's rows (none copied when every row is the curator's) and one column are read.
    import tracemalloc

    from skhybrid.hybrid import _select_estimate

    monkeypatch.setattr(_select_estimate, "_CHECK_BLOCK_ROWS", 1 << 14)
    X = _data(n=20_000, d=50)
    mask = None if curator_only else np.arange(20_000) < 400
    est = SelectThenEstimate(epsilon=1.0, random_state=0)
    tracemalloc.start()
    try:
        est.fit(X, curator_mask=mask)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 8
    with pytest.raises(ValueError, match="-1/\\+1"):  # the blockwise check still finds one bad entry
        bad = X.copy()
        bad[-1, -1] = 0
        est.fit(bad, curator_mask=mask)
