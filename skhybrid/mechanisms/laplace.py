"""The Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006)."""

import numpy as np

from . import _noise
from ._base import Mechanism, check_epsilon, check_sensitivity

__all__ = ["LaplaceMechanism", "laplace_mechanism"]


class LaplaceMechanism(Mechanism):
    """Add Laplace(Δ/ε) noise to a numeric query of ℓ1-sensitivity Δ.

    Pure ε-DP (Dwork & Roth 2014, Thm 3.6): for neighbours, the densities of
    ``f(D) + Lap(Δ/ε)`` differ by at most a factor ``exp(ε ‖f(D) − f(D')‖₁ / Δ) ≤ e^ε``.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    sensitivity : float
        ℓ1-sensitivity Δ of the query (over the whole output vector).
    """

    name = "laplace"
    kind = "pure"

    def __init__(self, epsilon, sensitivity=1.0):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)

    @property
    def scale(self):
        """The Laplace scale b = Δ/ε."""
        return self.sensitivity / self.epsilon

    def params(self):
        return {"scale": self.scale, "sensitivity": self.sensitivity}

    def __call__(self, value, rng):
        """Release ``value`` + Laplace noise (same shape as ``value``)."""
        value = np.asarray(value, dtype=float)
        noise = _noise.laplace(rng, self.scale, value.shape or None, tag=self.name)
        return value + noise


def laplace_mechanism(value, *, sensitivity, epsilon, rng):
    """Functional form of :class:`LaplaceMechanism`."""
    return LaplaceMechanism(epsilon, sensitivity)(value, rng)
