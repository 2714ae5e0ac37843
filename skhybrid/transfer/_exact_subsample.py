"""Exact draws from the κ-dense distribution of Subsample-Test-Reweigh's private rounds.

Kohen & Sheffet (KS), *Transfer Learning in DP's Hybrid-Model*, Algorithm 2 draws m₁
examples per round from μ = Π_κ(w)/(κn) (Eq. (2)), Algorithm 4 one per noisy SGD step.
Claim 4.1 (in the library, its replacement
:func:`~skhybrid.transfer._privacy.coupled_sampling_amplification`) needs one property of
the law the draws *realise*: for neighbouring curator datasets, whose weight vectors
differ in one coordinate i, the two example distributions are within total variation
η = 1/(κn). For the exact projection this is Bun, Carmosino & Sorrell's stability of Π_κ
(:ref:`notes_kappa_dense`): every other row's mass moves the same way, so the distance is
the changed row's own mass, at most 1/(κn).

This module realises a law with that property *exactly*, in integers, and samples it from
uniform integers only:

* **Integer weights.** Row j gets W_j ∈ {0, 1, …, K} (K = 2^b) with Σ_j W_j = T = ⌈Kκn⌉
  exactly, and is drawn with probability W_j/T: a uniform integer below T located in the
  int64 cumulative sums. A positive weight gets W_j ≥ 1 (a positive probability, however
  small the weight), a capped row W_j = K, and every probability is W_j/T ≤ K/T ≤ 1/(κn).
* **Monotone in one scale.** W_j = G_j(C) := min(K, max(1, ⌈fl(M·f_j)·2^(E+e_j)⌉)) for a
  scale C = M·2^E on a fixed grid (M = 1 + k·2^-40, E an integer), where (f_j, e_j),
  log w_j ≈ log(f_j·2^(e_j)), is computed from row j's own log-weight. Floating-point
  multiplication rounds monotonically, so every G_j is non-decreasing along the grid.
  Between adjacent grid scales C < C⁺ the rows take their increments G_j(C⁺) − G_j(C)
  one unit at a time, in row order. This is one chain of integer vectors, fixed in
  advance, along which every W_j is non-decreasing and the sum grows by one per step from
  n_pos (every positive row at 1) to n_pos·K. The realised W is the vector of the chain
  whose sum is T. It is unique (two vectors of the chain with the same sum are equal, by
  monotonicity), so the search that finds it does not change it.
* **The bound.** For neighbours (replace-one: row j ≠ i has the same weight and the same
  position), the two realised vectors lie on the same chain, so one dominates the other
  on every row j ≠ i, and both sum to T. The example-level distance is then exactly
  max(W_i, W'_i)/T ≤ K/T ≤ 1/(κn): the BCS bound, with no margin. The accounting takes
  η as the float :func:`kappa_dense_tv_bound`, never below 1/(κn).

The realised law is within about n/T + 2^-40 ≈ 1/(Kκ) + 2^-40 in total variation of the
floating-point μ (tiny weights rounded up, the grid's step): a κ-dense law of the same
weights, which is all the privacy proof asks of it.
"""

import math
from fractions import Fraction

import numpy as np

from ..mechanisms import _noise
from ..utils._rounding import float_at_least
from ._kappa_dense import _check_log_weights

__all__ = [
    "check_kappa_representable",
    "kappa_dense_integer_weights",
    "kappa_dense_tv_bound",
    "sample_kappa_dense",
]

_LN2 = math.log(2.0)
#: Bits of the scale M ∈ [1, 2) on the grid: adjacent scales differ by 2^-40 relative, fine
#: enough that the realised law is within ~1e-12 of μ, coarse enough that the search's
#: first Newton step usually lands in the right cell (three sums of n integers per round).
_MANT = 40
#: Largest cap exponent: below K = 2^b ≤ 2^50 every scaled value is a float whose ceil is
#: exact (and int64 sums of n weights stay below 2^62, see _cap_bits).
_MAX_CAP_BITS = 50
_FRAC = (1 << _MANT) - 1
_MAX_STEPS = 400


def kappa_dense_tv_bound(kappa, n):
    """η = min(1, 1/(κn)) as the smallest float at least its exact value.

    The realised laws of :func:`sample_kappa_dense` on neighbouring datasets are within
    total variation 1/(κn) exactly (a rational); the accounting takes η as a float, which
    ``1.0 / (kappa * n)`` (two roundings) can put up to two units in the last place below
    it.

    Parameters
    ----------
    kappa : float in (0, 1]
    n : int >= 1

    Returns
    -------
    eta : float
    """
    exact = 1 / (Fraction(float(kappa)) * int(n))
    return 1.0 if exact >= 1 else float_at_least(exact)


def _cap_bits(n):
    """b with K = 2^b: as fine as the float scale allows, and n·K < 2^62 (int64 sums)."""
    return min(_MAX_CAP_BITS, 62 - int(n).bit_length())


def check_kappa_representable(kappa, n):
    """Refuse a κ below 2^-b, the smallest the integer weights of ``n`` rows represent.

    With the cap K = 2^b, the total ⌈Kκn⌉ must give every positive row a weight of at
    least 1, which needs κ >= 2^-b (b = min(50, 62 − bit_length(n))). A function of
    public parameters: the planners call it before the charge.
    """
    b = _cap_bits(n)
    if float(kappa) * (1 << b) < 1:
        raise ValueError(
            f"kappa={kappa!r} is below 2^-{b}, the smallest density the exact subsample "
            f"represents for {n} curator rows; raise kappa. Nothing was charged.")


def _split(log_w):
    """Per-row dyadic form w_j ≈ f_j·2^(e_j), f_j ≈ [1, 2): a function of log w_j alone."""
    e = np.floor(log_w / _LN2)
    f = np.exp(log_w - e * _LN2)
    return f, e.astype(np.int64)


def _key_of_log(log_c):
    """Grid key of (about) the scale exp(log_c): key = E·2^40 + (M − 1)·2^40."""
    E = math.floor(log_c / _LN2)
    M = min(max(math.exp(log_c - E * _LN2), 1.0), math.nextafter(2.0, 0.0))
    return (E << _MANT) + int((M - 1.0) * (1 << _MANT))


class _Weights:
    """G(C) for every row: the integer weights at grid scale ``key``."""

    def __init__(self, log_w, b):
        self.b, self.K = b, 1 << b
        self.pos = np.isfinite(log_w)
        f, e = _split(np.where(self.pos, log_w, 0.0))
        if not (np.all(f >= 0.5) and np.all(f < 4.0)):  # |log w| < 2^40 keeps f near [1, 2)
            raise ValueError("log_w is too large in magnitude for the exact sampler.")
        self.f, self.e = f, e

    def at(self, key):
        E, M = key >> _MANT, 1.0 + (key & _FRAC) * 2.0**-_MANT
        # M·f_j lies in [1/2, 8): an exponent below -3 gives a value below 1/2 (weight 1),
        # one above b a value of at least K (the cap). Clipping the exponent to [-4, b + 1]
        # keeps those weights and the ldexp in the normal range, where it is exact.
        s = np.clip(self.e + E, -4, self.b + 1)
        v = np.clip(np.ceil(np.ldexp(M * self.f, s)), 1.0, float(self.K))
        return np.where(self.pos, v, 0.0).astype(np.int64)


def _refine(w_lo, w_hi, extra):
    """The chain vector between adjacent scales: ``extra`` unit increments, rows in order."""
    inc = w_hi - w_lo
    before = np.cumsum(inc) - inc
    return w_lo + np.clip(extra - before, 0, inc)


def kappa_dense_integer_weights(log_w, kappa, *, log_c=None):
    """Integer weights W (sum T) whose law W/T is the exact κ-dense draw of STR's rounds.

    See the module docstring for the construction and the proof: W_j ≤ K, ΣW = T =
    ⌈K·κ·n⌉, W_j ≥ 1 for every positive weight, and for two weight vectors differing in
    one coordinate i the realised laws are within total variation max(W_i, W'_i)/T ≤
    1/(κn) at the level of examples (KS Claim 4.1's η; Bun, Carmosino & Sorrell 2020).

    Parameters
    ----------
    log_w : array-like of shape (n,)
        Unprojected log-weights of Algorithm 2 (``-inf`` for a zero weight). Pass these,
        not the projected log μ: μ's coordinates all move with the scaling c, the weights'
        do not.
    kappa : float in (0, 1]
    log_c : float or None, default=None
        A guess of the projection's log c (as :func:`kappa_dense_projection` returns it),
        only a starting point of the search; ``None`` starts from log(κn/Σw). The result
        does not depend on it.

    Returns
    -------
    W : ndarray of shape (n,), dtype int64
    T : int
        ``W.sum()``, exactly ⌈K·κ·n⌉.
    K : int
        The cap 2^b: capped rows get W_j = K.
    """
    log_w, _, n_pos = _check_log_weights(log_w, kappa)
    n = log_w.size
    b = _cap_bits(n)
    K = 1 << b
    T = math.ceil(Fraction(float(kappa)) * K * n)
    if not (n_pos <= T <= n_pos * K):
        raise ValueError(
            f"no exact kappa-dense weights: {n_pos} positive weights of {n} at kappa={kappa!r} "
            f"(need kappa*n <= {n_pos} and kappa >= 2^-{b})."
        )
    if log_c is None:
        # Start as if nothing were capped (c = κn/Σw); Newton below handles the caps.
        top = float(np.max(log_w))
        log_c = math.log(kappa * n) - top - math.log(float(np.sum(np.exp(log_w - top))))
    g = _Weights(log_w, b)
    key = _key_of_log(log_c + b * _LN2)  # C ≈ K·c: capped weights at K, others K·c·w_j
    lo = hi = None  # grid keys whose sums are below T / above T
    gaps, move = [math.inf, math.inf], 0
    for _ in range(_MAX_STEPS):
        w = g.at(key)
        s = int(w.sum())
        if s == T:
            return w, T, K
        if s < T:
            lo, w_lo, s_lo = key, w, s
        else:
            hi, w_hi, s_hi = key, w, s
        if lo is not None and hi is not None:
            if hi - lo == 1:
                return _refine(w_lo, w_hi, T - s_lo), T, K
        gaps.append(abs(T - s))
        # Newton on the sum: dS/dlog C is about the mass of the rows strictly between 1 and
        # K, and dlog C/dkey = 2^-40/M. Only the speed depends on it, never the result.
        slope = float(w[(w > 1) & (w < K)].sum())
        M = 1.0 + (key & _FRAC) * 2.0**-_MANT
        direction = 1 if s < T else -1
        jump = (T - s) / slope * M * 2.0**_MANT if slope > 0 else direction * 2.0**60
        cand = key + (int(max(min(jump, 2.0**60), -(2.0**60))) or direction)
        if lo is not None and hi is not None:
            if gaps[-1] > gaps[-3] / 2:
                cand = (lo + hi) // 2  # safeguard: the gap did not halve in two steps
            elif not lo < cand < hi:  # Newton left the bracket: the secant across it
                cand = lo + int((T - s_lo) / (s_hi - s_lo) * (hi - lo))
                cand = min(max(cand, lo + 1), hi - 1)
        elif move * direction > 0 and gaps[-1] > gaps[-2] / 2:
            # No bracket yet, same way as the last move, which did not halve the gap.
            cand = key + max(cand - key, 2 * move, key=abs)
        move, key = cand - key, cand
    raise RuntimeError("exact kappa-dense weights: the search did not converge.")


def sample_kappa_dense(log_w, kappa, m, rng, *, log_c=None):
    """Draw ``m`` i.i.d. row indices from STR's κ-dense distribution, exactly.

    The subsampling step of KS Algorithm 2 (m₁ draws from μᵗ) and of Algorithm 4 (one draw
    per noisy SGD step). Row j is drawn with probability exactly W_j/T
    (:func:`kappa_dense_integer_weights`): a uniform integer below T (tag
    ``"str-subsample"``) is located in the int64 cumulative sums of W. No floating-point
    random variate is involved.

    Parameters
    ----------
    log_w : array-like of shape (n,)
        Unprojected log-weights (see :func:`kappa_dense_integer_weights`).
    kappa : float in (0, 1]
    m : int >= 0
        Number of draws (with replacement).
    rng : numpy.random.Generator
    log_c : float or None, default=None
        Starting point of the weights' search (see :func:`kappa_dense_integer_weights`).

    Returns
    -------
    indices : ndarray of shape (m,), dtype intp
    """
    if int(m) != m or m < 0:
        raise ValueError(f"m must be a non-negative integer; got m={m!r}.")
    W, T, _ = kappa_dense_integer_weights(log_w, kappa, log_c=log_c)
    u = _noise.integers(rng, T, size=int(m), tag="str-subsample")
    return _locate(np.cumsum(W), u)


def _locate(cdf, u):
    """``searchsorted(cdf, u, side="right")``, the keys looked up in increasing order (each
    search starts where the last ended: 2 ms instead of 5-10 ms for 48,900 keys in 90,000
    rows); the result is the same array."""
    order = np.argsort(u)
    out = np.empty(u.size, dtype=np.intp)
    out[order] = np.searchsorted(cdf, u[order], side="right")
    return out
