"""Exact sampling for the selection mechanisms, on integer lattices, from uniform integers.

The exponential mechanism and report-noisy-max release an index, but the law of that
index must still be the one charged: with numpy's float Gumbel (or Laplace) noise a
candidate far enough below the best gets probability exactly 0 on one data set and a
positive one on a neighbour, which is only (ε, ~1e-28)-DP. Here:

- scores are snapped to a lattice (:func:`score_lattice`): integer scores with an integer
  sensitivity are used as they are; float scores are rounded to multiples of a dyadic step
  ``g`` (``Δ·2^-20``, coarsened to as much as ``Δ·2^-8`` at very small ε), and the
  rounding is paid for: a score moves by at most ``S = floor(Δ/g) + 1`` lattice units
  between neighbours, and the noise is calibrated to ``S`` (so the realised ε never
  exceeds the charged one). The rounding is exact (integer scores never pass through a
  float), and the selections use the lattice scores relative to the best one, clamped
  at ``2^61`` steps below it (:func:`relative_lattice_scores`), so no finite score is
  refused;
- the exponential mechanism is sampled by rejection (:func:`sample_exponential`): a
  uniform proposal ``i`` is kept with an exact Bernoulli(exp(-γ d_i)) coin, where
  ``d_i = max_j k_j - k_i`` and ``γ = a / 2^b`` is a dyadic rational rounded *down*
  (:func:`dyadic_floor`). Each kept proposal has exactly the law P(i) ∝ exp(-γ d_i); the
  data-dependent maximum only changes the running time;
- report-noisy-max adds exact discrete Laplace noise to the lattice scores (see
  :class:`~skhybrid.mechanisms.ReportNoisyMax`).

Every coin is a comparison of uniform integers (Canonne, Kamath & Steinke 2020,
Algorithm 1), so the sampled law is exact; there is no float in the sampling path.
"""

import functools
import math
from fractions import Fraction

import numpy as np

from . import _noise

__all__ = [
    "dyadic_floor",
    "exp_coin",
    "split_exponent",
    "sample_exponential",
    "relative_lattice_scores",
    "score_lattice",
    "snap_scores",
]

#: Lattice scores stay below 2^61 in magnitude: differences fit int64 with room to spare.
_MAX_LATTICE = 1 << 61
#: Exact lattice values below this magnitude are held as int64 (differences then fit).
_INT64_SAFE = 1 << 62
#: Significant bits of the rate γ and the largest binary exponent of its denominator.
_RATE_BITS = 24
_MAX_EXPONENT = 62
#: Rates are capped at 2^23 per lattice unit (capping only lowers the realised ε): one
#: lattice unit below the best then has probability below exp(-8e6).
_MAX_RATE = Fraction(1 << 23)
#: Float lattices: at least 2^20 steps per Δ, coarsened (never below 2^8 steps) while
#: the noise spans more than 2^38 steps, so that γ keeps its bits and the discrete Laplace
#: scale stays far below 2^62. At 2^8 steps (S <= 2^9) report-noisy-max's scale
#: ceil(2S/ε) stays below 2^50 down to ε = 1e-12, the bottom of the accepted range.
_LATTICE_BITS = 20
_MIN_LATTICE_BITS = 8
_MAX_NOISE_STEPS = Fraction(1 << 38)
#: Steps below 2^-1022 (subnormal, or 0) are refused: the step must be a normal float.
_MIN_STEP_EXPONENT = -1022
#: A geometric count beyond this is never reached (each step continues with
#: probability e^-1), so a larger integer part of γ·d is represented by it exactly.
_CAP = 1 << 62
_MASK32 = (1 << 32) - 1


@functools.lru_cache(maxsize=256)  # pure; Frank-Wolfe asks K times for the same lattice
def score_lattice(sensitivity, epsilon, factor, integer=False):
    """The lattice step ``g`` and the lattice sensitivity ``S`` of a selection.

    Parameters
    ----------
    sensitivity : float
        Δ, the largest change of a score between neighbours.
    epsilon : float or Fraction
        The ε the noise is calibrated for (only used to keep a float lattice small
        enough for the noise, a function of public parameters).
    factor : int
        2 for general scores, 1 for monotone ones.
    integer : bool, default=False
        Scores are integers and Δ is an integer: the lattice is the integers (``g = 1``,
        ``S = Δ``), no rounding.

    Returns
    -------
    g : float
        A power of two (1 for integer scores).
    S : int
        ``floor(Δ/g) + 1`` (``Δ`` for integer scores): a lattice score moves by at most
        ``S`` between neighbours, since ``|round(u/g) - round(u'/g)| <= |u - u'|/g + 1``.
    """
    if integer:
        if sensitivity != int(sensitivity):
            raise ValueError(
                "sensitivity must be an integer for integer scores; pass integer=False.")
        return 1.0, int(sensitivity)
    _, exponent = math.frexp(sensitivity)  # 2^(exponent-1) <= Δ < 2^exponent
    if exponent - 1 - _LATTICE_BITS < _MIN_STEP_EXPONENT:
        raise ValueError(
            "sensitivity is too small for an exact selection lattice (its step would fall "
            "below 2^-1022); rescale the scores and the sensitivity together.")
    bits = _LATTICE_BITS
    eps = Fraction(epsilon)
    while True:
        g = math.ldexp(1.0, exponent - 1 - bits)
        S = math.floor(Fraction(sensitivity) / Fraction(g)) + 1
        if bits <= _MIN_LATTICE_BITS or factor * S / eps <= _MAX_NOISE_STEPS:
            return g, S
        bits -= 1


def _lattice_values(scores, g, integer):
    """``round(u/g)`` of every score (half to even), exactly, and whether they all fit int64.

    ``scores`` holds finite values: floats, or exact integers (an int64 array, or Python
    ints in an object array). ``g`` is a power of two. Returns an int64 array when every
    value lies below 2^62 in magnitude, else an object array of Python ints. Integer
    scores never pass through a float, and ``u/g`` of a float is exact (a power-of-two
    step), so nothing is rounded but the lattice rounding itself.
    """
    scores = np.asarray(scores)
    exact_ints = scores.dtype.kind in "iu" or scores.dtype == object
    if not exact_ints:
        scores = scores.astype(float, copy=False)
        if integer:
            if np.any(scores != np.round(scores)):
                raise ValueError("scores must be integers for an integer selection lattice.")
            k = scores
        else:
            with np.errstate(over="ignore"):
                k = np.rint(scores / g)  # exact, unless it overflows to inf (handled below)
        if np.all(np.abs(k) < _INT64_SAFE):
            return k.astype(np.int64)
        frac_g = Fraction(g)
        return np.array([int(round(Fraction(float(u)) / frac_g)) for u in scores],
                        dtype=object)
    if integer or g == 1.0:
        values = scores
    elif scores.dtype != object and np.all(np.abs(scores) < 1 << 53):
        # exact in float64: |u| < 2^53 and g a power of two
        with np.errstate(over="ignore"):
            values = np.rint(scores.astype(float) / g)
        if np.all(np.abs(values) < _INT64_SAFE):
            return values.astype(np.int64)
        values = np.array([int(v) for v in values], dtype=object)
    else:
        frac_g = Fraction(g)
        values = np.array([int(round(Fraction(int(u)) / frac_g)) for u in scores],
                          dtype=object)
    values = [int(v) for v in values] if values.dtype == object else values
    if isinstance(values, list):
        if all(-_INT64_SAFE < v < _INT64_SAFE for v in values):
            return np.array(values, dtype=np.int64)
        return np.array(values, dtype=object)
    if values.dtype.kind == "u" and np.any(values >= _INT64_SAFE):
        return np.array([int(v) for v in values], dtype=object)
    values = values.astype(np.int64)
    if np.all(np.abs(values) < _INT64_SAFE):  # (int64 min: abs overflows to itself)
        return values
    return np.array([int(v) for v in values], dtype=object)


def snap_scores(scores, g, integer=False):
    """Lattice scores ``round(u/g)`` as int64 (finite scores only).

    Rounding is exact and monotone, so monotone scores stay monotone. Refuses scores whose
    lattice value reaches 2^61 in magnitude, without printing any score. The selections
    use :func:`relative_lattice_scores` instead, which refuses nothing; this absolute form
    serves the streamed selection, whose blocks need one common origin.
    """
    k = _lattice_values(scores, g, integer)
    if k.dtype == object or np.any(np.abs(k) >= _MAX_LATTICE):
        raise ValueError(
            "scores are too large for exact selection: |score| / step must stay below 2^61 "
            "(step = sensitivity·2^-20 for float scores); rescale the scores and the "
            "sensitivity together.")
    return k


def relative_lattice_scores(scores, g, integer=False):
    """Lattice scores relative to the best, ``max(k_i − max_j k_j, −2^61)``, as int64.

    ``k = round(u/g)`` exactly (:func:`_lattice_values`). The clamped score
    ``max(k_i, max_j k_j − 2^61)`` is a maximum of two quantities that each move by at most
    the lattice sensitivity ``S`` between neighbours, so it moves by at most ``S`` too:
    the exponential mechanism and report-noisy-max keep their guarantee on it, and their
    law depends only on these differences. Clamping changes only candidates more than
    2^61 steps (2^41·Δ or more) below the best, whose probability it raises from below
    exp(−γ·2^61) to that. Nothing finite is refused, so whether a selection runs cannot
    depend on the size of private scores.
    """
    k = _lattice_values(scores, g, integer)
    if k.dtype != object:  # |k| < 2^62: the differences fit int64
        return -np.minimum(k.max() - k, _MAX_LATTICE)
    top = max(k)
    return np.array([-min(top - v, _MAX_LATTICE) for v in k], dtype=np.int64)


@functools.lru_cache(maxsize=256)
def dyadic_floor(x):
    """``(a, b)`` with ``a / 2^b <= x`` the largest such dyadic with ``a < 2^24``, ``b <= 62``.

    ``x`` is a non-negative rational (a :class:`fractions.Fraction`), capped at 2^23.
    Rounding down only lowers the realised ε.
    """
    x = min(Fraction(x), _MAX_RATE)
    if x <= 0:
        return 0, 0
    b = _RATE_BITS - 1 - (x.numerator.bit_length() - x.denominator.bit_length())
    b = max(0, min(_MAX_EXPONENT, b))
    a = math.floor(x * (1 << b))
    while a >= 1 << _RATE_BITS:  # the bit-length estimate is off by one either way
        b -= 1
        a = math.floor(x * (1 << b))
    while a < 1 << (_RATE_BITS - 1) and b < _MAX_EXPONENT:
        b += 1
        a = math.floor(x * (1 << b))
    return a, b


def _geometric_at_least(rng, q):
    """Bernoulli(exp(-q)) for int64 ``q >= 0``: q successive Bernoulli(exp(-1)) successes.

    The run stops at the first failure, so a huge ``q`` costs a few rounds (each entry
    continues with probability e^-1 per coin).
    """
    out = np.ones(q.shape, dtype=bool)
    pending = np.flatnonzero(q > 0)
    left = q[pending]
    coins = _noise._COINS_PER_ROUND[0]
    while pending.size:
        lead = _noise._leading_successes(rng, pending.size, coins)
        out[pending[lead < np.minimum(left, coins)]] = False
        left = left - lead
        still = (lead == coins) & (left > 0)
        pending, left = pending[still], left[still]
        coins = _noise._COINS_PER_ROUND[1]
    return out


def _dyadic_exp_unit(rng, r, b):
    """Bernoulli(exp(-r/2^b)) for int64 ``0 <= r < 2^b`` (CKS 2020, Algorithm 1).

    A_k ~ Bernoulli(r/(2^b k)) until one is 0; 1 iff the stopping k is odd. Bernoulli(
    r/(2^b k)) is (V = 0) and (U < r) with V uniform below k and U uniform below 2^b, so
    no product of integers is formed (2^b may be 2^62).
    """
    out = np.zeros(r.shape, dtype=bool)
    active = np.arange(r.size)
    k = 1
    while active.size:
        go = rng.integers(0, 1 << b, active.size) < r[active]
        if k > 1:
            go &= rng.integers(0, k, active.size) == 0
        out[active[~go]] = (k % 2) == 1
        active = active[go]
        k += 1
    return out


def split_exponent(d, a, b):
    """``(q, r)`` with ``a·d/2^b = q + r/2^b``, ``0 <= r < 2^b``, for an int64 array
    ``0 <= d < 2^63``, ``0 <= a < 2^24``, ``0 <= b <= 62``, without overflow: ``a·d`` is
    formed in two 32-bit limbs. A ``q`` of 2^62 or more is returned as 2^62
    (see :func:`exp_coin`).
    """
    d = np.asarray(d, dtype=np.int64)
    a = np.int64(a)
    p_hi = a * (d >> 32)  # < 2^55
    p_lo = a * (d & _MASK32)  # < 2^56
    T = p_hi + (p_lo >> 32)  # a·d = T·2^32 + L
    L = p_lo & _MASK32
    if b >= 32:
        c = b - 32
        q = np.minimum(T >> c, _CAP)
        r = ((T & ((1 << c) - 1)) << 32) | L
    else:
        big = T >= (1 << (30 + b))
        q = np.where(big, _CAP, (np.where(big, 0, T) << (32 - b)) + (L >> b))
        q = np.minimum(q, _CAP)
        r = L & ((1 << b) - 1)
    return q, r


def exp_coin(rng, d, a, b):
    """Exact Bernoulli(exp(-a·d/2^b)) coins for an int64 array ``0 <= d < 2^63``.

    ``a < 2^24`` and ``0 <= b <= 62`` (from :func:`dyadic_floor`). The exponent is split
    exactly into an integer part q and a remainder r/2^b with two 32-bit limbs (no int64
    overflow): the coin is a run of q Bernoulli(exp(-1)) successes and one
    Bernoulli(exp(-r/2^b)). An integer part beyond 2^62 is replaced by 2^62, which does
    not change any outcome: the run of successes ends long before (each continues with
    probability e^-1; 2^62 successes never happen).
    """
    d = np.asarray(d, dtype=np.int64)
    if a == 0:
        return np.ones(d.shape, dtype=bool)
    return split_coin(rng, *split_exponent(d, a, b), b)


def split_coin(rng, q, r, b):
    """Exact Bernoulli(exp(-(q + r/2^b))) coins from :func:`split_exponent`'s output."""
    out = _geometric_at_least(rng, q)
    live = np.flatnonzero(out & (r > 0))
    if live.size:
        out[live] = _dyadic_exp_unit(rng, r[live], b)
    return out


def sample_exponential(rng, k, a, b, n=None, *, scale=float("nan"), tag=None):
    """Positions drawn with P(i) ∝ exp(-γ (max_j k_j - k_i)), γ = a/2^b, exactly.

    Rejection sampling: uniform proposals (exact uniform integers), each kept with an
    exact Bernoulli(exp(-γ d_i)) coin (:func:`exp_coin`). Kept proposals are i.i.d. with
    the target law, whichever batch they come from, so batches only trade memory for
    fewer numpy calls. Expected proposals per sample: ``m / Σ_i exp(-γ d_i) <= m``.

    Parameters
    ----------
    rng : numpy.random.Generator
    k : ndarray of int64, shape (m,)
        Lattice scores (:func:`snap_scores`), all candidates eligible.
    a, b : int
        The rate γ = a/2^b (:func:`dyadic_floor`).
    n : int or None
        Number of independent samples; ``None`` for one (returned as an int).
    scale, tag :
        Recorded by the noise spy (:func:`~skhybrid.mechanisms._noise.record_noise`) as
        one ``"exact_exponential"`` draw over the m candidates; ``scale`` is the caller's
        ``1/γ`` in score units (2Δ/ε up to the lattice rounding).

    Returns
    -------
    int or ndarray of int64
    """
    k = np.asarray(k, dtype=np.int64)
    m = k.size
    _noise._record("exact_exponential", scale, (m,) if n is None else (int(n), m), tag)
    want = 1 if n is None else int(n)
    q, r = split_exponent(k.max() - k, a, b)  # once per candidate, not per proposal
    got, need = [], want
    batch = min(1 << 16, max(64, 2 * want))
    while need > 0:
        proposals = rng.integers(0, m, batch) if m > 1 else np.zeros(batch, dtype=np.int64)
        if a == 0:
            kept = proposals[:need]
        else:
            kept = proposals[split_coin(rng, q[proposals], r[proposals], b)][:need]
        got.append(kept)
        need -= kept.size
        if need > 0:  # grow while the acceptance rate is low (many candidates far below)
            batch = min(1 << 16 if want == 1 else 1 << 20, 4 * batch)
    out = np.concatenate(got)
    return int(out[0]) if n is None else out
