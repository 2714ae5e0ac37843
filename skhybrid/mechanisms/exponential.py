"""Selection mechanisms: the exponential mechanism (Gumbel-max) and report-noisy-max."""

import numpy as np

from . import _noise
from .._validation import check_generator
from ._base import Mechanism, check_epsilon, check_sensitivity

__all__ = [
    "ExponentialMechanism",
    "exponential_mechanism",
    "ReportNoisyMax",
    "report_noisy_max",
    "report_noisy_min",
]


def _check_scores(scores, excluded=-np.inf):
    """Validate candidate scores; ``excluded`` (−inf for a max, +inf for a min) drops one."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores must be a non-empty 1-d array of candidate scores.")
    if np.isnan(scores).any() or (scores == -excluded).any():
        raise ValueError(
            f"scores must not contain NaN or {-excluded} (use {excluded} to exclude a candidate)."
        )
    if not np.isfinite(scores).any():
        raise ValueError("scores must contain at least one finite score: every candidate is excluded.")
    return scores


class ExponentialMechanism(Mechanism):
    """Select a candidate with probability ∝ exp(ε·u/(2Δ)) (McSherry & Talwar 2007, Thm 6).

    Implemented as Gumbel-max: ``argmax_i u_i + G_i`` with G_i i.i.d. Gumbel(0, 2Δ/ε) has
    exactly that distribution, and never exponentiates a score (no overflow, no
    underflow, streamable over blocks of candidates).

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    sensitivity : float, default=1.0
        Δ: the largest change of any candidate's score between neighbours.
    monotonic : bool, default=False
        If every score moves in the same direction between any two neighbours (e.g.
        counts of one dataset), the factor 2 can be dropped: exp(ε·u/Δ) is ε-DP
        (McSherry & Talwar 2007; Dwork & Roth 2014, §3.4).

    Notes
    -----
    The mechanism is ε-bounded-range, hence (ε²/8)-zCDP (Cesar & Rogers 2021, Lemma 3.2);
    the event carries that ρ so the accountant's zCDP view can use it.
    """

    name = "exponential"
    kind = "pure"

    def __init__(self, epsilon, sensitivity=1.0, monotonic=False):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.monotonic = bool(monotonic)

    @property
    def gumbel_scale(self):
        """Scale of the Gumbel noise: ``2Δ/ε``, or ``Δ/ε`` for monotone scores."""
        factor = 1.0 if self.monotonic else 2.0
        return factor * self.sensitivity / self.epsilon

    def _event_fields(self):
        # Bounded range with parameter ε gives ε²/8-zCDP; monotone scoring uses
        # the full ε as its range bound too, so the same ρ applies.
        return self.epsilon, 0.0, {"rho": self.epsilon**2 / 8}

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
        scores = _check_scores(scores)
        noise = _noise.gumbel(rng, self.gumbel_scale, scores.shape, tag=self.name)
        return int(np.argmax(scores + noise))


def exponential_mechanism(scores, *, sensitivity, epsilon, rng, monotonic=False):
    """Select an index with probability proportional to ``exp(ε·score/(2Δ))``.

    The functional form of :class:`ExponentialMechanism` (Gumbel-max sampling; pure ε-DP).

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


class ReportNoisyMax(Mechanism):
    """Report the index of the largest Laplace-noised score.

    With Laplace(2Δ/ε) noise this is ε-DP for any scores of sensitivity Δ; for monotone
    scores (e.g. counting queries) Laplace(Δ/ε) suffices (Dwork & Roth 2014, Claim 3.9).
    Only the index is released; releasing the noisy value costs extra.

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
    """

    name = "report_noisy_max"
    kind = "pure"

    def __init__(self, epsilon, sensitivity=1.0, monotonic=False, minimize=False):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.monotonic = bool(monotonic)
        self.minimize = bool(minimize)

    @property
    def scale(self):
        """Scale of the Laplace noise: ``2Δ/ε``, or ``Δ/ε`` for monotone scores."""
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

    def __call__(self, scores, rng):
        rng = check_generator(rng, "rng")
        if self.minimize:
            scores = -_check_scores(scores, excluded=np.inf)
        else:
            scores = _check_scores(scores)
        noise = _noise.laplace(rng, self.scale, scores.shape, tag=self.name)
        return int(np.argmax(scores + noise))


def report_noisy_max(scores, *, sensitivity, epsilon, rng, monotonic=False):
    """Report the index of the largest Laplace-noised score.

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
    """Report the index of the smallest Laplace-noised score.

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
