import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skhybrid.learners._parity_core import (
    _inclusion_rate,
    _min_floor,
    _private_parity_unchecked,
    boosted_private_parity,
    parity_privacy_epsilon,
    parity_sample_size,
    predict_parity,
    private_parity,
)
from skhybrid.mechanisms._noise import record_noise

D = 3
PARITIES = np.array(list(itertools.product((0, 1), repeat=D)), dtype=np.uint8)


# ----------------------------------------------------------------------------- exact law

def exact_distribution(X, y, p, floor):
    """Exact output law of PPAR: entries 0..2^d-1 for the parities (PARITIES order), last = ⊥.

    Sums over all 2^n subsets S with weight p^|S| (1-p)^(n-|S|); V_S is found by brute
    force over the 2^d parities (independent of the GF(2) solver under test).
    """
    X, y = np.asarray(X), np.asarray(y)
    n = X.shape[0]
    subsets = np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64).reshape(2**n, n)
    sizes = subsets.sum(axis=1)
    weights = p**sizes * (1 - p) ** (n - sizes)
    wrong = (((PARITIES.astype(int) @ X.T) & 1) != y).astype(np.int64)  # (2^d, n)
    in_v = (subsets @ wrong.T) == 0  # (2^n, 2^d): parity r consistent with S
    size_v = in_v.sum(axis=1)
    law = np.zeros(len(PARITIES) + 1)
    ok = size_v > 0
    law[:-1] = (weights[ok, None] * in_v[ok] / size_v[ok, None]).sum(axis=0)
    law[-1] = weights[~ok].sum()
    return floor * np.eye(len(law))[-1] + (1 - floor) * law


def worst_log_ratio(P, Q):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.abs(np.log(P) - np.log(Q))
    r[(P == 0) & (Q == 0)] = 0.0
    return float(np.max(r))


def base_datasets(n, rng):
    """Inputs covering the extremes: independent row, duplicates, realizable, unrealizable."""
    r_star = np.array([1, 0, 1])
    out = []
    # Row 0 is the only one involving coordinate 0: adding it halves V (the tight case).
    X = rng.integers(0, 2, (n, D))
    X[:, 0] = 0
    X[0] = [1, 0, 0]
    out.append((X, (X @ r_star) & 1))
    # All rows identical: a flipped label is inconsistent as soon as one other row is kept.
    X = np.tile([1, 1, 0], (n, 1))
    out.append((X, (X @ r_star) & 1))
    X = rng.integers(0, 2, (n, D))
    out.append((X, (X @ r_star) & 1))  # realizable
    y = (X @ r_star) & 1
    y[:2] ^= 1
    out.append((X, y))  # unrealizable
    X = np.zeros((n, D), dtype=int)
    out.append((X, np.ones(n, dtype=int)))  # 0 = 1 everywhere: always ⊥ unless S empty
    return out


def neighbour_pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    replacements = [(np.array(x), yy) for x in PARITIES for yy in (0, 1)]
    for X, y in base_datasets(n, rng):
        for i in range(n):
            for x_new, y_new in replacements:
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = x_new, y_new
                yield (X, y), (X2, y2)


def enumerated_worst(n, p, floor):
    return max(
        worst_log_ratio(exact_distribution(*z, p, floor), exact_distribution(*z2, p, floor))
        for z, z2 in neighbour_pairs(n)
    )


@pytest.mark.parametrize("n", [6, 8])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_exact_privacy_tanh_is_tight(n, epsilon):
    p = math.tanh(epsilon / 2)
    worst = enumerated_worst(n, p, 0.5)
    assert worst <= epsilon + 1e-9
    assert worst == pytest.approx(epsilon, abs=1e-6)


def test_exact_privacy_klnrs_rate():
    epsilon = 1.0
    p = epsilon / 4
    worst = enumerated_worst(7, p, 0.5)
    assert worst == pytest.approx(math.log((1 + p) / (1 - p)), abs=1e-9)
    assert worst <= epsilon


@pytest.mark.parametrize("floor", [0.05, 0.2, 0.5])
def test_exact_privacy_respects_general_bound(floor):
    """parity_privacy_epsilon(p, q) bounds the loss for every floor, also below the threshold."""
    p = math.tanh(0.5)
    assert enumerated_worst(6, p, floor) <= parity_privacy_epsilon(p, floor) + 1e-9


def test_without_floor_privacy_loss_is_infinite():
    """Why the floor exists: a flipped label makes ⊥ possible where it had probability 0."""
    p = math.tanh(0.5)
    assert enumerated_worst(6, p, 0.0) == math.inf
    assert parity_privacy_epsilon(p, 0.0) == math.inf


def test_without_floor_code_distinguishes_flipped_label():
    """The same failure seen in the code: ⊥ is impossible on z and frequent on z'."""
    X = np.tile([1, 1, 0], (6, 1))
    y = np.ones(6, dtype=int)
    y_flip = y.copy()
    y_flip[0] = 0
    p = math.tanh(0.5)
    rng = np.random.default_rng(4)
    bot = [_private_parity_unchecked(X, y, p, 0.0, rng) is None for _ in range(500)]
    bot_flip = [_private_parity_unchecked(X, y_flip, p, 0.0, rng) is None for _ in range(500)]
    assert sum(bot) == 0
    assert sum(bot_flip) > 100  # exact probability p (1 - (1-p)^5) ≈ 0.44


def test_sampler_matches_exact_law():
    """The code's output frequencies agree with the enumerated law (chi-square, α = 1e-6)."""
    rng = np.random.default_rng(5)
    X, y = base_datasets(6, np.random.default_rng(0))[3]
    n_runs = 20_000
    codes = np.empty(n_runs, dtype=int)
    for t in range(n_runs):
        r = private_parity(X, y, 1.0, rng)
        codes[t] = 2**D if r is None else int(r @ (1 << np.arange(D)[::-1]))
    counts = np.bincount(codes, minlength=2**D + 1)
    expected = exact_distribution(X, y, math.tanh(0.5), 0.5) * n_runs
    keep = expected > 0
    assert counts[~keep].sum() == 0
    assert stats.chisquare(counts[keep], expected[keep]).pvalue > 1e-6


# ----------------------------------------------------------------------------- formulas

def test_privacy_epsilon_formula():
    p = 0.3
    q_star = (1 - p) / (3 - p)
    eps_h = math.log(1.3 / 0.7)
    assert parity_privacy_epsilon(p, q_star) == pytest.approx(eps_h)
    assert parity_privacy_epsilon(p, 0.5) == pytest.approx(eps_h)
    assert parity_privacy_epsilon(p, 0.1) == pytest.approx(math.log(1 + 0.3 * 0.9 / 0.1))
    assert parity_privacy_epsilon(math.tanh(1.0), 0.5) == pytest.approx(2.0)
    assert parity_privacy_epsilon(1.0, 0.5) == math.inf
    assert parity_privacy_epsilon(0.4, 1.0) == 0.0


def test_sample_size_hand_computed():
    # (10 ln 2 + ln 20) / (0.25 * 0.1) = 9.927204 / 0.025 = 397.09 -> 398.
    assert parity_sample_size(10, 0.1, 0.05, 1.0, rate="klnrs") == 398
    # p = tanh(1/2) = 0.462117: 9.927204 / 0.0462117 = 214.82 -> 215.
    assert parity_sample_size(10, 0.1, 0.05, 1.0) == 215


def test_predict_parity():
    X = np.array([[1, 1, 0], [0, 1, 1], [1, 1, 1], [0, 0, 0]])
    np.testing.assert_array_equal(predict_parity([1, 0, 1], X), [1, 1, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        predict_parity([1, 0], X)


def test_parameter_validation():
    X, y = np.eye(3, dtype=int), np.array([1, 0, 1])
    rng = np.random.default_rng(0)
    p = math.tanh(0.5)
    with pytest.raises(ValueError, match="floor"):
        private_parity(X, y, 1.0, rng, floor=0.99 * (1 - p) / (3 - p))
    # the threshold itself is fine, as the ⊥ coin realises it (rounded up to 2^-53 steps)
    private_parity(X, y, 1.0, rng, floor=_min_floor(_inclusion_rate(1.0, "tanh")))
    with pytest.raises(ValueError, match="floor"):
        private_parity(X, y, 1.0, rng, floor=0.0)
    with pytest.raises(ValueError, match="klnrs"):
        private_parity(X, y, 3.9, rng, rate="klnrs")
    private_parity(X, y, 3.8, rng, rate="klnrs")
    with pytest.raises(ValueError, match="rate"):
        private_parity(X, y, 1.0, rng, rate="fast")
    with pytest.raises(ValueError, match="epsilon"):
        private_parity(X, y, 0.0, rng)
    with pytest.raises(ValueError, match="0/1"):
        private_parity(X * 2, y, 1.0, rng)
    with pytest.raises(ValueError, match="y must have shape"):
        private_parity(X, y[:2], 1.0, rng)
    with pytest.raises(ValueError, match="n_chunks"):
        boosted_private_parity(X, y, 1.0, rng, 0)


def test_noise_goes_through_helpers():
    X, y = np.eye(3, dtype=int), np.array([1, 0, 1])
    rng = np.random.default_rng(1)
    with record_noise() as draws:
        for _ in range(20):
            private_parity(X, y, 1.0, rng)
    kinds = {(d.kind, d.tag) for d in draws}
    assert kinds <= {
        ("bernoulli", "parity_floor"),
        ("bernoulli", "parity_drop"),
        ("integers", "parity_solution"),
    }
    assert all(d.count == 3 for d in draws if d.tag == "parity_drop")
    rates = [d.scale for d in draws if d.tag == "parity_drop"]
    assert rates == pytest.approx([1 - math.tanh(0.5)] * len(rates))


# ----------------------------------------------------------------------------- utility

def test_utility_realizable():
    d, alpha, beta, epsilon, floor = 12, 0.1, 0.1, 1.0, 0.5
    n = parity_sample_size(d, alpha, beta, epsilon)
    hits, runs = 0, 60
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        r_star = rng.integers(0, 2, d)
        X = rng.integers(0, 2, (n, d))
        r = private_parity(X, predict_parity(r_star, X), epsilon, rng, floor=floor)
        # Under uniform X any other parity has error exactly 1/2 > alpha.
        hits += r is not None and np.array_equal(r, r_star)
    # Guarantee: >= (1 - floor)(1 - beta) = 0.45 in expectation; loose binomial margin.
    assert hits / runs >= 0.3


def test_boosted_chunks_are_disjoint_and_data_independent():
    rng = np.random.default_rng(3)
    d, m = 8, 200
    r1, r2 = rng.integers(0, 2, d), rng.integers(0, 2, d)
    X = rng.integers(0, 2, (2 * m, d))
    y = np.concatenate([predict_parity(r1, X[:m]), predict_parity(r2, X[m:])])
    out = boosted_private_parity(X, y, 1.0, rng, 2, shuffle=False)
    assert len(out) == 2
    # Contiguous chunks: each sees one realizable half, so it returns its own parity or ⊥.
    assert out[0] is None or np.array_equal(out[0], r1)
    assert out[1] is None or np.array_equal(out[1], r2)
    outs = boosted_private_parity(X, y, 1.0, rng, 5)
    assert len(outs) == 5 and all(o is None or o.shape == (d,) for o in outs)
    # Shuffled chunks mix both halves: every answer is ⊥ (inconsistent) or a solution
    # of its own chunk; with ~100 rows per chunk and two different parities, ⊥.
    assert all(o is None for o in outs)
    # More chunks than rows: empty chunks still answer (uniform parity or ⊥).
    assert len(boosted_private_parity(X[:3], y[:3], 1.0, rng, 6)) == 6
