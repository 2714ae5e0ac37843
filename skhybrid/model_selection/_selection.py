"""Private selection by random stopping: the cost of releasing the best of K runs.

A *base run* draws a candidate at random, trains it and scores it, and is ε_run-DP. The
search runs it K times, K drawn from a geometric distribution with mean ``m`` (the
truncated negative binomial of Papernot & Steinke with η = 1: P[K = k] = γ(1 − γ)^(k−1),
γ = 1/m, drawn before and independently of the data), and releases only the best run's
(candidate, model, score). Two analyses bound the release; the search reports the better
valid one:

* pure: (2 + η)·ε_run = 3·ε_run (Liu & Talwar 2019, "Private selection from private
  candidates", Thm 3.4; Papernot & Steinke 2022, "Hyperparameter tuning with Rényi
  differential privacy", Thm 2 in the limit λ → ∞);
* Rényi: with the base run's RDP curve ε̂(λ), the search is (λ, ε′(λ))-RDP for

      ε′(λ) = ε̂(λ) + min_λ̂ [ 2(1 − 1/λ̂)·ε̂(λ̂) + 2·log(1/γ)/λ̂ ] + log(m)/(λ − 1)

  (Papernot & Steinke 2022, Thm 2 with η = 1, E[K] = 1/γ = m), converted to (ε, δ)
  (Balle et al. 2020, Thm 21). An ε_run-DP run has the tight curve
  ε̂(λ) = ε_run − log((1 + e^(−ε_run)) / (1 + e^(−(2λ−1)ε_run))) / (λ − 1)
  (Steinke 2024, "Sharp RDP & zCDP from pure DP", Thm 4: randomized response is the
  worst case).

Neither analysis lets the search release K, the other runs' candidates or their scores:
K hidden from the observer is what makes the cost independent of it.
"""

import math
from fractions import Fraction

import numpy as np

from ..accounting._rdp import rdp_to_dp_epsilon
from ..utils._rounding import float_at_least

__all__ = [
    "pure_dp_rdp",
    "random_stopping_rdp",
    "random_stopping_epsilon",
    "run_epsilon_for_budget",
    "draw_number_of_runs",
]

#: Orders λ at which the search's RDP curve is evaluated, and the inner orders λ̂.
_ORDERS = 1.0 + np.geomspace(1e-3, 1e4, 600)


def pure_dp_rdp(epsilon, orders):
    """RDP curve ε̂(λ) of an ε-DP mechanism (Steinke 2024, Thm 4; tight)."""
    a = np.asarray(orders, dtype=float)
    e = float(epsilon)
    return e - (np.log1p(np.exp(-e)) - np.log1p(np.exp(-(2.0 * a - 1.0) * e))) / (a - 1.0)


def random_stopping_rdp(run_rdp, expected_runs, orders=_ORDERS):
    """RDP curve of releasing the best of K ~ Geometric(1/m) runs (P&S 2022, Thm 2, η = 1).

    Parameters
    ----------
    run_rdp : callable
        Maps an array of orders to the base run's RDP ε̂ at those orders.
    expected_runs : int
        m = E[K] ≥ 2.
    orders : array-like
        Orders λ > 1 at which to evaluate ε′ (the inner minimisation over λ̂ always uses
        a dense grid of 600 orders in (1, 10⁴]: any λ̂ gives a valid bound).

    Returns
    -------
    rdp : ndarray
        ε′(λ) at each order.
    """
    a = np.asarray(orders, dtype=float)
    log_inv_gamma = math.log(expected_runs)  # γ = 1/m
    inner = np.min(2.0 * (1.0 - 1.0 / _ORDERS) * run_rdp(_ORDERS)
                   + 2.0 * log_inv_gamma / _ORDERS)
    return run_rdp(a) + inner + log_inv_gamma / (a - 1.0)


def random_stopping_epsilon(run_epsilon, delta, expected_runs):
    """(ε, δ) of the best of K ~ Geometric(1/m) runs of an ε_run-DP base run.

    Returns
    -------
    epsilon : float
        The smaller of the pure bound 3·ε_run (Liu & Talwar 2019, Thm 3.4) and, when
        ``delta > 0``, the Rényi bound of Papernot & Steinke (2022, Thm 2) converted at
        ``delta``.
    analysis : {"pure", "rdp"}
        Which bound gave it (``"pure"`` means δ = 0 is realised).
    """
    pure = float_at_least(3 * Fraction(run_epsilon))  # 3·ε_run, rounded up
    if not delta > 0:
        return pure, "pure"
    rdp = random_stopping_rdp(lambda a: pure_dp_rdp(run_epsilon, a), expected_runs)
    eps, order = rdp_to_dp_epsilon(rdp, _ORDERS, delta)
    eps += _rounding_pad(run_epsilon, delta, expected_runs, order)
    return (eps, "rdp") if eps < pure else (pure, "pure")


def _magnitude(epsilon, a):
    """Σ|term| of :func:`pure_dp_rdp` at the orders ``a`` (its cancellation's scale)."""
    return epsilon + (np.log1p(np.exp(-epsilon))
                      + np.log1p(np.exp(-(2.0 * a - 1.0) * epsilon))) / (a - 1.0)


def _rounding_pad(run_epsilon, delta, expected_runs, order):
    """A bound on the float error of the Rényi path's ε, added to it (outward).

    Each term of the ε at ``order`` — the run's RDP, the inner minimum at its argmin, the
    log m/(λ − 1) term and the conversion's two — is a few elementary operations, each
    within an ulp of its exact value: the sum is within ~20 ulps of Σ|term|; pad by 64.
    """
    log_m = math.log(expected_runs)
    inner_terms = (2.0 * (1.0 - 1.0 / _ORDERS) * pure_dp_rdp(run_epsilon, _ORDERS)
                   + 2.0 * log_m / _ORDERS)
    j = int(np.argmin(inner_terms))
    inner = 2.0 * _magnitude(run_epsilon, _ORDERS[j]) + 2.0 * log_m / _ORDERS[j]
    a = float(order)
    outer = (_magnitude(run_epsilon, a) + log_m / (a - 1.0) + abs(math.log1p(-1.0 / a))
             + (abs(math.log(delta)) + math.log(a)) / (a - 1.0))
    return 64.0 * 2.0**-53 * float(inner + outer)


def run_epsilon_for_budget(epsilon, delta, expected_runs, rtol=1e-9):
    """Largest ε_run whose random-stopping search costs at most (ε, δ).

    The per-run ε is derived from the total by the accounting above (bisection; the cost
    is increasing in ε_run), never the other way round.
    """
    lo, hi = epsilon / 3.0, epsilon  # 3·ε_run ≤ ε at lo; every bound is ≥ ε_run at hi
    if random_stopping_epsilon(hi, delta, expected_runs)[0] <= epsilon:
        return hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if random_stopping_epsilon(mid, delta, expected_runs)[0] <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rtol * lo:
            break
    return lo


def draw_number_of_runs(rng, expected_runs):
    """K ~ Geometric(1/m) on {1, 2, ...}, exactly: the first of i.i.d. uniform draws from
    {0, ..., m − 1} that is 0 (integer arithmetic only, so P[K = k] = γ(1 − γ)^(k−1) with
    γ = 1/m exactly)."""
    m = int(expected_runs)
    k = 0
    while True:
        block = rng.integers(m, size=256)
        hits = np.flatnonzero(block == 0)
        if hits.size:
            return k + int(hits[0]) + 1
        k += block.size
