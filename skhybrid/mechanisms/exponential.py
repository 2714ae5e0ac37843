"""Selection mechanisms: the exponential mechanism and report-noisy-max, sampled exactly.

Both snap the scores to an integer lattice and draw from uniform integers only (see
:mod:`skhybrid.mechanisms._exact_selection` and docs/guarantee.rst): the law of the
released index is exactly the one the charge covers, with no float noise whose bounded
support would give far candidates probability 0 on one data set and not on a neighbour.
"""

import functools
import math
from fractions import Fraction

import numpy as np

from . import _noise
from .._validation import check_generator
from ..utils._rounding import float_at_least
from ._base import Mechanism, check_epsilon, check_sensitivity, exact_values
from ._exact_selection import (
    dyadic_floor,
    sample_exponential,
    relative_lattice_scores,
    score_lattice,
)

__all__ = [
    "ExponentialMechanism",
    "exponential_mechanism",
    "ReportNoisyMax",
    "report_noisy_max",
    "report_noisy_min",
]


def _check_scores(scores, excluded=-np.inf):
    """Validate candidate scores; ``excluded`` (−inf for a max, +inf for a min) drops one.

    Integer scores stay exact integers (int64, or Python ints beyond 2^62): a cast to
    float64 would round them above 2^53, by more than the sensitivity.
    """
    raw = np.asarray(scores)
    if raw.ndim != 1 or raw.size == 0:
        raise ValueError("scores must be a non-empty 1-d array of candidate scores.")
    if raw.dtype.kind in "iu" or (raw.dtype == object and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in raw)):
        if raw.dtype.kind == "i" and not (raw.min() <= -(1 << 62) or raw.max() >= 1 << 62):
            return raw.astype(np.int64)
        return np.array([int(v) for v in raw], dtype=object)
    scores = exact_values(raw, "scores").astype(float)  # refuses what float64 would round
    if np.isnan(scores).any() or (scores == -excluded).any():
        raise ValueError(
            f"scores must not contain NaN or {-excluded} (use {excluded} to exclude a candidate)."
        )
    if not np.isfinite(scores).any():
        raise ValueError("scores must contain at least one finite score: every candidate is excluded.")
    return scores


def _allowed(scores):
    """Positions of the candidates taking part (every one, for integer scores)."""
    if scores.dtype.kind == "f":
        return np.flatnonzero(np.isfinite(scores))
    return np.arange(scores.size)


@functools.lru_cache(maxsize=256)
def _scaled(epsilon, monotonic):
    """ε/2 (ε for monotone scores), exactly: the rate per unit of sensitivity."""
    return Fraction(epsilon) / (1 if monotonic else 2)


# The lattices are pure functions of public parameters (``rate`` is the mechanism's
# ``_scaled_epsilon()``, which subclasses may change); cached because a Frank-Wolfe run
# asks for the same one at every step (the Fraction arithmetic costs tens of µs).
@functools.lru_cache(maxsize=256)
def _exponential_lattice(sensitivity, epsilon, monotonic, integer, rate):
    factor = 1 if monotonic else 2
    g, S = score_lattice(sensitivity, epsilon, factor, integer)
    a, b = dyadic_floor(rate / S)
    return g, S, a, b


@functools.lru_cache(maxsize=256)
def _noisy_max_lattice(sensitivity, epsilon, monotonic, integer, rate):
    factor = 1 if monotonic else 2
    g, S = score_lattice(sensitivity, epsilon, factor, integer)
    t = math.ceil(S / rate)
    if t > 1 << 50:
        raise ValueError(
            "epsilon is too small for exact report-noisy-max with this sensitivity: "
            f"the noise would span more than 2^50 lattice steps; use epsilon >= "
            f"{math.nextafter(factor * S / 2.0**50, math.inf):.3g}"
            + (" or float scores (integer=False)." if integer else "."))
    return g, S, t


class _LatticeSelection(Mechanism):
    """What the two selections share: the rate per unit of sensitivity."""

    def _scaled_epsilon(self):
        """ε/2 (ε for monotone scores), exactly: the rate per unit of sensitivity."""
        return _scaled(self.epsilon, self.monotonic)


class ExponentialMechanism(_LatticeSelection):
    """Select a candidate with probability ∝ exp(ε·u/(2Δ)) (McSherry & Talwar 2007, Thm 6).

    Sampled exactly on a lattice. Float scores are rounded to multiples of a dyadic step
    ``g = Δ·2^-20`` (coarsened to as much as ``Δ·2^-8`` at very small ε; integer scores
    with ``integer=True`` are used as they are, ``g = 1``), exactly: integer scores never
    pass through a float. A lattice score then moves by at most ``S = floor(Δ/g) + 1``
    steps between neighbours (``S = Δ`` for integers), and candidate ``i`` is drawn with
    probability ∝ exp(-γ d_i), ``d_i = min(max_j k_j - k_i, 2^61)`` in steps, for a dyadic
    rate ``γ <= ε/(2S)`` (``ε/S`` when monotonic) rounded *down*. The clamp at 2^61 steps
    is a maximum of two scores that each move by at most S, so it moves by at most S too:
    no finite score is refused, and only candidates more than 2^41·Δ below the best
    change (their probability, below exp(-γ 2^61), rises to that). This is the exponential
    mechanism on the clamped lattice scores with sensitivity S, hence ε-DP with a realised
    ε at most the charged one (below it by a relative ``g/Δ <= 2^-8`` for float scores).
    The draw is rejection sampling with uniform proposals and exact Bernoulli(exp(-γ d))
    coins (Canonne, Kamath & Steinke 2020, Algorithm 1): only uniform integers are drawn,
    so every candidate keeps its exact, positive probability (float Gumbel-max gives
    probability 0 to candidates beyond its bounded support). Expected proposals:
    ``m / Σ_i exp(-γ d_i) <= m`` for m candidates.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    sensitivity : float, default=1.0
        Δ: the largest change of any candidate's score between neighbours.
    monotonic : bool, default=False
        If every score moves in the same direction between any two neighbours (e.g.
        counts of one dataset), the factor 2 can be dropped: exp(ε·u/Δ) is ε-DP
        (McSherry & Talwar 2007; Dwork & Roth 2014, §3.4). Rounding to the lattice is
        monotone, so the lattice scores stay monotone.
    integer : bool, default=False
        The scores are integers and Δ is an integer (counts, minus error counts): the
        lattice is the integers and nothing is rounded. Non-integer scores are refused.

    Notes
    -----
    The mechanism is ε-bounded-range, hence (ε²/8)-zCDP (Cesar & Rogers 2021, Lemma 3.2);
    the event carries that ρ so the accountant's zCDP view can use it. ``-inf`` excludes
    a candidate (it is never proposed).
    """

    name = "exponential"
    kind = "pure"

    def __init__(self, epsilon, sensitivity=1.0, monotonic=False, integer=False):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.monotonic = bool(monotonic)
        self.integer = bool(integer)
        self.lattice()  # refuse unusable (public) parameters now, before any charge

    @property
    def gumbel_scale(self):
        """Nominal scale ``2Δ/ε`` (``Δ/ε`` for monotone scores) of the selection.

        ``1/γ`` in score units before the lattice rounding: the scale of the equivalent
        Gumbel-max form, kept in the ledger.
        """
        factor = 1.0 if self.monotonic else 2.0
        return factor * self.sensitivity / self.epsilon

    def lattice(self):
        """The lattice of the scores and the dyadic rate of the draw.

        Returns
        -------
        g : float
            Lattice step (a power of two; 1 for integer scores).
        S : int
            Lattice sensitivity: ``floor(Δ/g) + 1`` (``Δ`` for integer scores).
        a, b : int
            The rate ``γ = a/2^b <= ε/(2S)`` (``ε/S`` when monotonic) per lattice step.
        """
        return _exponential_lattice(self.sensitivity, self.epsilon, self.monotonic,
                                    self.integer, self._scaled_epsilon())

    def _select(self, scores, rng, n=None):
        """``n`` independent selections (one, as an int, for ``n=None``)."""
        scores = _check_scores(scores)
        allowed = _allowed(scores)
        g, _, a, b = self.lattice()
        k = relative_lattice_scores(scores[allowed], g, self.integer)
        scale = g * 2.0**b / a if a else math.inf
        pos = sample_exponential(rng, k, a, b, n, scale=scale, tag=self.name)
        return int(allowed[pos]) if n is None else allowed[pos]

    def _event_fields(self):
        # Bounded range with parameter ε gives ε²/8-zCDP; monotone scoring uses
        # the full ε as its range bound too, so the same ρ applies. Exact, rounded up
        # (ε**2 / 8 rounds to nearest: half the time an ulp below).
        return self.epsilon, 0.0, {"rho": float_at_least(Fraction(self.epsilon) ** 2 / 8)}

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"sensitivity": self.sensitivity, "monotonic": self.monotonic,
                "gumbel_scale": self.gumbel_scale}

    def __call__(self, scores, rng):
        """Index of the selected candidate."""
        rng = check_generator(rng, "rng")  # (an int seeds; None: fresh entropy)
        return self._select(scores, rng)


def exponential_mechanism(scores, *, sensitivity, epsilon, rng, monotonic=False):
    """Select an index with probability proportional to ``exp(ε·score/(2Δ))``.

    The functional form of :class:`ExponentialMechanism` (exact lattice sampling; pure
    ε-DP).

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
        Scores of the candidates (higher is better).
    sensitivity : float
        The sensitivity Δ of every score.
    epsilon : float
        Privacy parameter ε.
    rng : numpy.random.Generator, int, numpy.random.RandomState or None
        Source of every random draw (an int seeds a new generator; ``None`` draws fresh
        OS entropy, as for the estimators' ``random_state``).
    monotonic : bool, default=False
        Whether all scores move in the same direction between neighbours
        (``exp(ε·score/Δ)`` then suffices).

    Returns
    -------
    index : int
        The selected candidate.
    """
    return ExponentialMechanism(epsilon, sensitivity, monotonic)(scores, rng)


class ReportNoisyMax(_LatticeSelection):
    """Report the index of the largest noisy score, with exact discrete Laplace noise.

    The scores are snapped to the lattice of :class:`ExponentialMechanism` (step ``g``,
    lattice sensitivity ``S``; integers as they are with ``integer=True``; taken relative
    to the best and clamped at 2^61 steps below it, which keeps the sensitivity S and
    refuses nothing), and each gets
    independent discrete Laplace noise, ``P(z) ∝ exp(-|z|/t)``, with the integer scale
    ``t = ceil(2S/ε)`` (``ceil(S/ε)`` for monotone scores) in lattice steps
    (:func:`~skhybrid.mechanisms._noise.discrete_laplace`, exact). The first index wins
    ties. Only the index is released; releasing the noisy value costs extra.

    Privacy (Dwork & Roth 2014, Claim 3.9, on the lattice): fix the other candidates'
    noise. Candidate i wins iff ``k_i + Z_i > k_j + Z_j`` for ``j < i`` and ``>=`` for
    ``j > i``; on integers that is the up-set ``{Z_i >= c}`` with
    ``c = max(max_{j<i}(k_j + Z_j) + 1, max_{j>i}(k_j + Z_j)) - k_i``. Between neighbours
    each ``k`` moves by at most S, so c moves by at most 2S (by at most S, in either
    direction, for monotone scores: the maximum and ``k_i`` move the same way); the
    tie-break depends on indices only, so it is the same on both sides. For the discrete
    Laplace and an integer shift s >= 0, ``P(Z >= c + s) >= e^{-s/t} P(Z >= c)``: map z to
    z + s, and ``|z + s| <= |z| + s``. Hence each conditional win probability changes by
    at most ``e^{2S/t} <= e^ε`` (``e^{S/t}``), and so does the unconditional one. Excluded
    candidates (``-inf``, or ``+inf`` for a min) never win and are not noised.
    With Laplace(2Δ/ε) noise on real scores this is the textbook mechanism; monotone
    scores (e.g. counting queries) need only Δ/ε.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε.
    sensitivity : float, default=1.0
        The sensitivity Δ of every score.
    monotonic : bool, default=False
        Whether all scores move in the same direction between neighbours (the noise
        scale is then Δ/ε).
    minimize : bool, default=False
        Report the argmin instead (report-noisy-min; same guarantee).
    integer : bool, default=False
        Integer scores with an integer Δ: used as they are, without rounding.
    """

    name = "report_noisy_max"
    kind = "pure"

    def __init__(self, epsilon, sensitivity=1.0, monotonic=False, minimize=False,
                 integer=False):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.monotonic = bool(monotonic)
        self.minimize = bool(minimize)
        self.integer = bool(integer)
        self.lattice()  # refuse unusable (public) parameters now, before any charge

    @property
    def scale(self):
        """Nominal scale of the Laplace noise: ``2Δ/ε``, or ``Δ/ε`` for monotone scores.

        The lattice noise has scale ``t·g``, at least this (see :meth:`lattice`).
        """
        factor = 1.0 if self.monotonic else 2.0
        return factor * self.sensitivity / self.epsilon

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"scale": self.scale, "sensitivity": self.sensitivity,
                "monotonic": self.monotonic, "minimize": self.minimize}

    def lattice(self):
        """The lattice of the scores and the integer scale of the discrete Laplace noise.

        Returns
        -------
        g : float
            Lattice step (a power of two; 1 for integer scores).
        S : int
            Lattice sensitivity: ``floor(Δ/g) + 1`` (``Δ`` for integer scores).
        t : int
            ``ceil(2S/ε)`` (``ceil(S/ε)`` when monotonic), in lattice steps.
        """
        return _noisy_max_lattice(self.sensitivity, self.epsilon, self.monotonic,
                                  self.integer, self._scaled_epsilon())

    def _select(self, scores, rng, n=None):
        """``n`` independent selections (one, as an int, for ``n=None``)."""
        if self.minimize:
            scores = -_check_scores(scores, excluded=np.inf)
        else:
            scores = _check_scores(scores)
        allowed = _allowed(scores)
        g, _, t = self.lattice()
        # relative to the best and clamped: in [-2^61, 0], so adding the noise cannot overflow
        k = relative_lattice_scores(scores[allowed], g, self.integer)
        size = (allowed.size,) if n is None else (int(n), allowed.size)
        noisy = k + _noise.discrete_laplace(rng, t, size, unit=g, tag=self.name)
        pos = np.argmax(noisy, axis=-1)  # first index on ties
        return int(allowed[pos]) if n is None else allowed[pos]

    def __call__(self, scores, rng):
        """Index of the selected candidate."""
        rng = check_generator(rng, "rng")
        return self._select(scores, rng)


def report_noisy_max(scores, *, sensitivity, epsilon, rng, monotonic=False):
    """Report the index of the largest noisy score (exact discrete Laplace noise).

    The functional form of :class:`ReportNoisyMax` (pure ε-DP; only the index is released).

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
        Scores of the candidates.
    sensitivity : float
        The sensitivity Δ of every score.
    epsilon : float
        Privacy parameter ε.
    rng : numpy.random.Generator, int, numpy.random.RandomState or None
        Source of every random draw (an int seeds a new generator; ``None`` draws fresh
        OS entropy, as for the estimators' ``random_state``).
    monotonic : bool, default=False
        Whether all scores move in the same direction between neighbours.

    Returns
    -------
    index : int
        The index of the largest noisy score.
    """
    return ReportNoisyMax(epsilon, sensitivity, monotonic)(scores, rng)


def report_noisy_min(scores, *, sensitivity, epsilon, rng, monotonic=False):
    """Report the index of the smallest noisy score (exact discrete Laplace noise).

    Report-noisy-min: :class:`ReportNoisyMax` with ``minimize=True``, the same guarantee.

    Parameters
    ----------
    scores : array-like of shape (n_candidates,)
        Scores of the candidates.
    sensitivity : float
        The sensitivity Δ of every score.
    epsilon : float
        Privacy parameter ε.
    rng : numpy.random.Generator, int, numpy.random.RandomState or None
        Source of every random draw (an int seeds a new generator; ``None`` draws fresh
        OS entropy, as for the estimators' ``random_state``).
    monotonic : bool, default=False
        Whether all scores move in the same direction between neighbours.

    Returns
    -------
    index : int
        The index of the smallest noisy score.
    """
    return ReportNoisyMax(epsilon, sensitivity, monotonic, minimize=True)(scores, rng)
