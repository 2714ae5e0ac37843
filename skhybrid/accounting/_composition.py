"""Composition theorems and privacy curves used by the accountant.

Every function here is pure (no state, no randomness) and works on plain floats.
Sums of binomial terms are evaluated in the log domain, so that the optimal
composition stays finite for ``k`` up to ``1e5`` and per-use ``epsilon`` down to
``1e-4``. An infinite ``epsilon`` is accepted everywhere and yields an infinite
(vacuous) guarantee.

Conventions: ``epsilon >= 0`` (``np.inf`` allowed), ``0 <= delta <= 1``, ``k >= 1``
adaptive uses. Every root-find is followed by a feasibility check, so a returned
epsilon (or noise scale) always satisfies the stated guarantee in floating point,
erring on the conservative side by at most ~1e-12.

References
----------
.. [DR14] C. Dwork and A. Roth. The Algorithmic Foundations of Differential
   Privacy, 2014.
.. [DRV10] C. Dwork, G. N. Rothblum and S. Vadhan. Boosting and differential
   privacy. FOCS 2010.
.. [KOV15] P. Kairouz, S. Oh and P. Viswanath. The composition theorem for
   differential privacy. ICML 2015.
.. [MV16] J. Murtagh and S. Vadhan. The complexity of computing the optimal
   composition of differential privacy. TCC 2016.
.. [BS16] M. Bun and T. Steinke. Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016.
.. [CKS20] C. Canonne, G. Kamath and T. Steinke. The discrete Gaussian for
   differential privacy. NeurIPS 2020.
.. [BW18] B. Balle and Y.-X. Wang. Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising. ICML 2018.
.. [BBG18] B. Balle, G. Barthe and M. Gaboardi. Privacy amplification by
   subsampling: tight analyses via couplings and divergences. NeurIPS 2018.
.. [CR21] M. Cesar and R. Rogers. Bounding, concentrating, and truncating:
   unifying privacy loss composition for data analytics. ALT 2021.
"""

import math
import numbers
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln, log_ndtr

from ..utils._rounding import float_at_least, float_at_most, float_sqrt_at_least

__all__ = [
    "advanced_composition",
    "analytic_gaussian_sigma",
    "basic_composition",
    "calibrate_gaussian_sigma",
    "calibrate_laplace_scale",
    "calibrate_pure_epsilon",
    "classic_gaussian_sigma",
    "compose_gaussian_mu",
    "gaussian_delta",
    "gaussian_epsilon",
    "kov_composition",
    "kov_from_sums",
    "optimal_homogeneous_delta",
    "optimal_homogeneous_epsilon",
    "poisson_subsampled_epsilon",
    "pure_to_zcdp",
    "randomized_response_epsilon",
    "zcdp_delta",
    "zcdp_epsilon",
]

# Floor for log-probabilities handed to root finders: brentq cannot interpolate -inf.
_LOG_FLOOR = -1e4
# Relative safety margin of the calibration helpers: the privacy curves carry
# ~1e-13 relative rounding noise, so a caller that recomposes the returned
# parameter in another (equivalent) floating-point order must still land inside
# the budget. It costs nothing measurable (1e-9 relative).
_CALIBRATION_MARGIN = 1e-9
#: Views within this relative ε of the smallest are reported by their δ (smallest first):
#: the accountant does not trade a δ budget for a negligible saving in ε.
REPORT_RTOL = 1e-4


# Unit roundoff scale of a double (one ulp of 1.0).
_ULP = 2.0**-52


def _round_up(x, rel):
    """``x`` padded by a relative ``rel`` and moved one float up (outward rounding)."""
    if not math.isfinite(x):
        return x
    return math.nextafter(x + rel * abs(x), math.inf)


# --------------------------------------------------------------------------- validation


def _check_nonneg(value, name, allow_inf=True):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}.") from None
    if math.isnan(value) or value < 0 or (not allow_inf and math.isinf(value)):
        kind = "a finite number >= 0" if not allow_inf else "a number >= 0 (np.inf allowed)"
        raise ValueError(f"{name} must be {kind}, got {value!r}.")
    return value


def _check_prob(value, name, low_open=False, high_open=False):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}.") from None
    bad = (
        math.isnan(value)
        or value < 0
        or value > 1
        or (low_open and value == 0)
        or (high_open and value == 1)
    )
    if bad:
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {interval}, got {value!r}.")
    return value


def _check_count(k, name="k", minimum=1):
    # ValueError, not TypeError, for every bad parameter: the project-wide contract.
    integral = isinstance(k, numbers.Integral) or (
        isinstance(k, numbers.Real) and float(k).is_integer()
    )
    if isinstance(k, (bool, np.bool_)) or not integral:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {k!r}.")
    k = int(k)
    if k < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {k!r}.")
    return k


def _check_arrays(epsilons, deltas):
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    dels = np.atleast_1d(np.asarray(deltas, dtype=float))
    if eps.ndim != 1 or dels.ndim != 1:
        raise ValueError("epsilons and deltas must be 1-d sequences of per-use parameters.")
    if dels.size == 1 and eps.size != 1:
        dels = np.full(eps.shape, dels[0])
    if eps.shape != dels.shape:
        raise ValueError(
            f"epsilons and deltas must have the same length, got {eps.size} and {dels.size}."
        )
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ValueError("epsilons must all be >= 0 (np.inf allowed).")
    if np.any(np.isnan(dels)) or np.any(dels < 0) or np.any(dels > 1):
        raise ValueError("deltas must all lie in [0, 1].")
    return eps, dels


def _nudge(x, feasible, step, direction, limit=None, max_iter=200):
    """Move ``x`` by growing multiples of ``step`` until ``feasible(x)``.

    Root-finders return a point within tolerance of the boundary, on either side;
    the guarantee must hold exactly, so we step onto the safe side.
    """
    k = 0
    while not feasible(x) and k < max_iter:
        x = x + direction * step * 2.0**k
        if limit is not None:
            x = min(x, limit) if direction > 0 else max(x, limit)
            if x == limit:
                break
        k += 1
    return x


# --------------------------------------------------------------------------- (ε, δ) composition


def basic_composition(epsilons, deltas):
    """Basic (sequential) composition of (ε_i, δ_i)-DP mechanisms.

    Dwork & Roth [DR14]_, Theorem 3.16 (valid for adaptive composition, Thm 3.16 and
    its adaptive extension in Sec. 3.5): the composition is ``(Σ ε_i, Σ δ_i)``-DP.

    Parameters
    ----------
    epsilons : array-like of shape (k,)
        Per-use ε_i >= 0 (``np.inf`` allowed).
    deltas : array-like of shape (k,) or float
        Per-use δ_i in [0, 1]; a scalar is broadcast.

    Returns
    -------
    epsilon : float
        ``Σ ε_i``.
    delta : float
        ``min(1, Σ δ_i)`` (a δ above 1 carries no extra meaning).
    """
    eps, dels = _check_arrays(epsilons, deltas)
    return float(np.sum(eps)), float(min(1.0, np.sum(dels)))


def advanced_composition(epsilon, delta, k, slack):
    """Advanced composition of ``k`` adaptive uses of an (ε, δ)-DP mechanism.

    Dwork, Rothblum & Vadhan [DRV10]_, Theorem 3.3 (Dwork & Roth [DR14]_,
    Theorem 3.20): for every ``slack`` δ' > 0 the k-fold adaptive composition is
    (ε', kδ + δ')-DP with

        ε' = sqrt(2 k ln(1/δ')) ε + k ε (e^ε − 1).

    Parameters
    ----------
    epsilon : float
        Per-use ε >= 0.
    delta : float
        Per-use δ in [0, 1].
    k : int
        Number of adaptive uses, >= 1.
    slack : float
        δ' in [0, 1]; ``slack = 0`` makes ε' infinite, so basic composition wins.

    Returns
    -------
    epsilon : float
        ``min(ε', k ε)``: advanced composition can be worse than basic (k = 10,
        ε = 1 gives 32.4 against 10), and both bounds are valid.
    delta : float
        ``min(1, k δ + slack)`` in either case. When the basic bound is the
        smaller one the slack is not needed, but it is still reported so that the
        returned pair is a function of the inputs only (conservative by ``slack``).
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    delta = _check_prob(delta, "delta")
    k = _check_count(k)
    slack = _check_prob(slack, "slack")
    total_delta = min(1.0, k * delta + slack)
    basic = k * epsilon
    if math.isinf(epsilon) or slack == 0:
        return basic, total_delta
    adv = math.sqrt(2.0 * k * math.log(1.0 / slack)) * epsilon + k * epsilon * math.expm1(epsilon)
    return float(min(adv, basic)), total_delta


def kov_composition(epsilons, deltas, slack):
    """Kairouz–Oh–Viswanath closed-form bound for heterogeneous composition.

    Kairouz, Oh & Viswanath [KOV15]_, Theorem 3.5: for any ``slack`` δ̃ in (0, 1]
    the adaptive composition of (ε_l, δ_l)-DP mechanisms is
    (ε̃, 1 − (1 − δ̃) Π(1 − δ_l))-DP with ε̃ the minimum of

    * ``Σ ε_l``,
    * ``Σ ε_l tanh(ε_l/2) + sqrt(2 Σ ε_l² ln(e + sqrt(Σ ε_l²) / δ̃))``,
    * ``Σ ε_l tanh(ε_l/2) + sqrt(2 Σ ε_l² ln(1/δ̃))``,

    where ``tanh(ε/2) = (e^ε − 1)/(e^ε + 1)``. Note the division by δ̃ inside the
    logarithm of the second term: some public code multiplies instead, which is
    wrong (docs/notes/building_blocks.rst, "Composition").

    Parameters
    ----------
    epsilons : array-like of shape (k,)
        Per-use ε_l >= 0 (``np.inf`` allowed).
    deltas : array-like of shape (k,) or float
        Per-use δ_l in [0, 1].
    slack : float
        δ̃ in [0, 1]; ``slack = 0`` leaves only the first (basic) term.

    Returns
    -------
    epsilon : float
        ε̃.
    delta : float
        ``1 − (1 − slack) Π(1 − δ_l)``.
    """
    eps, dels = _check_arrays(epsilons, deltas)
    slack = _check_prob(slack, "slack")
    with np.errstate(divide="ignore", invalid="ignore"):
        return kov_from_sums(float(np.sum(eps)), float(np.sum(eps**2)),
                             float(np.sum(eps * np.tanh(eps / 2.0))),
                             float(np.sum(np.log1p(-dels))), slack)


def kov_from_sums(sum_eps, sum_sq, drift, log_keep, slack):
    """:func:`kov_composition` from its sufficient statistics.

    ``sum_eps = Σ ε_l``, ``sum_sq = Σ ε_l²``, ``drift = Σ ε_l tanh(ε_l/2)`` and
    ``log_keep = Σ ln(1 − δ_l)``: the accountant keeps these as running sums, so a
    view costs O(1) however long the history (Kairouz, Oh & Viswanath [KOV15]_, Thm 3.5).
    """
    total_delta = float(-math.expm1(math.log1p(-slack) + log_keep))
    basic = float(sum_eps)
    if math.isinf(basic) or slack == 0:
        return basic, total_delta
    second = drift + math.sqrt(2.0 * sum_sq * math.log(math.e + math.sqrt(sum_sq) / slack))
    third = drift + math.sqrt(2.0 * sum_sq * math.log(1.0 / slack))
    # Rounded outward: both are sums of non-negative terms, each within a few ulps
    # (per-event ε·tanh(ε/2) and ε² rounded to nearest, then log, sqrt and products).
    second, third = _round_up(second, 16.0 * _ULP), _round_up(third, 16.0 * _ULP)
    return float(min(basic, second, third)), total_delta


# --------------------------------------------------------------------------- optimal composition


@lru_cache(maxsize=8)
def _log_binom(k):
    """``ln C(k, j)`` for ``j = 0..k`` (cached: calibration evaluates it many times)."""
    j = np.arange(k + 1, dtype=float)
    out = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
    out.setflags(write=False)
    return out


def _log_delta_opt(epsilon, k, eps_g, upper=False):
    """``ln δ_opt(ε_g)`` of the Murtagh–Vadhan form, evaluated term-wise in the log domain.

    With ``p = e^ε/(1+e^ε)`` the j-th term is ``Bin(k, p).pmf(j) (1 − e^{ε_g − (2j−k)ε})``:
    every term with ``j >= ceil((ε_g + kε)/(2ε))`` is non-negative, so the sum is a
    logsumexp with no cancellation.

    ``upper=True``: an upper bound on the exact value for these float inputs, every
    rounding taken on the unfavourable side (:func:`_log_sum_terms`); the budget check
    and the calibrations decide on it.
    """
    if eps_g >= k * epsilon:
        return -np.inf
    j0 = max(0, math.ceil((eps_g + k * epsilon) / (2.0 * epsilon)) - upper)
    if j0 > k:
        return -np.inf
    if k > _WINDOW_MIN_K:
        window = _log_delta_opt_window(epsilon, k, eps_g, j0, upper)
        if window is not None:
            return window
    j = np.arange(j0, k + 1, dtype=float)
    # (The same elementwise values as the cached table; a huge k is not tabulated whole.)
    log_binom = (_log_binom(k)[j0:] if k <= _WINDOW_MIN_K
                 else gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0))
    log_pmf = log_binom + j * epsilon - k * np.logaddexp(0.0, epsilon)
    return _log_sum_terms(log_pmf, j, epsilon, k, eps_g, upper)


# Accuracy allowed for scipy's gammaln at integers 1..3e7: against 50-digit mpmath (5,000
# points) it is within 2.01·2^-52·max(|value|, 1); 8·2^-52·(|value| + 1) is the margin.
_GAMMALN_ULPS = 8.0


def _log_sum_terms(log_pmf, j, epsilon, k, eps_g, upper=False):
    """``ln Σ_j pmf_j (1 − e^{x_j})``, x_j = ε_g − (2j − k)ε, over the terms with x_j < 0.

    ``upper=True`` bounds every float error and takes it on the unfavourable side:
    ``ln pmf`` (sums of ``gammaln`` values, products and ``logaddexp``, each within a
    few ulps of its magnitude) is raised by a bound on its absolute error, ``x`` is
    lowered by its own (so the factor 1 − e^x, decreasing in x, is an upper bound, and a
    term whose x rounded onto 0 still counts), and the log-sum-exp is raised by the
    summation's error (m terms: m ulps relative).
    """
    x = eps_g - (2.0 * j - k) * epsilon
    if upper:
        # ln C(k, j) = ln k! − ln j! − ln (k−j)!, each term in [0, ln k!]: three gammaln
        # errors and two subtractions; then + jε (one product) and − k·ln(1 + e^ε)
        # (logaddexp's few ulps, times k) and the two sums.
        L = float(np.logaddexp(0.0, epsilon))
        g = float(gammaln(k + 1.0))
        log_pmf = log_pmf + _ULP * ((2.0 * _GAMMALN_ULPS + 8.0) * g + 3.0 * _GAMMALN_ULPS
                                    + 8.0 + 4.0 * k * epsilon + 6.0 * k * L)
        x = x - 4.0 * _ULP * (eps_g + k * epsilon)
    # Rounding can put the boundary term slightly on the wrong side; dropping a
    # term whose true value is <= 0 can only increase δ (conservative).
    x = np.minimum(x, 0.0)
    with np.errstate(divide="ignore"):
        factor = np.log(-np.expm1(x))
        log_terms = log_pmf + factor
    if upper:  # (the factor's own rounding: expm1 and log, a few ulps of its value)
        np.add(log_terms, 2.0 * _ULP * (np.abs(factor) + 2.0), out=log_terms,
               where=np.isfinite(factor))
    # log-sum-exp without scipy's per-call overhead (most sums here are short)
    top = float(np.max(log_terms))
    if not math.isfinite(top):
        return top
    out = top + math.log(float(np.sum(np.exp(log_terms - top))))
    if upper:  # the shifted exps (each within (1 + |shift|)e^shift ulps), the sum of m
        # terms (m ulps), its log (ln m + 1 more) and the last sum (|out|)
        out += _ULP * (2.0 * log_terms.size + 8.0 + 2.0 * abs(out))
    return out


#: Above this many uses the binomial sum is taken over a window around its mass.
_WINDOW_MIN_K = 5000


def _log_delta_opt_window(epsilon, k, eps_g, j0, upper=False):
    """The sum of :func:`_log_delta_opt` over ``j`` within 45 standard deviations of the
    binomial's mode (or of ``j0`` when it lies beyond): O(sqrt k) instead of O(k).

    The binomial pmf is log-concave, so every dropped term is at most the pmf at the
    window's edge on its side; the window is used only when (k + 1) times that edge is
    below ``e^-800`` of the largest kept term, i.e. when the dropped terms are zero in
    floating point anyway (``exp`` underflows at -745). Otherwise ``None``: sum them all.
    """
    log_p = epsilon - np.logaddexp(0.0, epsilon)
    p = math.exp(log_p)
    half = int(math.ceil(45.0 * math.sqrt(k * p * (1.0 - p)))) + 2
    mode = int(math.floor((k + 1) * p))
    lo = max(j0, mode - half)
    hi = min(k, max(lo, mode) + half)
    if hi - lo + 1 >= (k - j0 + 1) // 2:
        return None
    j = np.arange(lo, hi + 1, dtype=float)
    log_pmf = (gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
               + j * epsilon - k * np.logaddexp(0.0, epsilon))
    total = _log_sum_terms(log_pmf, j, epsilon, k, eps_g, upper)
    edges = ([log_pmf[0]] if lo > j0 else []) + ([log_pmf[-1]] if hi < k else [])
    if max(edges) + math.log(k + 1.0) > total - 800.0:
        return None
    return total  # (the dropped terms add below e^-800 of it: nothing in float)


def _log_total_delta(log_delta_opt, base):
    """``ln(1 − (1−δ)^k (1 − δ_opt))`` with ``base = 1 − (1−δ)^k``."""
    if base == 0.0:
        return log_delta_opt
    return float(np.logaddexp(math.log(base), math.log1p(-base) + log_delta_opt))


def _opt_total_delta(epsilon, k, base, eps_g, delta):
    """An upper bound on the exact total δ of the optimal composition, for these float
    inputs; the one expression used both to report δ and to certify a root, so the two
    can never disagree by a rounding error.

    ``base`` is the float 1 − (1−δ)^k; the total, base + (1 − base)·δ_opt, grows with
    it, so ``base`` is raised by its own error bound (log1p, a product and expm1: a few
    ulps, :func:`_base_up`).
    """
    base_up = _base_up(base, delta, k)
    log_total = _log_total_delta(_log_delta_opt(epsilon, k, eps_g, upper=True), base_up)
    if base_up > 0 and math.isfinite(log_total):  # (logaddexp, log and log1p of base)
        log_total += _ULP * (4.0 * abs(log_total) + 4.0)
    return float(min(1.0, math.exp(log_total) * (1.0 + 2.0 * _ULP)))


def _base_up(base, delta=None, k=None):
    """1 − (1−δ)^k computed as ``-expm1(k·log1p(-δ))``, raised by its error bound (a
    few ulps); no more than kδ rounded up (Bernoulli's inequality), which is exact at
    k = 1."""
    up = min(1.0, base * (1.0 + 8.0 * _ULP))
    if delta is not None:
        up = min(up, float_at_least(Fraction(delta) * k))
    return up


def optimal_homogeneous_delta(epsilon, delta, k, eps_g):
    """δ of the optimal k-fold composition of an (ε, δ)-DP mechanism at ε_g.

    Kairouz, Oh & Viswanath [KOV15]_, Theorem 3.3, in the form of Murtagh & Vadhan
    [MV16]_ valid for every ε_g >= 0: the k-fold adaptive composition is
    (ε_g, 1 − (1−δ)^k (1 − δ_opt(ε_g)))-DP, and no smaller δ is valid in general, with

        δ_opt(ε_g) = (1+e^ε)^{−k} Σ_{j ≥ ⌈(ε_g+kε)/(2ε)⌉}^{k} C(k,j) (e^{jε} − e^{ε_g} e^{(k−j)ε}).

    At the lattice points ε_g = (k − 2i)ε this equals KOV's δ_i. The sum is
    evaluated in the log domain (the naive form overflows near k = 1000).

    Parameters
    ----------
    epsilon : float
        Per-use ε >= 0 (``np.inf`` allowed: the result is then 1 for finite ε_g).
    delta : float
        Per-use δ in [0, 1].
    k : int
        Number of adaptive uses, >= 1.
    eps_g : float
        Target ε_g >= 0.

    Returns
    -------
    total_delta : float
        ``1 − (1−δ)^k (1 − δ_opt(ε_g))``, rounded up: never below the exact value for
        these float inputs (every rounding bounded; about 1e-13 relative at k = 1,000).
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    delta = _check_prob(delta, "delta")
    k = _check_count(k)
    eps_g = _check_nonneg(eps_g, "eps_g")
    base = -math.expm1(k * math.log1p(-delta))
    if math.isinf(epsilon):
        return 1.0 if not math.isinf(eps_g) else _base_up(base, delta, k)
    if delta == 1.0:
        return 1.0
    if epsilon == 0.0:
        return _base_up(base, delta, k)
    return _opt_total_delta(epsilon, k, base, eps_g, delta)


def optimal_homogeneous_epsilon(epsilon, delta, k, target_delta):
    """Smallest ε_g of the optimal k-fold composition of (ε, δ)-DP at a target δ.

    Inverts :func:`optimal_homogeneous_delta` (Kairouz, Oh & Viswanath [KOV15]_,
    Theorem 3.3; Murtagh & Vadhan [MV16]_): the answer is the smallest ε_g >= 0
    with ``1 − (1−δ)^k (1 − δ_opt(ε_g)) <= target_delta``. The total δ is continuous
    and decreasing in ε_g, so it is found with Brent's method on its logarithm, and
    feasibility is judged on :func:`optimal_homogeneous_delta`'s upper bound: the
    answer is never below the exact one for these float inputs. It never exceeds basic
    composition ``kε`` (where δ_opt = 0; rounded up).

    Parameters
    ----------
    epsilon : float
        Per-use ε >= 0 (``np.inf`` allowed, result inf).
    delta : float
        Per-use δ in [0, 1].
    k : int
        Number of adaptive uses, >= 1.
    target_delta : float
        Total δ in [0, 1].

    Returns
    -------
    eps_g : float
        The composed ε, or ``np.inf`` if even ``ε_g = kε`` is infeasible, i.e. if
        ``1 − (1−δ)^k > target_delta``.
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    delta = _check_prob(delta, "delta")
    k = _check_count(k)
    target_delta = _check_prob(target_delta, "target_delta")
    return _optimal_homogeneous_epsilon(float(epsilon), float(delta), int(k),
                                        float(target_delta))


@lru_cache(maxsize=4096)
def _optimal_homogeneous_epsilon(epsilon, delta, k, target_delta):
    # Cached: the accountant's views and the calibrations ask for the same values often.
    if math.isinf(epsilon):
        return np.inf
    if delta == 1.0:
        return 0.0 if target_delta == 1.0 else np.inf
    log_keep = k * math.log1p(-delta)
    base = -math.expm1(log_keep)
    if _base_up(base, delta, k) > target_delta:
        return np.inf  # (δ_opt(kε) = 0: the total is then 1 − (1−δ)^k, here over the target)
    if epsilon == 0.0:
        return 0.0
    hi = float_at_least(Fraction(epsilon) * k)
    if target_delta == 0.0:
        return hi
    log_target = math.log(target_delta)

    def excess(eps_g):  # (locates the root; feasibility is judged by the upper bound)
        log_total = _log_total_delta(_log_delta_opt(epsilon, k, eps_g), base)
        return max(log_total, _LOG_FLOOR) - log_target

    if _opt_total_delta(epsilon, k, base, 0.0, delta) <= target_delta:
        return 0.0
    if excess(hi) > 0:  # only rounding can get here (base == target_delta)
        return hi
    # Tolerances relative to the scale (a root near 1e-12 needs steps far below 1e-13).
    root = brentq(excess, 0.0, hi, xtol=1e-14 * min(1.0, hi), rtol=4 * np.finfo(float).eps)
    root = _nudge(
        root,
        lambda x: _opt_total_delta(epsilon, k, base, x, delta) <= target_delta,
        1e-13 * max(min(1.0, hi), root),
        +1,
        limit=hi,
    )
    return float(min(root, hi))


# --------------------------------------------------------------------------- zCDP


def pure_to_zcdp(epsilon):
    """zCDP parameter of an ε-DP mechanism: ρ = ε²/2.

    Bun & Steinke [BS16]_, Proposition 1.4. (For the exponential mechanism the
    bounded-range analysis of Cesar & Rogers [CR21]_ gives the better ε²/8.)

    Parameters
    ----------
    epsilon : float
        ε >= 0 (``np.inf`` allowed).

    Returns
    -------
    rho : float
        ε²/2 rounded up (never below the exact value).
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    return epsilon if math.isinf(epsilon) else float_at_least(Fraction(epsilon) ** 2 / 2)


def zcdp_epsilon(rho, delta):
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP.

    Canonne, Kamath & Steinke [CKS20]_, Proposition 12 / Corollary 13:

        ε = inf_{α>1} αρ + (ln(1/δ) + (α−1) ln(1 − 1/α) − ln α) / (α − 1).

    Writing ``u = α − 1`` and ``L = ln(1/δ)``, the derivative of the objective is
    ``ρ − (L − ln(1+u))/u²``, which vanishes at the unique root of
    ``ρu² + ln(1+u) = L``; the objective is decreasing before it and increasing
    after, so that root (found with Brent's method in ``ln u``) is the global
    minimiser. The result is clipped to ``[0, ρ + 2 sqrt(ρ L)]``, the second
    value being the looser bound of Bun & Steinke [BS16]_, Proposition 1.3.

    Parameters
    ----------
    rho : float
        ρ >= 0 (``np.inf`` allowed).
    delta : float
        δ in [0, 1].

    Returns
    -------
    epsilon : float
        ``np.inf`` when ``delta = 0`` and ``rho > 0``.
    """
    rho = _check_nonneg(rho, "rho")
    delta = _check_prob(delta, "delta")
    if rho == 0.0 or delta == 1.0:
        return 0.0
    if math.isinf(rho) or delta == 0.0:
        return np.inf
    L = -math.log(delta)
    # Bun & Steinke's bound, rounded up: three roundings and a ≤ 1-ulp log/sqrt.
    bun_steinke = _round_up(rho + 2.0 * math.sqrt(rho * L), 8.0 * _ULP)

    def stationarity(t):
        u = math.exp(t)
        return rho * u * u + math.log1p(u) - L

    t_hi = 0.5 * math.log(L / rho) + 1e-9  # ρu² alone reaches L there
    t_lo = -700.0
    if stationarity(t_lo) >= 0:  # minimiser at u -> 0 (numerically): ρ is huge
        return bun_steinke
    t = brentq(stationarity, t_lo, t_hi, xtol=1e-13, rtol=4 * np.finfo(float).eps)
    # The objective at *any* u > 0 bounds ε, so it is evaluated at the float u itself,
    # as ρ(1+u) + L/u − ln(1 + 1/u) − ln(1+u)/u (the same value as CKS's
    # αρ + (L + (α−1) ln(1−1/α) − ln α)/(α−1)), and rounded outward.
    u = math.exp(t)
    terms = (rho + rho * u, L / u, -math.log1p(1.0 / u), -math.log1p(u) / u)
    eps = math.fsum(terms)
    # Each term is within 3 ulps of its exact value at this u (log and log1p within
    # 1 ulp, as in glibc/musl/macOS libm), and fsum rounds once, so the error is below
    # 4 ulps of Σ|term|; pad by 16.
    eps += 16.0 * _ULP * math.fsum(abs(x) for x in terms)
    eps = _round_up(eps, 0.0)
    return float(min(max(eps, 0.0), bun_steinke))


def zcdp_delta(rho, epsilon):
    """Smallest δ such that ρ-zCDP implies (ε, δ)-DP.

    Canonne, Kamath & Steinke [CKS20]_, Proposition 12 (the same bound as
    :func:`zcdp_epsilon`, solved for δ):

        δ = inf_{α>1} exp((α−1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α.

    With ``u = α − 1`` the logarithm of the bracket is
    ``u((1+u)ρ − ε) + u ln(u/(1+u)) − ln(1+u)``; its derivative in α is
    ``(2α−1)ρ − ε + ln(1 − 1/α)``, increasing in α, so its root (Brent's method in
    ``ln u``) is the global minimiser.

    Parameters
    ----------
    rho : float
        ρ >= 0 (``np.inf`` allowed).
    epsilon : float
        ε >= 0 (``np.inf`` allowed).

    Returns
    -------
    delta : float
        In [0, 1].
    """
    rho = _check_nonneg(rho, "rho")
    epsilon = _check_nonneg(epsilon, "epsilon")
    if rho == 0.0 or math.isinf(epsilon):
        return 0.0
    if math.isinf(rho):
        return 1.0

    def derivative(t):
        u = math.exp(t)
        return (2.0 * u + 1.0) * rho - epsilon + t - math.log1p(u)

    t_lo = -700.0
    if derivative(t_lo) >= 0:  # minimiser at α -> 1, where the bound tends to 1
        return 1.0
    t_hi = math.log((epsilon + 1.0) / (2.0 * rho) + 2.0)
    t = brentq(derivative, t_lo, t_hi, xtol=1e-13, rtol=4 * np.finfo(float).eps)
    u = math.exp(t)
    log_delta = u * ((1.0 + u) * rho - epsilon) + u * (t - math.log1p(u)) - math.log1p(u)
    return float(min(1.0, math.exp(log_delta)))


# --------------------------------------------------------------------------- Gaussian curve


def _log_gaussian_delta(mu, epsilon):
    """``ln δ(ε)`` of the Gaussian curve, for scalar ``0 < mu < inf`` and finite ε."""
    a = log_ndtr(mu / 2.0 - epsilon / mu)
    b = epsilon + log_ndtr(-mu / 2.0 - epsilon / mu)
    with np.errstate(divide="ignore"):
        return float(a + np.log(-np.expm1(min(b - a, 0.0))))


def gaussian_delta(mu, epsilon):
    """Privacy curve δ(ε) of the Gaussian mechanism with multiplier μ = Δ/σ.

    Balle & Wang [BW18]_, Theorem 8: adding N(0, σ²) noise to a query of ℓ2
    sensitivity Δ is (ε, δ)-DP if and only if

        δ >= Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ),   μ = Δ/σ.

    Both terms are computed with :func:`scipy.special.log_ndtr` and combined as
    ``e^a (1 − e^{b−a})``, so large ε underflows gracefully instead of giving nan.

    Parameters
    ----------
    mu : float or array-like
        μ >= 0 (``np.inf`` allowed: no noise).
    epsilon : float or array-like
        ε >= 0 (``np.inf`` allowed).

    Returns
    -------
    delta : float or ndarray
        Broadcast over the inputs.
    """
    mu_arr = np.asarray(mu, dtype=float)
    eps_arr = np.asarray(epsilon, dtype=float)
    if np.any(np.isnan(mu_arr)) or np.any(mu_arr < 0):
        raise ValueError("mu must be >= 0 (np.inf allowed).")
    if np.any(np.isnan(eps_arr)) or np.any(eps_arr < 0):
        raise ValueError("epsilon must be >= 0 (np.inf allowed).")
    mu_b, eps_b = np.broadcast_arrays(mu_arr, eps_arr)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = log_ndtr(mu_b / 2.0 - eps_b / mu_b)
        b = eps_b + log_ndtr(-mu_b / 2.0 - eps_b / mu_b)
        out = np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))
    out = np.where(np.isinf(mu_b), 1.0, out)
    out = np.where((mu_b == 0) | np.isinf(eps_b), 0.0, out)
    out = np.clip(out, 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


def gaussian_epsilon(mu, delta):
    """Smallest ε >= 0 at which a Gaussian mechanism with multiplier μ is (ε, δ)-DP.

    Inverts :func:`gaussian_delta` (Balle & Wang [BW18]_, Theorem 8), which is
    decreasing in ε. Because k Gaussian mechanisms with multipliers μ_i compose to
    exactly one with ``μ = sqrt(Σ μ_i²)`` (:func:`compose_gaussian_mu`), this is
    also the exact ε of any adaptive composition of Gaussian mechanisms.

    Parameters
    ----------
    mu : float
        μ = Δ/σ >= 0 (``np.inf`` allowed).
    delta : float
        δ in [0, 1].

    Returns
    -------
    epsilon : float
        0 when ``delta >= gaussian_delta(mu, 0)``; ``np.inf`` when ``delta = 0`` (and
        μ > 0) or μ is infinite (and δ < 1).
    """
    mu = _check_nonneg(mu, "mu")
    delta = _check_prob(delta, "delta")
    if mu == 0.0 or delta == 1.0:
        return 0.0
    if math.isinf(mu) or delta == 0.0:
        return np.inf
    if delta >= _gaussian_delta_upper(mu, 0.0):
        return 0.0
    log_target = math.log(delta)

    def excess(eps):
        return max(_log_gaussian_delta(mu, eps), _LOG_FLOOR) - log_target

    # Privacy loss ~ N(μ²/2, μ²) and δ(ε) <= P[loss > ε], so this is feasible.
    hi = mu * mu / 2.0 + mu * math.sqrt(2.0 * -log_target) + 1.0
    while excess(hi) > 0:
        hi *= 2.0
    root = brentq(excess, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    # Feasibility is judged by an upper bound on the exact δ(ε), not by the float curve,
    # whose tail cancellation can put it ~1e-11 below the exact value.
    root = _nudge(root, lambda e: _gaussian_delta_upper(mu, e) <= delta,
                  4.0 * _ULP * max(root, 1e-300), +1)
    return float(root)


# Accuracy allowed for scipy's log_ndtr. Against 50-digit mpmath (3,000 random points on
# each side) it is within 1.95 ulps of its value for x < 0 and within 0.98·2^-52 absolute
# for x > 0 (where the value is -Φ(-x), tiny); 8 ulps and 4·2^-52 are the margins taken.
_LOG_NDTR_RTOL = 8.0 * _ULP
_LOG_NDTR_ATOL = 4.0 * _ULP


def _log_ndtr_err(x, value, spread):
    """Bound on the absolute error of ``log_ndtr`` at a float ``x`` (itself within
    ``2^-52·spread`` of the exact argument) returning ``value``."""
    # d ln Φ(x)/dx = φ(x)/Φ(x): at most |x| + 1 for x <= 0, at most 2φ(x) for x > 0.
    slope = abs(x) + 1.0 if x <= 0 else 0.8 * math.exp(-0.5 * x * x)
    own = _LOG_NDTR_RTOL * abs(value) + (_LOG_NDTR_ATOL if x > 0 else 0.0)
    return own + 2.0 * _ULP * spread * slope + 1e-300


def _gaussian_delta_upper(mu, epsilon):
    """An upper bound on the exact Balle–Wang δ(ε) of μ, with every float error of
    :func:`gaussian_delta` bounded and taken on the unfavourable side.

    For scalar ``0 < mu < inf`` and finite ``epsilon >= 0``.
    """
    spread = mu / 2.0 + epsilon / mu  # scale of the arguments' rounding errors
    x1, x2 = mu / 2.0 - epsilon / mu, -mu / 2.0 - epsilon / mu
    a, lb = float(log_ndtr(x1)), float(log_ndtr(x2))
    err_a = _log_ndtr_err(x1, a, spread)
    b = epsilon + lb
    err_b = _log_ndtr_err(x2, lb, spread) + _ULP * (epsilon + abs(lb))
    d = b - a
    err_d = err_a + err_b + _ULP * (abs(a) + abs(b))
    # δ = e^a (1 − e^d), increasing in a and decreasing in d.
    upper = math.exp(a + err_a) * -math.expm1(d - err_d)
    # Never 0 by underflow: the exact δ is positive (if below the smallest float).
    return float(min(1.0, max(math.ulp(0.0), upper * (1.0 + 8.0 * _ULP))))


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """Smallest σ for which the Gaussian mechanism is (ε, δ)-DP (analytic calibration).

    Balle & Wang [BW18]_, Theorem 8 and Algorithm 1: the result is the smallest
    σ with ``gaussian_delta(sensitivity / σ, epsilon) <= delta``, found by Brent's
    method on μ = Δ/σ (δ is increasing in μ). Valid for every ε >= 0, unlike
    :func:`classic_gaussian_sigma`.

    Parameters
    ----------
    epsilon : float
        ε >= 0 (``np.inf`` gives σ = 0).
    delta : float
        δ in (0, 1]: no Gaussian mechanism is (ε, 0)-DP; δ = 1 needs no noise.
    sensitivity : float, default=1.0
        ℓ2 sensitivity Δ >= 0.

    Returns
    -------
    sigma : float
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    delta = _check_prob(delta, "delta")
    sensitivity = _check_nonneg(sensitivity, "sensitivity", allow_inf=False)
    if delta == 0.0:
        raise ValueError(
            "delta must be > 0 for the Gaussian mechanism; use a pure-DP mechanism "
            "(e.g. Laplace) when delta = 0."
        )
    if delta == 1.0 or math.isinf(epsilon) or sensitivity == 0.0:
        return 0.0
    log_target = math.log(delta)

    def excess(mu):
        return max(_log_gaussian_delta(mu, epsilon), _LOG_FLOOR) - log_target

    lo, hi = 1.0, 1.0
    while excess(lo) > 0:
        lo /= 2.0
    while excess(hi) <= 0:
        hi *= 2.0
    mu = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    sigma = sensitivity / mu
    # Feasible exactly: δ(ε) is judged at Δ/σ rounded up (δ grows with μ) by an upper
    # bound on the exact curve, whose float value can sit ~1e-11 below it in the tail.
    sigma = _nudge(sigma, lambda s: _gaussian_delta_upper(_mu_at_least(sensitivity, s),
                                                          epsilon) <= delta,
                   1e-13 * sigma, +1)
    return float(sigma)


def _mu_at_least(sensitivity, sigma):
    """Δ/σ rounded up: the multiplier a noise σ gives a sensitivity Δ, never below it."""
    return float_at_least(Fraction(sensitivity) / Fraction(sigma))


def classic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """Classical Gaussian calibration σ = Δ sqrt(2 ln(1.25/δ)) / ε.

    Dwork & Roth [DR14]_, Theorem A.1, which only holds for ε in (0, 1). It is
    never smaller than :func:`analytic_gaussian_sigma`.

    Parameters
    ----------
    epsilon : float
        ε in (0, 1).
    delta : float
        δ in (0, 1).
    sensitivity : float, default=1.0
        ℓ2 sensitivity Δ >= 0.

    Returns
    -------
    sigma : float
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    delta = _check_prob(delta, "delta", low_open=True, high_open=True)
    sensitivity = _check_nonneg(sensitivity, "sensitivity", allow_inf=False)
    if not 0.0 < epsilon < 1.0:
        raise ValueError(
            f"epsilon must lie in (0, 1) for the classical Gaussian calibration "
            f"(Dwork & Roth Thm A.1), got {epsilon!r}; use analytic_gaussian_sigma "
            "(the analytic calibration) instead."
        )
    return float(sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon)


def compose_gaussian_mu(mus):
    """Multiplier of the adaptive composition of Gaussian mechanisms.

    Composing Gaussian mechanisms with multipliers μ_i = Δ_i/σ_i is exactly
    (as a privacy curve, not just a bound) one Gaussian mechanism with
    ``μ = sqrt(Σ μ_i²)`` (Dong, Roth & Su 2019, Cor. 3.3; it follows from
    the rotation invariance of the isotropic Gaussian). In particular k uses at
    noise σ equal one use at noise σ/√k.

    Parameters
    ----------
    mus : array-like
        μ_i >= 0 (``np.inf`` allowed).

    Returns
    -------
    mu : float
    """
    mus = np.atleast_1d(np.asarray(mus, dtype=float))
    if np.any(np.isnan(mus)) or np.any(mus < 0):
        raise ValueError("mus must all be >= 0 (np.inf allowed).")
    if np.any(np.isinf(mus)):
        return np.inf
    return float(np.linalg.norm(mus))


# --------------------------------------------------------------------------- simple oracles


def poisson_subsampled_epsilon(epsilon, q):
    """Privacy amplification of a pure ε-DP mechanism by Poisson subsampling.

    Running an ε-DP mechanism on a Poisson subsample (each record kept
    independently with probability q) is ln(1 + q(e^ε − 1))-DP (Balle, Barthe &
    Gaboardi [BBG18]_, Theorem 8; Li, Qardaji & Su 2012). Computed with
    ``log1p``/``expm1``, so tiny ε and q are exact.

    Parameters
    ----------
    epsilon : float
        ε >= 0 (``np.inf`` allowed).
    q : float
        Sampling probability in [0, 1].

    Returns
    -------
    epsilon : float
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    q = _check_prob(q, "q")
    if q == 0.0:
        return 0.0
    if math.isinf(epsilon):
        return np.inf
    # ln(1 + q(e^ε − 1)) = ε + ln(q + (1−q)e^{−ε}): the second form cannot overflow.
    if epsilon > 50.0:
        return float(epsilon + math.log(q + (1.0 - q) * math.exp(-epsilon)))
    return float(math.log1p(q * math.expm1(epsilon)))


def randomized_response_epsilon(k, p_random):
    """ε of k-ary randomized response.

    The mechanism reports the true value with probability ``1 − p`` and otherwise
    a uniform draw from the k values (which may be the true one), so the largest
    likelihood ratio is ``(1 − p + p/k) / (p/k)``, i.e.

        ε = ln((k(1−p) + p) / p).

    With k = 2 and ``p = 2/(e^ε + 1)`` this is the classical ε-DP binary
    randomized response.

    Parameters
    ----------
    k : int
        Number of possible values, >= 2.
    p_random : float
        Probability p in [0, 1] of answering uniformly at random.

    Returns
    -------
    epsilon : float
        ``np.inf`` when ``p_random = 0``.
    """
    k = _check_count(k, "k", minimum=2)
    p = _check_prob(p_random, "p_random")
    if p == 0.0:
        return np.inf
    return float(math.log1p(k * (1.0 - p) / p))


# --------------------------------------------------------------------------- calibration


def _grow_until(pred, start, max_iter=2000):
    """Double ``start`` until ``pred`` holds (monotone predicates only)."""
    x = start
    for _ in range(max_iter):
        if pred(x):
            return x
        x *= 2.0
    return np.inf


def _largest_feasible(excess, lo, hi):
    """Largest x in [lo, hi] with ``excess(x) <= 0``, for increasing ``excess``."""
    x = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return _nudge(x, lambda y: excess(y) <= 0, 1e-13 * max(x, 1e-300), -1, limit=lo)


def _pure_views(epsilon, delta, k, zcdp_factor):
    """Largest per-use ε0 allowed by each composition view (dict)."""
    views = {"basic": _split_down(epsilon, k)}
    if delta == 0.0 or epsilon == 0.0:
        return views
    log_delta = math.log(delta)
    lo = epsilon / k

    # Optimal homogeneous composition (KOV Thm 3.3): δ_opt(ε) grows with ε0.
    def opt_excess(e0):  # (the upper bound the accountant's check uses)
        return max(_log_delta_opt(e0, k, epsilon, upper=True), _LOG_FLOOR) - log_delta

    hi = _grow_until(lambda e0: opt_excess(e0) > 0, 2.0 * lo)
    if np.isfinite(hi):
        views["optimal"] = _largest_feasible(opt_excess, lo, hi)

    # KOV Thm 3.5 closed form with slack = δ (its first term is basic).
    def kov_excess(e0):
        sum_sq = k * e0 * e0
        log_term = min(math.log(math.e + math.sqrt(sum_sq) / delta), -log_delta)
        return k * e0 * math.tanh(e0 / 2.0) + math.sqrt(2.0 * sum_sq * log_term) - epsilon

    hi = _grow_until(lambda e0: kov_excess(e0) > 0, lo)
    views["kov"] = _largest_feasible(kov_excess, 0.0, hi)

    # zCDP: k uses at ρ0 = zcdp_factor ε0² compose to ρ = k ρ0 (Bun & Steinke Lemma 2.3).
    def rho_excess(rho):
        return zcdp_epsilon(rho, delta) - epsilon

    L = -log_delta
    rho_lo = (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2  # Bun–Steinke: feasible
    rho_hi = _grow_until(lambda r: rho_excess(r) > 0, 2.0 * rho_lo)
    rho = _largest_feasible(rho_excess, rho_lo, rho_hi)
    views["zcdp"] = math.sqrt(rho / (zcdp_factor * k))
    return views


def _compose_pure_views(eps0, k, delta, zcdp_factor=0.5):
    """Composed ε of k uses of an ε0-DP mechanism under each view, at total δ (dict)."""
    out = {"basic": k * eps0}
    if delta > 0:
        out["optimal"] = optimal_homogeneous_epsilon(eps0, 0.0, k, delta)
        out["kov"] = kov_composition(np.full(k, eps0), 0.0, delta)[0]
        out["zcdp"] = zcdp_epsilon(zcdp_factor * eps0**2 * k, delta)
    return out


def calibrate_pure_epsilon(epsilon, delta, k, zcdp_factor=0.5):
    """Largest per-use ε0 such that k adaptive uses of an ε0-DP mechanism are (ε, δ)-DP.

    Each of the following valid analyses gives a largest admissible ε0 (found by
    Brent's method, every view being increasing in ε0), and the result is their
    maximum:

    * basic composition (Dwork & Roth [DR14]_, Thm 3.16): ε0 = ε/k, valid for any δ;
    * optimal homogeneous composition (Kairouz, Oh & Viswanath [KOV15]_, Thm 3.3)
      at total δ, when δ > 0;
    * the KOV Thm 3.5 closed form with slack δ, when δ > 0;
    * zCDP (Bun & Steinke [BS16]_): each use is ``zcdp_factor·ε0²``-zCDP, k uses
      add up, converted at δ with Canonne, Kamath & Steinke [CKS20]_ Cor. 13,
      when δ > 0. ``zcdp_factor = 1/2`` holds for every ε0-DP mechanism
      ([BS16]_ Prop. 1.4); ``1/8`` holds for the exponential mechanism (bounded
      range, Cesar & Rogers [CR21]_) — only pass it for that mechanism.

    Parameters
    ----------
    epsilon : float
        Total ε >= 0 (``np.inf`` gives ε0 = inf).
    delta : float
        Total δ in [0, 1] (δ = 1 is vacuous: ε0 = inf).
    k : int
        Number of adaptive uses, >= 1.
    zcdp_factor : float, default=0.5
        The ratio ρ0/ε0² for one use; must be > 0 and at most 1/2.

    Returns
    -------
    eps0 : float
        At least ε/k rounded down: the basic split is the largest float with
        ``k·ε0 <= ε`` exactly, so the k uses never print above the budget. A non-basic
        optimum is shrunk by a relative 1e-9, so that
        recomposing it in another floating-point order still fits the budget.
    """
    epsilon = _check_nonneg(epsilon, "epsilon")
    delta = _check_prob(delta, "delta")
    k = _check_count(k)
    zcdp_factor = _check_nonneg(zcdp_factor, "zcdp_factor", allow_inf=False)
    if not 0.0 < zcdp_factor <= 0.5:
        raise ValueError(
            f"zcdp_factor must lie in (0, 1/2], got {zcdp_factor!r}: 1/2 is valid for any "
            "pure-DP mechanism, 1/8 for the exponential mechanism."
        )
    if math.isinf(epsilon) or delta == 1.0:
        return np.inf
    return _calibrate_pure_cached(float(epsilon), float(delta), int(k), float(zcdp_factor))


@lru_cache(maxsize=1024)
def _calibrate_pure_cached(epsilon, delta, k, zcdp_factor):
    # Cached: a search or an STR fit calibrates the same (ε, δ, k) many times.
    best = max(_pure_views(epsilon, delta, k, zcdp_factor).values())
    if best <= epsilon / k * (1.0 + REPORT_RTOL):
        # A gain the accountant's report would not show (it prefers δ = 0 within
        # REPORT_RTOL): keep basic composition, so the fit reports exactly (ε, 0).
        return _split_down(epsilon, k)
    return float(best * (1.0 - _CALIBRATION_MARGIN))


def _split_down(epsilon, k):
    """The largest float ε0 with ``k·ε0 <= ε`` exactly: ε/k rounded down, not to nearest
    (the accountant sums the uses exactly)."""
    return float_at_most(Fraction(epsilon) / k)


def calibrate_gaussian_sigma(epsilon, delta, k, sensitivity=1.0):
    """Noise σ such that k adaptive uses of a Gaussian mechanism are exactly (ε, δ)-DP.

    k uses at σ compose to one Gaussian at σ/√k (:func:`compose_gaussian_mu`), so
    ``σ = √k · analytic_gaussian_sigma(ε, δ, Δ)`` (Balle & Wang [BW18]_, Thm 8),
    which is tight.

    Parameters
    ----------
    epsilon : float
        Total ε >= 0.
    delta : float
        Total δ in (0, 1].
    k : int
        Number of adaptive uses, >= 1.
    sensitivity : float, default=1.0
        The ℓ2 sensitivity Δ of each use.

    Returns
    -------
    sigma : float
        Inflated by a relative 1e-9 for the same floating-point reason as
        :func:`calibrate_pure_epsilon`.
    """
    k = _check_count(k)
    sigma = math.sqrt(k) * analytic_gaussian_sigma(epsilon, delta, sensitivity)
    if sigma == 0.0:
        return 0.0
    sigma *= 1.0 + _CALIBRATION_MARGIN

    # √k·σ1 is exact in real arithmetic; check the exact composed μ = √k·Δ/σ (rounded
    # up) and both ways a caller may form it in float, by an upper bound on the exact
    # δ(ε) (the float curve can sit ~1e-11 below it).
    def feasible(s):
        exact = float_sqrt_at_least(k * (Fraction(sensitivity) / Fraction(s)) ** 2)
        mus = (exact, compose_gaussian_mu(np.full(k, sensitivity / s)),
               math.sqrt(k) * sensitivity / s)
        return all(_gaussian_delta_upper(mu, epsilon) <= delta for mu in mus)

    return float(_nudge(sigma, feasible, 1e-14 * sigma, +1))


def calibrate_laplace_scale(epsilon, delta, k, sensitivity=1.0):
    """Laplace scale b such that k adaptive uses of the Laplace mechanism are (ε, δ)-DP.

    ``b = Δ / calibrate_pure_epsilon(ε, δ, k)``: the Laplace mechanism with scale
    b and ℓ1 sensitivity Δ is (Δ/b)-DP (Dwork & Roth [DR14]_, Thm 3.6).

    Parameters
    ----------
    epsilon : float
        Total ε >= 0.
    delta : float
        Total δ in [0, 1].
    k : int
        Number of adaptive uses, >= 1.
    sensitivity : float, default=1.0
        The ℓ1 sensitivity Δ of each use.

    Returns
    -------
    scale : float
        ``np.inf`` when ε = 0 (no finite noise suffices), 0 when ε0 is infinite.
    """
    sensitivity = _check_nonneg(sensitivity, "sensitivity", allow_inf=False)
    eps0 = calibrate_pure_epsilon(epsilon, delta, k)
    if eps0 == 0.0:
        return np.inf
    return float(sensitivity / eps0)
