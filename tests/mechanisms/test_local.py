"""Local-model building blocks: HRR, hierarchical CDF, quantile search, heavy hitters."""

import math
import warnings

import numpy as np
import pytest
from scipy.linalg import hadamard

from skhybrid.mechanisms.local import (
    HadamardResponse,
    HeavyHitters,
    HierarchicalCDF,
    QuantileSearch,
    cdf_sample_size,
    fwht,
    hadamard_sign,
    heavy_hitters,
    quantile_sample_size,
    rr_quantile_search,
)
from skhybrid.mechanisms.local import cdf as cdf_module


def _true_cdf(values, w):
    return np.searchsorted(np.sort(values), w, side="right") / len(values)


# --------------------------------------------------------------------------- FWHT / HRR


@pytest.mark.parametrize("d", [1, 2, 8, 64])
def test_fwht_matches_explicit_hadamard_matrix(d):
    rng = np.random.default_rng(d)
    a = rng.normal(size=(3, d))
    h = hadamard(d)
    np.testing.assert_allclose(fwht(a), a @ h.T, atol=1e-10)
    np.testing.assert_allclose(fwht(a[0]), h @ a[0], atol=1e-10)
    idx = np.arange(d)
    np.testing.assert_array_equal(hadamard_sign(idx[:, None], idx[None, :]), h)


def test_hadamard_sign_of_scalars_is_exact_and_silent():
    # Red team 13: the sign was computed in uint8, and numpy warned of the wrap on scalar
    # input exactly when the sign was -1 (a warning that carries the sign)
    h = hadamard(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in range(16):
            for j in range(16):
                s = hadamard_sign(v, j)
                assert s == h[v, j] and s.dtype == np.int8
    # twin: the previous uint8 arithmetic warns on a scalar whose sign is -1
    parity = np.bitwise_count(np.bitwise_and(np.int64(1), np.int64(1))) & 1
    with pytest.warns(RuntimeWarning, match="overflow"):
        1 - 2 * parity


def test_hrr_estimates_equal_per_item_sums():
    mech = HadamardResponse(1.0, 5)
    rng = np.random.default_rng(0)
    values = rng.integers(0, 5, 500)
    j, y = mech.randomize(values, rng)
    naive = [mech.c_epsilon * np.sum(y * hadamard_sign(v, j)) for v in range(5)]
    np.testing.assert_allclose(mech.estimate_counts(j, y), naive)
    assert mech.padded_size == 8 and j.max() < 8


def test_hrr_unbiased_with_the_stated_variance():
    mech = HadamardResponse(1.0, 5)
    counts = np.array([700, 200, 100, 0, 0])
    values = np.repeat(np.arange(5), counts)
    n, runs = counts.sum(), 600
    est = np.array([mech.estimate_counts(*mech.randomize(values, np.random.default_rng(s)))
                    for s in range(runs)])
    var = mech.variance(n, counts)
    np.testing.assert_array_less(np.abs(est.mean(0) - counts), 4 * np.sqrt(var / runs))
    # sample variance of 600 runs: relative s.e. ≈ sqrt(2/600) ≈ 6 %.
    np.testing.assert_allclose(est.var(0, ddof=1), var, rtol=0.25)
    # The bound is per run (w.p. 1 − β all values are within it): check the failure rate.
    fails = np.mean(np.abs(est - counts).max(1) > mech.error_bound(n, 0.05))
    assert fails <= 0.05


def test_hrr_error_bound_formula():
    mech = HadamardResponse(0.5, 10)
    c = (math.exp(0.5) + 1) / (math.exp(0.5) - 1)
    assert mech.error_bound(1000, 0.1) == pytest.approx(c * math.sqrt(2000 * math.log(200)))


# --------------------------------------------------------------------------- hierarchical CDF


@pytest.mark.parametrize("bits,seed", [(8, 0), (8, 1), (10, 2), (10, 3)])
def test_cdf_error_within_bound_and_monotone(bits, seed):
    rng = np.random.default_rng(100 + seed)
    n = 100_000
    values = np.minimum(rng.gamma(2.0, 2.0 ** (bits - 4), n).astype(np.int64), 2 ** bits - 1)
    model = HierarchicalCDF(1.0, bits).fit(values, np.random.default_rng(seed))
    w = np.arange(2 ** bits)
    q = model.cdf(w)
    err = np.abs(q - _true_cdf(values, w)).max()
    assert err <= model.error_bound(n, 0.05)
    assert np.all(np.diff(q) >= 0) and q.min() >= 0 and q[-1] == 1.0


def test_cdf_sparse_levels_agree_with_dense_levels(monkeypatch):
    bits, rng = 7, np.random.default_rng(5)
    values = rng.integers(0, 2 ** bits, 3000)
    model = HierarchicalCDF(1.0, bits)
    reports = model.randomize(values, rng)
    u = np.arange(1, 2 ** bits + 1)
    dense = model.aggregate(*reports)._raw_less_than(u)
    table = model.cdf(np.arange(2 ** bits))
    monkeypatch.setattr(cdf_module, "DENSE_MAX_BITS", 3)
    monkeypatch.setattr(cdf_module, "_BLOCK", 64)  # exercise query blocking
    sparse_model = HierarchicalCDF(1.0, bits).aggregate(*reports)
    assert sparse_model._table is None and set(sparse_model._sparse) == {4, 5, 6, 7}
    np.testing.assert_allclose(sparse_model._raw_less_than(u), dense, atol=1e-12)
    # cumulative max over the full, shuffled, domain equals the precomputed table
    w = rng.permutation(2 ** bits)
    np.testing.assert_allclose(sparse_model.cdf(w), table[w], atol=1e-12)
    assert isinstance(sparse_model.cdf(5), float)


def test_cdf_raw_estimate_is_unbiased():
    # Small instance, many runs: the unprocessed dyadic estimate averages to the truth.
    bits, values = 3, np.array([0, 1, 1, 3, 5, 6, 6, 7] * 25)
    model = HierarchicalCDF(2.0, bits)
    u = np.arange(1, 2 ** bits)
    runs = np.array([model.fit(values, np.random.default_rng(s))._raw_less_than(u)
                     for s in range(400)])
    truth = _true_cdf(values, u - 1)
    se = runs.std(0, ddof=1) / math.sqrt(len(runs))
    np.testing.assert_array_less(np.abs(runs.mean(0) - truth), 4 * se)


def test_cdf_sample_size_inverts_error_bound():
    n = cdf_sample_size(10, 0.1, 0.05, 1.0)
    model = HierarchicalCDF(1.0, 10)
    assert model.error_bound(n, 0.05) <= 0.1 < model.error_bound(n - 1, 0.05)
    # the worked example of docs/notes/building_blocks.rst: b = 10, ε = 1, n = 2e5 -> 0.223
    assert model.error_bound(200_000, 0.05) == pytest.approx(0.223, abs=1e-3)


# --------------------------------------------------------------------------- quantile


@pytest.mark.parametrize("seed", range(4))
def test_quantile_bracket_guarantee(seed):
    eps, lo, hi, tau, lam, beta, p_star = 1.0, 0.0, 1024.0, 0.25, 0.03, 0.05, 0.3
    n = quantile_sample_size(eps, lo, hi, tau, lam, beta)
    rng = np.random.default_rng(seed)
    # i.i.d. draws from a discrete distribution with known CDF (Binomial(1023, 0.2)).
    from scipy import stats
    dist = stats.binom(1023, 0.2)
    values = dist.rvs(size=n, random_state=rng)
    a, b = rr_quantile_search(values, p_star, eps, rng, lo, hi, tau, lam, beta)
    assert b - a <= tau
    assert dist.cdf(b) >= p_star - lam and dist.cdf(a) < p_star + lam
    assert a <= dist.ppf(p_star + lam) and b >= dist.ppf(p_star - lam) - tau


def test_quantile_sample_size_formula_and_error():
    qs = QuantileSearch(1.0, 0, 1024, 0.25, 0.05, 0.1)
    c = (math.e + 1) / (math.e - 1)
    assert qs.rounds == 12
    assert qs.agents_per_round == math.ceil(c ** 2 * math.log(240) / (2 * 0.05 ** 2))
    assert quantile_sample_size(1.0, 0, 1024, 0.25, 0.05, 0.1) == 12 * qs.agents_per_round
    with pytest.raises(ValueError, match=str(qs.sample_size)):
        qs.search(np.zeros(100), 0.5, np.random.default_rng(0))


def test_integer_search_is_the_float_search_on_small_integers_and_exact_beyond_2_53():
    qs = QuantileSearch(1.0, 0, 1024, 0.25, 0.05, 0.1)
    values = np.random.default_rng(3).integers(0, 1024, qs.sample_size)
    lo, hi = qs.search_integers(values, 0.3, np.random.default_rng(4))
    assert (float(lo), float(hi)) == qs.search(values.astype(float), 0.3,
                                               np.random.default_rng(4))
    # Beyond 2^53 float64 merges 2^60 + 1 and 2^60 + 2; the integer search does not.
    big = QuantileSearch(40.0, 0, 2**61, 0.25, 0.5, 0.1)
    v = np.repeat(np.array([2**60 + 1, 2**60 + 2], dtype=np.int64), big.sample_size)
    lo, hi = big.search_integers(v, 0.9, np.random.default_rng(0))
    assert math.floor(hi) == 2**60 + 2 and hi - lo <= 0.25
    with pytest.raises(ValueError, match="integers"):
        big.search_integers(v.astype(float), 0.9, np.random.default_rng(0))


# --------------------------------------------------------------------------- heavy hitters


@pytest.mark.parametrize("seed", range(3))
def test_heavy_hitters_contain_heavy_and_exclude_light(seed):
    rng = np.random.default_rng(seed)
    n, d = 100_000, 64
    heavy = {0: 20_000, 1: 15_000, 2: 9_000, 3: 4_000}
    rest = n - sum(heavy.values())
    values = np.concatenate([np.full(c, v) for v, c in heavy.items()]
                            + [rng.integers(4, d, rest)])
    items, est, t = heavy_hitters(values, d, 1.0, rng, 0.05)
    counts = np.bincount(values, minlength=d)
    assert 3 * t < 9_000  # items 0-2 are provably heavy at these parameters
    assert set(np.flatnonzero(counts >= 3 * t)) <= set(items)
    assert np.all(counts[items] >= t)
    assert np.all(np.diff(est) <= 0)


# --------------------------------------------------------------------------- data independence


def test_assignment_is_data_independent():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 256, 2000)
    perm = rng.permutation(values)
    j1, _ = HadamardResponse(1.0, 256).randomize(values, np.random.default_rng(7))
    j2, _ = HadamardResponse(1.0, 256).randomize(perm, np.random.default_rng(7))
    np.testing.assert_array_equal(j1, j2)
    m1 = HierarchicalCDF(1.0, 8).fit(values, np.random.default_rng(7))
    m2 = HierarchicalCDF(1.0, 8).fit(perm, np.random.default_rng(7))
    np.testing.assert_array_equal(m1.levels_, m2.levels_)
    levels, j = HierarchicalCDF(1.0, 8).assign(2000, np.random.default_rng(7))
    np.testing.assert_array_equal(levels, m1.levels_)
    l3, j3, _ = HierarchicalCDF(1.0, 8).randomize(perm, np.random.default_rng(7))
    np.testing.assert_array_equal(j3, j)
    assert np.all(j < 2 ** levels)


def test_events_are_local_pure_epsilon():
    for mech in (HadamardResponse(0.7, 4), HierarchicalCDF(0.7, 4),
                 QuantileSearch(0.7, 0, 1, 0.1, 0.1, 0.1), HeavyHitters(0.7, 4, 0.1)):
        ev = mech.event()
        assert (ev.population, ev.kind, ev.epsilon, ev.delta, ev.count) == (
            "local", "pure", 0.7, 0.0, 1)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("call,match", [
    (lambda: fwht(np.ones(6)), "power-of-two"),
    (lambda: HadamardResponse(1.0, 0), "domain_size"),
    (lambda: HadamardResponse(0.0, 4), "epsilon"),
    (lambda: HadamardResponse(1.0, 4).randomize([0, 4], np.random.default_rng(0)), r"\[0, 4\)"),
    (lambda: HadamardResponse(1.0, 4).randomize([0.5], np.random.default_rng(0)), "integers"),
    (lambda: HadamardResponse(1.0, 4).estimate_counts([0], [0]), "signs"),
    (lambda: HadamardResponse(1.0, 4).error_bound(10, 1.5), "beta"),
    (lambda: HierarchicalCDF(1.0, 0), "bits"),
    (lambda: HierarchicalCDF(1.0, 63), "bits"),
    (lambda: HierarchicalCDF(1.0, 3).fit([8], np.random.default_rng(0)), r"\[0, 8\)"),
    (lambda: HierarchicalCDF(1.0, 3).fit([-1], np.random.default_rng(0)), r"\[0, 8\)"),
    (lambda: HierarchicalCDF(1.0, 3).fit([], np.random.default_rng(0)), "empty"),
    (lambda: HierarchicalCDF(1.0, 3).cdf([1]), "not fitted"),
    (lambda: HierarchicalCDF(1.0, 3).fit([1, 2], np.random.default_rng(0)).cdf([8]), "w must"),
    (lambda: cdf_sample_size(4, 0.0, 0.1, 1.0), "alpha"),
    (lambda: QuantileSearch(1.0, 1, 0, 0.1, 0.1, 0.1), "lo must be smaller"),
    (lambda: QuantileSearch(1.0, 0, 1, 0.0, 0.1, 0.1), "tau"),
    (lambda: QuantileSearch(1.0, 0, 1, 0.1, 1.0, 0.1), "lam"),
    (lambda: rr_quantile_search(np.zeros(10**5), 1.0, 1.0, np.random.default_rng(0),
                                0, 1, 0.5, 0.3, 0.1), "p_star"),
    (lambda: heavy_hitters([0], 2 ** 25, 1.0, np.random.default_rng(0), 0.1), "prefix-tree"),
])
def test_validation_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_gaussian_randomized_response_refuses_a_lattice_that_rounds_the_bits_away():
    # Red team 9, F2: at epsilon=1e-3, delta=1e-6 the noise needs more than 4096 integer
    # steps, the lattice step became 4, and every bit rounded to 0: private, but every
    # report was pure noise (the mean of the reports estimated 0 whatever the bits).
    from skhybrid.mechanisms import GaussianRandomizedResponse

    with pytest.raises(ValueError, match=r"carry no information.*epsilon >= about 0.00132"):
        GaussianRandomizedResponse(1e-3, 1e-6)
    rr = GaussianRandomizedResponse(1.4e-3, 1e-6)
    assert rr.lattice_step == 1.0
    reports = rr(np.ones(200_000, dtype=int), np.random.default_rng(0))
    assert abs(reports.mean() - 1.0) < 5 * rr.sigma / math.sqrt(reports.size)
