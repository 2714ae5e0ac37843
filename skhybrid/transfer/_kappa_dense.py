"""κ-dense multiplicative weights for Subsample-Test-Reweigh, in the log domain.

Kohen & Sheffet (KS), *Transfer Learning in DP's Hybrid-Model*, §4 (Def. 4.1, Eq. (2),
Algorithm 2), reusing the κ-dense MW of Bun, Carmosino & Sorrell (BCS, COLT 2020).

Weights are stored as logarithms throughout: after the T ≈ 128·log₂(8(χ²+1)/α)/α² rounds
of Algorithm 2 a weight can shrink by e^{-Tα/8} (≈ e^{-3000} at α = 0.05), which
underflows to 0.0 in float64 and would make Π_κ infeasible or divide by zero.
"""

import math

import numpy as np
from scipy.special import logsumexp

from ..mechanisms import _noise

__all__ = [
    "kappa_dense_projection",
    "multiplicative_weights_update",
    "sample_from_log_weights",
]


def _check_log_weights(log_w, kappa):
    log_w = np.asarray(log_w, dtype=float)
    if log_w.ndim != 1 or log_w.size == 0:
        raise ValueError(
            f"log_w must be a non-empty 1-d array of log-weights; got shape {log_w.shape}."
        )
    if np.any(np.isnan(log_w)) or np.any(log_w == np.inf):
        raise ValueError(
            "log_w must not contain NaN or +inf; pass log(0) = -inf for a zero weight."
        )
    if not (0.0 < kappa <= 1.0):
        raise ValueError(f"kappa must lie in (0, 1]; got kappa={kappa!r}.")
    target = kappa * log_w.size
    n_pos = int(np.count_nonzero(np.isfinite(log_w)))
    # κn is a float (e.g. 0.3 * 10 = 3.0000000000000004): compare with a relative tolerance.
    if n_pos < target * (1.0 - 1e-12):
        raise ValueError(
            f"kappa-dense projection is infeasible: only {n_pos} of {log_w.size} weights are "
            f"positive but the projection needs mass kappa*n = {target:g} with every entry <= 1. "
            "Lower kappa or keep more weights positive."
        )
    return log_w, target, n_pos


def kappa_dense_projection(log_w, kappa):
    """Project weights onto the κ-dense set (KS Eq. (2)), exactly, in the log domain.

    Computes Π_κ(w) = (min{c·w_1, 1}, …, min{c·w_n, 1}) for the smallest c > 0 with
    ‖Π_κ(w)‖₁ = κn, and returns the induced distribution μ = Π_κ(w)/(κn).

    Parameters
    ----------
    log_w : array-like of shape (n,)
        Natural logarithms of non-negative weights (``-inf`` for a zero weight).
    kappa : float in (0, 1]
        Density parameter κ.

    Returns
    -------
    log_mu : ndarray of shape (n,)
        ``log`` of the projected distribution: ``sum(exp(log_mu)) == 1`` and
        ``max(exp(log_mu)) <= 1 / (kappa * n)``.
    log_c : float
        ``log`` of the scaling c, relative to the given ``log_w`` (Π_κ is invariant under
        w ↦ a·w, so shifting ``log_w`` by a constant shifts ``log_c`` by its negative).

    Raises
    ------
    ValueError
        If fewer than κn weights are positive (no c reaches mass κn).

    Notes
    -----
    *Which c.* f(c) = Σ min(1, c·w_i) is continuous, non-decreasing, and strictly
    increasing until every positive weight is capped, so the smallest c with f(c) = κn is
    unique. For the weights Algorithm 2 produces, w ∈ (0, κ]^n (w¹ = κ and updates only
    shrink), f(1) = Σw ≤ κn so c ≥ 1: Eq. (2) never scales down. BCS (following
    Barak–Hardt–Kale) define Π_κ as the KL projection onto {p ∈ [0, 1]^n : Σp ≥ κn}, which
    is the identity when Σw ≥ κn ("do not scale down"). The two readings induce the *same*
    distribution μ whenever w ∈ [0, 1]^n: with c < 1 nothing is capped and μ = w/Σw either
    way. They differ only for weights above 1, which Algorithm 2 never produces; there we
    keep Eq. (2) literally (mass exactly κn), which is what the stability bound
    TV ≤ 1/(κn) (docs/notes/building_blocks.rst) uses.

    *Algorithm* (water-filling, O(n log n)). Sort log-weights in decreasing order s and let
    S_k = Σ_{j≥k} e^{s_j} (a reversed cumulative logaddexp). If the k largest entries are
    capped, c_k = (κn − k)/S_k. The answer is the smallest k with c_k·e^{s_k} ≤ 1: the
    quantity a_k = (κn − k)e^{s_k} − S_k is non-increasing in k for k < κn
    (a_{k+1} − a_k = (κn − k − 1)(e^{s_{k+1}} − e^{s_k}) ≤ 0), and a_{k−1} > 0 gives
    c_k·e^{s_{k−1}} > 1, so exactly the k largest entries are capped. When exactly κn
    weights are positive the smallest c caps them all: c = 1/min_i w_i.
    """
    log_w, target, n_pos = _check_log_weights(log_w, kappa)
    log_target = math.log(target)
    finite = np.isfinite(log_w)

    if n_pos <= target * (1.0 + 1e-12):
        log_c = -float(np.min(log_w[finite]))
        log_mu = np.where(finite, -math.log(n_pos), -np.inf)
        return log_mu, log_c

    s = -np.sort(-log_w)  # descending; -inf entries last
    suffix = np.logaddexp.accumulate(s[::-1])[::-1]  # log S_k
    # Only k < κn (at least one uncapped unit of mass) and k < n_pos are candidates.
    k_max = min(n_pos, math.ceil(target)) - 1
    ks = np.arange(k_max + 1)
    log_ck = np.log(target - ks) - suffix[: k_max + 1]
    fits = log_ck + s[: k_max + 1] <= 0.0
    # fits[k_max] holds in exact arithmetic ((κn − k)e^{s_k} ≤ e^{s_k} ≤ S_k); fall back
    # to it if rounding says otherwise.
    k_star = int(np.argmax(fits)) if fits.any() else k_max
    log_c = float(log_ck[k_star])
    log_mu = np.minimum(log_w + log_c, 0.0) - log_target
    return log_mu, log_c


def _kappa_dense_projection_bisect(log_w, kappa, n_iter=200):
    """Reference Π_κ by bisection on log c (for tests; slow but obviously correct)."""
    log_w, target, _ = _check_log_weights(log_w, kappa)
    finite = np.isfinite(log_w)
    lw = log_w[finite]

    def mass(log_c):
        return np.sum(np.exp(np.minimum(lw + log_c, 0.0)))

    # At lo every entry is ≤ κ so the mass is ≤ κn; at hi every positive entry is capped.
    lo = math.log(kappa) - float(np.max(lw))
    hi = -float(np.min(lw))
    if mass(hi) <= target:
        log_c = hi
    else:
        for _ in range(n_iter):
            mid = 0.5 * (lo + hi)
            if mass(mid) < target:
                lo = mid
            else:
                hi = mid
        log_c = hi
    log_p = np.minimum(log_w + log_c, 0.0)
    return log_p - logsumexp(log_p[finite]), log_c


def multiplicative_weights_update(log_w, correct, alpha):
    """One κ-dense MW step on the *unprojected* log-weights (KS Algorithm 2).

    w_i ← w_i · exp(−(α/8)·[1 − L(h(x_i), ℓ(x_i))]): points the current hypothesis gets
    right (loss 0) are down-weighted by e^{−α/8}, points it gets wrong keep their weight.

    Parameters
    ----------
    log_w : array-like of shape (n,)
        Current log-weights.
    correct : array-like of shape (n,)
        ``1 − L`` per curator point, in [0, 1]: a boolean "classified correctly" vector
        for the 0/1 loss of Algorithm 2. For Algorithm 4 (loss in [0, LD]) pass
        ``1 − L/(LD)``, which reproduces its factor exp(−α/(8LD)·[LD − L]).
    alpha : float > 0
        Target error α; the MW learning rate is α/8 (KS Thm 4.2, η = α/8).

    Returns
    -------
    log_w_new : ndarray of shape (n,)
    """
    log_w = np.asarray(log_w, dtype=float)
    correct = np.asarray(correct, dtype=float)
    if correct.shape != log_w.shape:
        raise ValueError(
            f"correct must have the same shape as log_w {log_w.shape}; got {correct.shape}."
        )
    if np.any(~((correct >= 0.0) & (correct <= 1.0))):
        raise ValueError("correct must take values in [0, 1] (1 - loss, loss in [0, 1]).")
    if not (alpha > 0.0):
        raise ValueError(f"alpha must be positive; got alpha={alpha!r}.")
    return log_w - (alpha / 8.0) * correct


def sample_from_log_weights(log_mu, m, rng):
    """Draw ``m`` i.i.d. indices (with replacement) from the distribution ``exp(log_mu)``.

    The subsampling step of the non-private KS Algorithm 1 (``epsilon=np.inf``): float
    uniforms (:func:`skhybrid.mechanisms._noise.uniform`, tag ``"str-subsample"``) through
    the float cumulative weights, a law within about n·2^-52 of ``exp(log_mu)`` per draw in
    total variation. That is all a non-private run needs; the private rounds draw exactly
    (:func:`skhybrid.transfer._exact_subsample.sample_kappa_dense`).

    Parameters
    ----------
    log_mu : array-like of shape (n,)
        Log-probabilities (need not be exactly normalised; ``-inf`` entries are never drawn).
    m : int >= 0
        Number of draws.
    rng : numpy.random.Generator
        Source of every random draw.

    Returns
    -------
    indices : ndarray of shape (m,), dtype intp
    """
    log_mu = np.asarray(log_mu, dtype=float)
    if log_mu.ndim != 1 or log_mu.size == 0 or not np.any(np.isfinite(log_mu)):
        raise ValueError("log_mu must be a 1-d array with at least one finite log-probability.")
    if int(m) != m or m < 0:
        raise ValueError(f"m must be a non-negative integer; got m={m!r}.")
    m = int(m)
    cdf = np.cumsum(np.exp(log_mu - np.max(log_mu)))
    u = _noise.uniform(rng, size=m, tag="str-subsample")
    order = np.argsort(u)  # sorted keys: each search starts where the last ended
    idx = np.empty(m, dtype=np.intp)
    idx[order] = np.searchsorted(cdf, u[order] * cdf[-1], side="right")
    # u·total can round up to total; never return an index past the last positive entry.
    last = int(np.flatnonzero(np.isfinite(log_mu))[-1])
    return np.minimum(idx, last)
