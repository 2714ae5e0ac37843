"""Sampler distribution tests (docs/notes/auditing.rst, layer B).

Each mechanism's outputs are compared with the distribution its privacy proof
assumes: Kolmogorov-Smirnov (continuous) or chi-square / exact binomial (discrete)
tests at α = 1e-6 on 5k-60k seeded draws, plus a scale moment. At α = 1e-6 a correct
sampler fails with probability 1e-6 per test; the seeds are fixed, so the suite is
deterministic. The tests catch wrong scales (Δ/ε vs 2Δ/ε), a variance passed where a
standard deviation is expected, and exp(εu/Δ) in place of exp(εu/(2Δ)).
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from skhybrid.accounting import _composition as comp
from skhybrid.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GaussianRandomizedResponse,
    LaplaceMechanism,
    RandomizedResponse,
    ReportNoisyMax,
    exponential_mechanism,
    report_noisy_max,
    report_noisy_min,
)
from skhybrid.mechanisms import _noise

ALPHA = 1e-6
Z = stats.norm.isf(ALPHA / 2)  # two-sided z threshold at α = 1e-6 (≈ 4.89)


def _rng(seed):
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- Laplace


@pytest.mark.parametrize("epsilon, sensitivity", [(1.0, 1.0), (0.3, 2.5)])
def test_laplace_matches_claimed_distribution(epsilon, sensitivity):
    n, value = 60_000, 3.0
    mech = LaplaceMechanism(epsilon, sensitivity)
    b = sensitivity / epsilon
    assert mech.scale == pytest.approx(b)
    noise = mech(np.full(n, value), _rng(1)) - value
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > ALPHA
    # E|X| = b, sd(|X|) = b.
    assert abs(np.mean(np.abs(noise)) - b) < Z * b / math.sqrt(n)


def test_laplace_ks_rejects_wrong_scale():
    # The test has power: Laplace(2Δ/ε) draws are rejected against Laplace(Δ/ε).
    noise = _rng(2).laplace(0.0, 2.0, 20_000)
    assert stats.kstest(noise, stats.laplace(scale=1.0).cdf).pvalue < ALPHA


def test_laplace_scalar_and_shape():
    mech = LaplaceMechanism(1.0)
    assert np.ndim(mech(0.0, _rng(0))) == 0
    assert mech(np.zeros((3, 4)), _rng(0)).shape == (3, 4)


# --------------------------------------------------------------------------- Gaussian


@pytest.mark.parametrize("epsilon, delta, sensitivity", [(1.0, 1e-5, 1.0), (3.0, 1e-6, 0.5)])
def test_gaussian_matches_analytic_calibration(epsilon, delta, sensitivity):
    n = 60_000
    mech = GaussianMechanism(epsilon, delta, sensitivity)
    sigma = comp.analytic_gaussian_sigma(epsilon, delta, sensitivity)
    assert mech.sigma == pytest.approx(sigma)
    # Analytic calibration is tight: the exact curve at ε is δ (Balle & Wang 2018, Thm 8).
    assert comp.gaussian_delta(sensitivity / mech.sigma, epsilon) == pytest.approx(delta, rel=1e-6)
    # The released noise is the discrete Gaussian of the lattice: at least sigma, and
    # distributed as a Gaussian of its own sigma (2048 lattice steps per sd).
    g, sigma_int, _ = mech.lattice(n)
    sigma_eff = g * sigma_int
    assert sigma_eff >= sigma
    noise = mech(np.full(n, -1.0), _rng(3)) + 1.0
    assert stats.kstest(noise, stats.norm(scale=sigma_eff).cdf).pvalue > ALPHA
    # E[X²] = σ², sd(X²) = σ² √2.
    assert abs(np.mean(noise**2) - sigma_eff**2) < Z * sigma_eff**2 * math.sqrt(2.0 / n)


def test_gaussian_classic_calibration():
    mech = GaussianMechanism(0.5, 1e-5, 2.0, calibration="classic")
    sigma = 2.0 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5
    assert mech.sigma == pytest.approx(sigma)
    noise = mech(np.zeros(20_000), _rng(4))
    g, sigma_int, _ = mech.lattice(20_000)
    assert g * sigma_int >= sigma
    assert stats.kstest(noise, stats.norm(scale=g * sigma_int).cdf).pvalue > ALPHA
    # Classic σ is never below analytic σ.
    assert mech.sigma >= GaussianMechanism(0.5, 1e-5, 2.0).sigma


def test_gaussian_ks_rejects_variance_as_std():
    sigma = 3.0
    noise = _rng(5).normal(0.0, sigma**2, 20_000)
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue < ALPHA


# --------------------------------------------------------------------------- exponential mechanism

SCORES = np.linspace(0.0, 4.0, 10)


def _frequencies(select, n_candidates, n, seed):
    rng = _rng(seed)
    picks = np.fromiter((select(rng) for _ in range(n)), dtype=int, count=n)
    return np.bincount(picks, minlength=n_candidates)


def _softmax(x):
    w = np.exp(x - x.max())
    return w / w.sum()


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_mechanism_frequencies(monotonic):
    epsilon, sensitivity, n = 1.0, 2.0, 20_000
    mech = ExponentialMechanism(epsilon, sensitivity, monotonic=monotonic)
    # McSherry & Talwar 2007: P(i) ∝ exp(ε u_i / (2Δ)); exp(ε u_i / Δ) for monotone scores.
    factor = epsilon / (sensitivity if monotonic else 2 * sensitivity)
    expected = _softmax(factor * SCORES)
    counts = _frequencies(lambda rng: mech(SCORES, rng), SCORES.size, n, seed=6)
    assert stats.chisquare(counts, n * expected).pvalue > ALPHA
    # The wrong factor is rejected by the same test (power check).
    wrong = _softmax((2 * factor if not monotonic else factor / 2) * SCORES)
    assert stats.chisquare(counts, n * wrong).pvalue < ALPHA


def test_exponential_mechanism_functional_form_and_exclusion():
    scores = np.array([0.0, -np.inf, 1.0, -np.inf])
    rng_a, rng_b = _rng(7), _rng(7)
    mech = ExponentialMechanism(0.5, 1.0)
    picks = [mech(scores, rng_a) for _ in range(500)]
    assert picks == [exponential_mechanism(scores, sensitivity=1.0, epsilon=0.5, rng=rng_b)
                     for _ in range(500)]
    # -inf excludes a candidate.
    assert set(picks) <= {0, 2}


# --------------------------------------------------------------------------- report-noisy-max


def _rnm_exact(scores, b):
    """P(argmax_i u_i + Lap(b)_i = i) by quadrature: ∫ f(x − u_i) Π_{j≠i} F(x − u_j) dx."""
    def pdf(z):
        return math.exp(-abs(z) / b) / (2 * b)

    def cdf(z):
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0) / b), 1 - 0.5 * np.exp(-np.abs(z) / b))

    lo, hi = scores.min() - 40 * b, scores.max() + 40 * b
    probs = []
    for i in range(scores.size):
        others = np.delete(scores, i)

        def integrand(x, i=i, others=others):
            return pdf(x - scores[i]) * np.prod(cdf(x - others))

        val, _ = integrate.quad(integrand, lo, hi, points=np.unique(scores), limit=200,
                                epsabs=1e-12, epsrel=1e-10)
        probs.append(val)
    return np.array(probs)


def test_report_noisy_max_exact_probabilities():
    epsilon, sensitivity, n = 1.0, 1.0, 20_000
    b = 2 * sensitivity / epsilon  # scale for non-monotone scores
    exact = _rnm_exact(SCORES, b)
    assert exact.sum() == pytest.approx(1.0, abs=1e-8)
    mech = ReportNoisyMax(epsilon, sensitivity)
    assert mech.scale == b
    counts = _frequencies(lambda rng: mech(SCORES, rng), SCORES.size, n, seed=8)
    assert stats.chisquare(counts, n * exact).pvalue > ALPHA
    # Power check: the monotone scale Δ/ε would be rejected.
    assert stats.chisquare(counts, n * _rnm_exact(SCORES, b / 2)).pvalue < ALPHA
    # Monotone scores use Laplace(Δ/ε) (Dwork & Roth 2014, Claim 3.9).
    mono = ReportNoisyMax(epsilon, sensitivity, monotonic=True)
    counts = _frequencies(lambda rng: mono(SCORES, rng), SCORES.size, n, seed=9)
    assert stats.chisquare(counts, n * _rnm_exact(SCORES, b / 2)).pvalue > ALPHA


def test_report_noisy_max_matches_direct_simulation_and_shift_invariance():
    epsilon, sensitivity, n = 0.7, 1.5, 2_000
    b = 2 * sensitivity / epsilon
    rng = _rng(10)
    api = [report_noisy_max(SCORES, sensitivity=sensitivity, epsilon=epsilon, rng=rng)
           for _ in range(n)]
    # The same seed, drawn by hand: exact discrete Laplace noise on the lattice scores,
    # first index on ties -- identical selections.
    mech = ReportNoisyMax(epsilon, sensitivity)
    g, S, t = mech.lattice()
    assert g <= sensitivity * 2.0**-20 and S == math.floor(sensitivity / g) + 1
    assert t == math.ceil(2 * S / Fraction(epsilon)) and t * g >= b  # never below 2Δ/ε
    rng = _rng(10)
    k = np.rint(SCORES / g).astype(np.int64)
    direct = [int(np.argmax(k - k.max() + _noise.discrete_laplace(rng, t, (SCORES.size,))))
              for _ in range(n)]
    assert np.array_equal(api, direct)
    # Adding a constant to every score changes nothing, draw for draw.
    rng = _rng(10)
    shifted = [report_noisy_max(SCORES + 1e3, sensitivity=sensitivity, epsilon=epsilon, rng=rng)
               for _ in range(n)]
    assert np.array_equal(api, shifted)
    # Min of scores is max of negated scores.
    rng_a, rng_b = _rng(11), _rng(11)
    assert [report_noisy_min(SCORES, sensitivity=1.0, epsilon=1.0, rng=rng_a) for _ in range(200)] == \
        [report_noisy_max(-SCORES, sensitivity=1.0, epsilon=1.0, rng=rng_b) for _ in range(200)]


def test_report_noisy_max_distribution_shift_invariant_independent_seeds():
    n = 20_000
    mech = ReportNoisyMax(1.0, 1.0)
    a = _frequencies(lambda rng: mech(SCORES, rng), SCORES.size, n, seed=12)
    b = _frequencies(lambda rng: mech(SCORES - 7.0, rng), SCORES.size, n, seed=13)
    keep = (a + b) > 0
    assert stats.chi2_contingency(np.vstack([a[keep], b[keep]]))[1] > ALPHA


# --------------------------------------------------------------------------- randomized response


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_randomized_response_keep_probability(epsilon):
    n = 60_000
    mech = RandomizedResponse(epsilon)
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    assert mech.keep_probability == pytest.approx(keep)
    for bit in (0, 1):
        reports = mech(np.full(n, bit), _rng(14 + bit))
        assert reports.dtype == np.int8 and set(np.unique(reports)) <= {0, 1}
        kept = int(np.count_nonzero(reports == bit))
        assert stats.binomtest(kept, n, keep).pvalue > ALPHA


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_randomized_response_debias_is_unbiased(epsilon):
    mech = RandomizedResponse(epsilon)
    assert mech.c_epsilon == pytest.approx((math.exp(epsilon) + 1) / (math.exp(epsilon) - 1))
    # Exact: debias of the expected report mean is the true fraction p.
    q = mech.keep_probability
    for p in (0.0, 0.3, 1.0):
        assert mech.debias(np.array([p * q + (1 - p) * (1 - q)])) == pytest.approx(p)
    # Monte Carlo: 60k agents with 30 % ones, error within Z standard errors.
    n, p = 60_000, 0.3
    bits = (np.arange(n) < p * n).astype(int)
    est = mech.debias(mech(bits, _rng(16)))
    mean = p * q + (1 - p) * (1 - q)
    se = mech.c_epsilon * math.sqrt(mean * (1 - mean) / n)
    assert abs(est - p) < Z * se


@pytest.mark.parametrize("epsilon", [710.0, 1e6])
def test_randomized_response_debias_past_exp_overflow(epsilon):
    # e^ε overflows a double past ε ≈ 709.8; the debiasing once computed it (OverflowError
    # after SelectThenEstimate had charged). Here every report is kept, so debias = mean.
    mech = RandomizedResponse(epsilon)
    assert mech.debias(np.array([1, 0, 1, 1])) == 0.75


def test_randomized_response_debias_axis():
    mech = RandomizedResponse(1.0)
    reports = mech(np.zeros((4, 5000), dtype=int), _rng(17))
    assert mech.debias(reports, axis=1).shape == (4,)


# --------------------------------------------------------------------------- Gaussian RR


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (0.5, 1e-3)])
def test_gaussian_randomized_response_sigma_and_distribution(epsilon, delta):
    n = 60_000
    mech = GaussianRandomizedResponse(epsilon, delta)
    # Kohen & Sheffet §2: RR_{ε,δ}(b) ~ N(b, 2 ln(2/δ)/ε²).
    sigma = math.sqrt(2 * math.log(2 / delta)) / epsilon
    assert sigma <= mech.sigma <= sigma * 1.001  # the paper's sigma, on the lattice
    sigma = mech.sigma
    bits = np.arange(n) % 2
    noise = mech(bits, _rng(18)) - bits
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > ALPHA
    assert abs(np.mean(noise**2) - sigma**2) < Z * sigma**2 * math.sqrt(2.0 / n)
