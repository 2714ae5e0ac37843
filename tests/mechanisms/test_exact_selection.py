"""Exact selection: the lattice, the coins, the sampled law and the realised privacy ratio.

Exact laws are computed with ``fractions`` / mpmath from the lattice weights; samples are
compared by χ² at α = 1e-6 with fixed seeds (deterministic).
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from skhybrid.mechanisms import (
    ExponentialMechanism,
    ReportNoisyMax,
    exponential_mechanism,
    report_noisy_max,
    report_noisy_min,
)
from skhybrid.mechanisms import _exact_selection as xs
from skhybrid.mechanisms import _noise
from skhybrid.mechanisms._noise import record_noise
from skhybrid.ppm._scoring import streamed_exponential_mechanism

from ._rngs import ZeroFirst

ALPHA = 1e-6
#: Kinds of draw a selection may make: exact samplers only.
EXACT_KINDS = {"exact_exponential", "discrete_laplace"}

mpmath.mp.dps = 60


def _exact_pmf(k, a, b):
    """P(i) ∝ exp(-γ (max k - k_i)), γ = a/2^b, in high precision."""
    gamma = mpmath.mpf(a) / mpmath.mpf(2) ** b
    top = max(int(x) for x in k)
    w = [mpmath.exp(-gamma * (top - int(x))) for x in k]
    z = mpmath.fsum(w)
    return [x / z for x in w]


# --------------------------------------------------------------------------- arithmetic


def test_split_exponent_matches_python_integers():
    rng = np.random.default_rng(0)
    cases = [(1, 0), (3, 2), ((1 << 24) - 1, 0), ((1 << 24) - 1, 31), (12345, 32), (7, 40),
             ((1 << 24) - 1, 62), (1, 62)]
    for a, b in cases:
        d = np.concatenate([
            rng.integers(0, 1 << 62, 200), rng.integers(0, 1 << 20, 200),
            np.array([0, 1, (1 << 63) - 1, (1 << 32) - 1, 1 << 32], dtype=np.int64)])
        q, r = xs.split_exponent(d, a, b)
        for di, qi, ri in zip(d.tolist(), q.tolist(), r.tolist()):
            true_q, true_r = divmod(a * di, 1 << b)
            assert ri == true_r and 0 <= ri < 1 << b
            assert qi == min(true_q, 1 << 62)  # the cap is never reached by a run


def test_dyadic_floor_rounds_down_with_24_bits():
    for x in [Fraction(1, 2), Fraction(1, 3), Fraction(0.7) / 2, Fraction(1, 2 * 1363149),
              Fraction(1e-12) / (2 << 21), Fraction(10**6), Fraction(0)]:
        a, b = xs.dyadic_floor(x)
        assert 0 <= a < 1 << 24 and 0 <= b <= 62
        assert Fraction(a, 1 << b) <= min(x, Fraction(1 << 23))
        if Fraction(2.0**-38) <= x <= Fraction(1 << 23):  # full precision where bits allow
            assert Fraction(a + 1, 1 << b) > x and a >= 1 << 23


def test_lattice_pays_the_rounding():
    for sens in [1.0, 1.3, 2.0, 1e-3, 7.5e4]:
        g, S = xs.score_lattice(sens, 1.0, 2)
        assert math.log2(g).is_integer() and g <= sens * 2.0**-20 < 2 * g
        assert S == math.floor(sens / g) + 1
    assert xs.score_lattice(2.0, 1.0, 2, integer=True) == (1.0, 2)
    with pytest.raises(ValueError, match="sensitivity must be an integer"):
        xs.score_lattice(0.5, 1.0, 2, integer=True)
    # Tiny ε coarsens the lattice (keeping >= 2^8 steps per Δ) so γ keeps its bits.
    g, S = xs.score_lattice(1.0, 1e-12, 2)
    assert S >= 1 << 8 and g <= 2.0**-8


def test_non_integer_scores_are_refused_on_an_integer_lattice():
    # (large scores are no longer refused: see test_selection_scores.py)
    with pytest.raises(ValueError, match="scores must be integers"):
        ExponentialMechanism(1.0, 2.0, integer=True)([0.0, 0.5], np.random.default_rng(0))


# --------------------------------------------------------------------------- coins


@pytest.mark.parametrize("a, b, d", [(3, 2, 1), (1, 0, 1), (5, 3, 7), (1, 30, 1 << 29),
                                     (7, 40, 3 << 38), (1, 1, 0)])
def test_exp_coin_law(a, b, d):
    n = 200_000
    p = math.exp(-a * d / 2**b)
    hits = int(xs.exp_coin(np.random.default_rng(a + b), np.full(n, d, np.int64), a, b).sum())
    assert stats.binomtest(hits, n, p).pvalue > ALPHA


def test_geometric_run_law():
    q = np.repeat(np.arange(6, dtype=np.int64), 40_000)
    out = xs._geometric_at_least(np.random.default_rng(3), q)
    for j in range(6):
        hits = int(out[q == j].sum())
        assert stats.binomtest(hits, 40_000, math.exp(-j)).pvalue > ALPHA


def test_huge_exponents_are_safe():
    # γ·d near 2^62 or beyond: no overflow, no error, and (with overwhelming probability)
    # rejected; the run of successes stops within a few dozen rounds.
    d = np.array([(1 << 63) - 1, 1 << 62, 1 << 40], dtype=np.int64)
    out = xs.exp_coin(np.random.default_rng(0), np.repeat(d, 1000), (1 << 24) - 1, 0)
    assert not out.any()


# --------------------------------------------------------------------------- sampled law


@pytest.mark.parametrize("k, a, b", [
    ([0, -1, -2, -3, 0, -5], 1, 1),                    # ties at the top
    ([10, 4, 7, 7, 9], 3, 2),                          # ties below
    ([0, -3, -30, -6], 1, 0),                          # γ·d = 30 for one candidate
    ([5 << 20, (5 << 20) - 1363149, 0], 3, 22),        # float-lattice sizes
])
def test_sampler_matches_exact_pmf(k, a, b):
    n = 60_000
    k = np.array(k, dtype=np.int64)
    pmf = np.array([float(p) for p in _exact_pmf(k, a, b)])
    draws = xs.sample_exponential(np.random.default_rng(7), k, a, b, n)
    counts = np.bincount(draws, minlength=k.size)
    keep = pmf * n > 5  # χ² cells with enough expected mass; the rest must be (near) empty
    assert stats.chisquare(counts[keep], pmf[keep] / pmf[keep].sum() * counts[keep].sum()
                           ).pvalue > ALPHA
    assert counts[~keep].sum() <= max(10, 10 * n * pmf[~keep].sum())


def test_mechanism_law_with_exclusions_and_large_gaps():
    scores = np.array([0.0, -np.inf, -1.0, -2.5, -np.inf, -0.25, -60.0])
    eps, sens = 1.5, 1.0
    mech = ExponentialMechanism(eps, sens)
    g, S, a, b = mech.lattice()
    allowed = np.isfinite(scores)
    k = np.rint(scores[allowed] / g).astype(np.int64)
    pmf = np.zeros(scores.size)
    pmf[allowed] = [float(p) for p in _exact_pmf(k, a, b)]
    assert pmf[6] > 0  # 45 scales below the best: positive, where float Gumbel gives 0
    counts = np.bincount(mech._select(scores, np.random.default_rng(1), 50_000),
                         minlength=scores.size)
    assert counts[~allowed].sum() == 0
    keep = pmf * 50_000 > 5
    assert stats.chisquare(counts[keep], pmf[keep] / pmf[keep].sum() * counts[keep].sum()
                           ).pvalue > ALPHA


def test_rnm_law_against_exact_discrete_laplace_pmf():
    # Integer scores, monotone, t = ceil(Δ/ε) = 2: P(win) computed exactly by summing
    # the discrete Laplace law over a window wide enough (mass outside < 1e-30).
    scores = np.array([0, -1, -3, 0])
    mech = ReportNoisyMax(0.5, 1.0, monotonic=True, integer=True)
    g, S, t = mech.lattice()
    assert (g, S, t) == (1.0, 1, 2)
    z = np.arange(-160, 161)
    p = np.exp(-np.abs(z) / t)
    p /= p.sum()
    cdf = np.cumsum(p)
    win = []
    for i in range(scores.size):  # first index wins ties
        total = 0.0
        for zi, pi in zip(z, p):
            v = scores[i] + zi
            prob = pi
            for j in range(scores.size):
                if j == i:
                    continue
                lim = v - scores[j] - (1 if j < i else 0)  # need z_j <= lim
                prob *= cdf[np.clip(lim + 160, -1, 320)] if lim >= -160 else 0.0
            total += prob
        win.append(total)
    win = np.array(win)
    assert win.sum() == pytest.approx(1.0, abs=1e-12)
    counts = np.bincount(mech._select(scores, np.random.default_rng(2), 60_000), minlength=4)
    assert stats.chisquare(counts, win * 60_000).pvalue > ALPHA
    assert counts[0] > counts[3]  # the tie goes to the first index


# --------------------------------------------------------------------------- privacy ratio


def _worst_rounding_pair(sens, m):
    """Candidate 0 up by Δ, the others down by Δ, placed so that rounding adds a full
    step: every lattice score moves by exactly S = floor(Δ/g) + 1."""
    g, S = xs.score_lattice(sens, 1.0, 2)
    frac = sens / g - math.floor(sens / g)
    assert 0 < frac < 1  # Δ/g not an integer, so rounding can add a step
    x0 = g * (0.5 - frac / 2)  # rounds to 0; x0 + Δ rounds up to S
    u = np.full(m, -x0)
    u[0] = x0
    u2 = u - sens
    u2[0] = u[0] + sens
    k, k2 = np.rint(u / g), np.rint(u2 / g)
    assert np.all(np.abs(k2 - k) == S)
    return u, u2


@pytest.mark.parametrize("monotonic", [False, True])
def test_realised_ratio_at_the_worst_rounding(monotonic):
    eps, sens = 1.0, 1.3
    u, u2 = _worst_rounding_pair(sens, 3)
    if monotonic:  # every score moves up (candidate 0 by Δ, the others by 0)
        u2 = u.copy()
        u2[0] += sens
    mech = ExponentialMechanism(eps, sens, monotonic=monotonic)
    g, S, a, b = mech.lattice()
    gamma = Fraction(a, 1 << b)
    assert gamma <= Fraction(eps) / ((1 if monotonic else 2) * S)
    # The exact law of the released index on both sides, for many candidates (the ratio
    # of the {0} event approaches e^{2γS}); m enters the formula only.
    k, k2 = np.rint(u / g).astype(int), np.rint(u2 / g).astype(int)
    m = mpmath.mpf(10) ** 15
    gm = mpmath.mpf(a) / mpmath.mpf(2) ** b

    def law(kk):
        w0, w1 = mpmath.exp(gm * int(kk[0])), mpmath.exp(gm * int(kk[1]))
        z = w0 + (m - 1) * w1
        return w0 / z, w1 / z

    p, p2 = law(k), law(k2)
    worst = max(p2[0] / p[0], p[0] / p2[0], p2[1] / p[1], p[1] / p2[1])
    assert worst <= mpmath.exp(eps)
    assert worst >= mpmath.exp(eps) * (1 - 1e-5)  # the pair is the worst case
    # Twin: calibrating to floor(Δ/g) steps (not paying the rounding) exceeds e^ε here.
    a_bad, b_bad = xs.dyadic_floor(Fraction(eps) / ((1 if monotonic else 2) * (S - 1)))
    gm = mpmath.mpf(a_bad) / mpmath.mpf(2) ** b_bad
    p, p2 = law(k), law(k2)
    assert max(p2[0] / p[0], p[0] / p2[0]) > mpmath.exp(eps)


def test_rnm_lattice_scale_covers_the_rounding():
    for monotonic in (False, True):
        mech = ReportNoisyMax(0.7, 1.3, monotonic=monotonic)
        g, S, t = mech.lattice()
        factor = 1 if monotonic else 2
        assert S == math.floor(1.3 / g) + 1
        assert Fraction(factor * S) / t <= Fraction(0.7)  # e^{factor·S/t} <= e^ε
        assert t * g >= mech.scale


# --------------------------------------------------------------------------- spy (twin)


def _selections(rng):
    scores = np.array([0.0, -1.0, -2.0, -np.inf, -5.0])
    exponential_mechanism(scores, sensitivity=1.0, epsilon=1.0, rng=rng)
    ExponentialMechanism(1.0, 2.0, integer=True)([0.0, -2.0, 4.0], rng)
    report_noisy_max(scores, sensitivity=1.0, epsilon=1.0, rng=rng)
    report_noisy_min(-scores, sensitivity=1.0, epsilon=1.0, rng=rng)
    streamed_exponential_mechanism([scores[:2], scores[2:]], 1.0, 1.0, rng)
    streamed_exponential_mechanism([np.array([0.0, -1.0])], 1.0, 1.0, rng, integer=True)


def _assert_exact_draws_only(run):
    with record_noise() as draws:
        run(np.random.default_rng(0))
    assert draws and {d.kind for d in draws} <= EXACT_KINDS, {d.kind for d in draws}


def test_selections_draw_from_exact_samplers_only():
    _assert_exact_draws_only(_selections)


def _float_gumbel_select(self, scores, rng, n=None):
    """The float Gumbel-max path the exact sampler replaced (the twin)."""
    scores = np.asarray(scores, dtype=float)
    _noise._record("gumbel", self.gumbel_scale, scores.shape, self.name)
    return int(np.argmax(scores + rng.gumbel(0.0, self.gumbel_scale, scores.shape)))


def test_float_gumbel_twin_fails_the_spy(monkeypatch):
    monkeypatch.setattr(ExponentialMechanism, "_select", _float_gumbel_select)
    with pytest.raises(AssertionError):
        _assert_exact_draws_only(_selections)
    # ... and its support is bounded: a candidate 41 scales below the best never wins
    # (numpy's Gumbel lies in about [-3.6, 36.7] scales), where the exact law gives it
    # e^-41 / (1 + e^-41) > 0.
    rng = np.random.default_rng(0)
    g = rng.gumbel(0.0, 1.0, 10**6)
    assert g.max() - g.min() < 41
    (p_far,) = _exact_pmf(np.array([0, -41]), 1, 0)[1:]
    assert p_far > 0


def test_worst_case_cost_is_bounded_by_m():
    # Large ε, one best candidate among many: about m proposals; check it terminates
    # with the exact argmax and records one draw over all candidates.
    m = 200_000
    scores = np.zeros(m)
    scores[123] = 1000.0
    with record_noise() as draws:
        assert ExponentialMechanism(1e6, 1.0)(scores, np.random.default_rng(0)) == 123
    assert [(d.kind, d.count) for d in draws] == [("exact_exponential", m)]


def test_exp_minus_one_coin_law_and_its_tail():
    n = 400_000
    hits = int(_noise._bernoulli_exp_minus_one(np.random.default_rng(5), n).sum())
    assert stats.binomtest(hits, n, math.exp(-1)).pvalue > ALPHA
    # U = 0 (probability 1/20!): the algorithm continues from k = 21
    out = _noise._bernoulli_exp_minus_one(ZeroFirst(), 50_000)
    # Given K > 20: K = 21 w.p. 20/21, so the coin is 1 (K odd) w.p. about 0.95.
    p_odd = sum((1 / math.factorial(k - 1) - 1 / math.factorial(k)) for k in range(21, 60, 2))
    assert stats.binomtest(int(out.sum()), out.size, p_odd * math.factorial(20)).pvalue > ALPHA


@pytest.mark.parametrize("t", [1, 3, 1000, 315_870_694])
def test_selection_discrete_laplace_law(t):
    n = 200_000
    x = _noise.discrete_laplace(np.random.default_rng(t), t, (n,))
    # Cells: the sign and floor(|x| / t) in 0..5, exact masses from P(x) ∝ exp(-|x|/t).
    r = math.exp(-1 / t)
    norm = (1 - r) / (1 + r)  # P(x) = norm * r^|x|

    def mass(lo, hi):  # P(lo <= x < hi), 0 <= lo < hi
        return norm * (r**lo - r**hi) / (1 - r)

    edges = [j * t for j in range(6)] + [None]
    expected, observed = [], []
    for sign in (1, -1):
        for lo, hi in zip(edges[:-1], edges[1:]):
            lo_ = max(lo, 1) if sign < 0 else lo  # 0 counted once, with the + sign
            p = mass(lo_, hi) if hi is not None else norm * r**lo_ / (1 - r)
            v = sign * x
            hit = (v >= lo_) & ((v < hi) if hi is not None else True)
            expected.append(p * n)
            observed.append(int(hit.sum()))
    assert sum(observed) == n
    expected, observed = np.array(expected), np.array(observed)
    cells = expected > 0  # (t = 1: the cell [-1, 0) of the negative side is empty)
    assert observed[~cells].sum() == 0
    assert stats.chisquare(observed[cells], expected[cells] / expected.sum() * n).pvalue > ALPHA



@pytest.mark.parametrize("t", [1, 1000, 315_870_694])
def test_scalar_selection_discrete_laplace_law(monkeypatch, t):
    # The same law with the Python-integer path forced (it serves fewer than 40 draws).
    monkeypatch.setattr(_noise, "_SCALAR_DRAWS", 10**9)
    test_selection_discrete_laplace_law(t)


# --------------------------------------------------------------------------- one draw


def _weighted_pmf(d, a, b, counts):
    """P(i) ∝ counts_i exp(-a d_i / 2^b), in high precision."""
    gamma = mpmath.mpf(a) / mpmath.mpf(2) ** b
    w = [int(c) * mpmath.exp(-gamma * int(x)) for x, c in zip(d, counts)]
    z = mpmath.fsum(w)
    return np.array([float(x / z) for x in w])


@pytest.mark.parametrize("tries", [0, xs._SCALAR_TRIES])
@pytest.mark.parametrize("d, a, b, counts", [
    ([0, 1, 2, 3, 0, 5], 1, 1, None),                       # ties at the top
    ([0, 3, 30, 6], 1, 0, None),                            # one candidate 30 scales below
    ([0, 1363149, 5 << 20], 3, 22, None),                   # float-lattice sizes
    ([0, 2, 41, 38, 39], 1, 0, [1, 3, 5, 7, 2]),            # weighted levels, q >= J
    ([0, 45, 44, 3], 1, 0, [1, 10**18, 3 * 10**17, 2]),     # the far group holds the mass
    ([0, 0, 1, 2], 0, 0, [1, 2, 3, 4]),                     # γ = 0: proportional to counts
])
def test_single_draw_matches_exact_pmf(monkeypatch, tries, d, a, b, counts):
    # One draw per call: a few scalar proposals, then the envelope (tries=0 forces it).
    monkeypatch.setattr(xs, "_SCALAR_TRIES", tries)
    n = 20_000
    d = np.array(d, dtype=np.int64)
    c = None if counts is None else np.array(counts, dtype=np.int64)
    pmf = _weighted_pmf(d, a, b, np.ones(d.size, dtype=object) if c is None else counts)
    rng = np.random.default_rng(11)
    got = np.bincount([xs._sample_one(rng, d, a, b, c) for _ in range(n)], minlength=d.size)
    keep = pmf * n > 5
    assert stats.chisquare(got[keep], pmf[keep] / pmf[keep].sum() * got[keep].sum()
                           ).pvalue > ALPHA
    assert got[~keep].sum() <= max(10, 10 * n * pmf[~keep].sum())


def test_envelope_table_is_exact():
    # floor(e^-j 2^n) against mpmath at 300 digits, and the table K_j = floor + 1 > e^-j 2^P.
    with mpmath.workdps(300):
        for j, n in [(1, 0), (1, 2), (3, 96), (40, 96), (17, 300), (40, 1000)]:
            exact = mpmath.floor(mpmath.exp(-j) * mpmath.mpf(2) ** n)
            assert xs._exp_neg_floor(j, n) == int(exact)
        table = xs._envelope_table()
        assert table[0] == 1 << xs._ENV_P
        for j in range(1, xs._ENV_J + 1):
            x = mpmath.exp(-j) * mpmath.mpf(2) ** xs._ENV_P
            assert table[j] - 1 < x < table[j]


def test_fractional_coins_law():
    # Bernoulli(frac(e^-j 2^n)) (the rare branch of the table coin), and the table coin
    # given v = floor(e^-j 2^P), where it must equal that fractional part.
    n_draws = 100_000
    for j, n in [(1, 2), (2, 5)]:
        words = xs._Words(np.random.default_rng(j))
        hits = sum(xs._frac_coin(words, j, n) for _ in range(n_draws))
        p = float(mpmath.frac(mpmath.exp(-j) * 2**n))
        assert stats.binomtest(hits, n_draws, p).pvalue > ALPHA
    words = xs._Words(np.random.default_rng(3))
    top = xs._envelope_table()[5] - 1
    hits = sum(xs._table_coin(words, 5, top) for _ in range(n_draws))
    p = float(mpmath.frac(mpmath.exp(-5) * mpmath.mpf(2) ** xs._ENV_P))
    assert stats.binomtest(hits, n_draws, p).pvalue > ALPHA
    assert all(xs._table_coin(words, 5, v) for v in (0, top - 1))


def test_scalar_coins_law():
    words = xs._Words(np.random.default_rng(8))
    n = 100_000
    for a, b, d in [(1, 0, 1), (3, 2, 1), (5, 3, 7), (7, 40, 3 << 38)]:
        hits = sum(xs._py_coin(words, d, a, b) for _ in range(n))
        assert stats.binomtest(hits, n, math.exp(-a * d / 2**b)).pvalue > ALPHA


def test_uniform_words_below_large_bounds():
    words = xs._Words(np.random.default_rng(2))
    for bound in [3, (1 << 64) - 1, 3 << 70]:
        draws = [words.below(bound) for _ in range(30_000)]
        assert 0 <= min(draws) and max(draws) < bound
        k = min(bound, 6)
        cells = np.bincount([x * k // bound for x in draws], minlength=k)
        assert stats.chisquare(cells).pvalue > ALPHA


def test_mechanism_single_draws_law():
    # Calls of one draw each (the scalar path) against the exact lattice law.
    scores = np.array([0.0, -np.inf, -1.0, -2.5, -0.25, -9.0])
    mech = ExponentialMechanism(1.5, 1.0)
    g, _, a, b = mech.lattice()
    allowed = np.isfinite(scores)
    pmf = np.zeros(scores.size)
    pmf[allowed] = [float(p) for p in _exact_pmf(np.rint(scores[allowed] / g), a, b)]
    rng = np.random.default_rng(21)
    n = 20_000
    counts = np.bincount([mech(scores, rng) for _ in range(n)], minlength=scores.size)
    assert counts[~allowed].sum() == 0
    keep = pmf * n > 5
    assert stats.chisquare(counts[keep], pmf[keep] / pmf[keep].sum() * counts[keep].sum()
                           ).pvalue > ALPHA


def test_one_clear_winner_among_many_is_cheap():
    # Large ε, one best candidate among a million: the envelope draws it after a few
    # proposals (uniform proposals would need about a million).
    m = 1_000_000
    scores = np.zeros(m)
    scores[777] = 1.0
    rng, probe = np.random.default_rng(0), np.random.default_rng(0)
    assert ExponentialMechanism(1000.0, 1.0)(scores, rng) == 777
    # PCG64 steps once per 64-bit word: the draw used fewer than 200 words.
    for _ in range(200):
        if probe.bit_generator.state == rng.bit_generator.state:
            break
        probe.bit_generator.random_raw(1)
    assert probe.bit_generator.state == rng.bit_generator.state
