"""The Gaussian mechanism, with classic and analytic calibration."""

import numpy as np

from ..accounting import _composition as comp
from . import _noise
from ._base import Mechanism, check_delta, check_epsilon, check_sensitivity

__all__ = ["GaussianMechanism", "gaussian_mechanism"]


class GaussianMechanism(Mechanism):
    """Add N(0, σ²) noise to a query of ℓ2-sensitivity Δ, with σ set from (ε, δ).

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    delta : float
        Privacy parameter δ ∈ (0, 1).
    sensitivity : float, default=1.0
        ℓ2-sensitivity Δ of the query.
    calibration : {"analytic", "classic"}, default="analytic"
        ``"analytic"``: the smallest σ with δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ,
        the exact privacy curve of the Gaussian mechanism (Balle & Wang 2018, Thm 8;
        their Algorithm 1 computes the same σ), valid for every ε > 0.
        ``"classic"``: σ = Δ sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1), valid only
        for ε < 1.

    Notes
    -----
    The event recorded has kind ``"gaussian"`` with μ = Δ/σ, so the accountant can
    compose several Gaussian releases exactly (one Gaussian with μ = sqrt(Σ μᵢ²)).
    """

    name = "gaussian"
    kind = "gaussian"

    def __init__(self, epsilon, delta, sensitivity=1.0, calibration="analytic"):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, strictly_positive=True)
        self.sensitivity = check_sensitivity(sensitivity)
        if calibration == "analytic":
            self.sigma = comp.analytic_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)
        elif calibration == "classic":
            self.sigma = comp.classic_gaussian_sigma(self.epsilon, self.delta, self.sensitivity)
        else:
            raise ValueError(
                f"calibration must be 'analytic' or 'classic'; got {calibration!r}."
            )
        self.calibration = calibration

    def _event_fields(self):
        return self.epsilon, self.delta, {"mu": self.sensitivity / self.sigma}

    def params(self):
        return {"sigma": self.sigma, "sensitivity": self.sensitivity,
                "calibration": self.calibration}

    def __call__(self, value, rng):
        """Release ``value`` + Gaussian noise (same shape as ``value``)."""
        value = np.asarray(value, dtype=float)
        return value + _noise.gaussian(rng, self.sigma, value.shape or None, tag=self.name)


def gaussian_mechanism(value, *, sensitivity, epsilon, delta, rng, calibration="analytic"):
    """Functional form of :class:`GaussianMechanism`."""
    return GaussianMechanism(epsilon, delta, sensitivity, calibration)(value, rng)
