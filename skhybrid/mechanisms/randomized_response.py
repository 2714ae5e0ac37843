"""Local randomizers: binary randomized response and Gaussian randomized response."""

import math

import numpy as np

from ..accounting import _composition as comp
from . import _noise
from ._base import Mechanism, SignRandomizer, check_delta, check_epsilon

__all__ = ["RandomizedResponse", "GaussianRandomizedResponse"]


def _check_bits(bits):
    bits = np.asarray(bits)
    if bits.size and not np.isin(bits, (0, 1)).all():
        raise ValueError("Randomized response takes bits: every value must be 0 or 1.")
    return bits.astype(np.int8)


class RandomizedResponse(SignRandomizer):
    """Binary randomized response (Warner 1965): keep a bit w.p. e^ε/(1+e^ε), else flip it.

    ε-LDP for each agent (the likelihood ratio of any report is at most e^ε). Unbiased
    estimate of a mean of bits: ``debias(reports) = c_ε · (mean(reports) − 1/(e^ε+1))`` with
    c_ε = (e^ε+1)/(e^ε−1).

    Parameters
    ----------
    epsilon : float
        Local privacy parameter ε > 0 of each agent's single report.
    """

    name = "randomized_response"
    kind = "pure"

    def __init__(self, epsilon):
        self.epsilon = check_epsilon(epsilon)

    def params(self):
        return {"keep_probability": self.keep_probability}

    def __call__(self, bits, rng):
        """Each agent's randomized report of its bit (one report per agent)."""
        bits = _check_bits(bits)
        flip = _noise.bernoulli(rng, 1.0 - self.keep_probability, bits.shape or None,
                                tag=self.name)
        return np.where(flip, 1 - bits, bits).astype(np.int8)

    def debias(self, reports, axis=None):
        """Unbiased estimate of the fraction of 1-bits behind ``reports``."""
        mean = np.mean(reports, axis=axis)
        return self.c_epsilon * (mean - 1.0 / (math.exp(self.epsilon) + 1.0))


class GaussianRandomizedResponse(Mechanism):
    """Gaussian randomized response RR_{ε,δ}(b) ~ N(b, 2 ln(2/δ)/ε²) (Kohen & Sheffet, §2).

    Each agent adds Gaussian noise of standard deviation σ = sqrt(2 ln(2/δ))/ε to its bit;
    averaging N reports estimates the mean of the bits with error O(σ/√N).

    Privacy: a bit has ℓ2-sensitivity 1, so the report is the Gaussian mechanism with
    μ = 1/σ. The paper's σ is the classic calibration with ln(2/δ) in place of
    ln(1.25/δ); rather than rely on the classic bound's range of ε, the event records
    μ = 1/σ and checks against the exact Gaussian curve (Balle & Wang 2018, Thm 8) that
    the claimed (ε, δ) holds; the constructor raises if it does not.

    Parameters
    ----------
    epsilon : float
    delta : float in (0, 1)
    """

    name = "gaussian_randomized_response"
    kind = "gaussian"

    def __init__(self, epsilon, delta):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, strictly_positive=True)
        self.sigma = math.sqrt(2.0 * math.log(2.0 / self.delta)) / self.epsilon
        exact_delta = comp.gaussian_delta(1.0 / self.sigma, self.epsilon)
        if exact_delta > self.delta * (1 + 1e-9):
            raise ValueError(
                f"Gaussian randomized response with sigma={self.sigma:.4g} is not "
                f"({self.epsilon}, {self.delta})-DP (its exact delta at this epsilon is "
                f"{exact_delta:.3g}); use a smaller epsilon or the analytic GaussianMechanism."
            )

    def _event_fields(self):
        return self.epsilon, self.delta, {"mu": 1.0 / self.sigma}

    def params(self):
        return {"sigma": self.sigma}

    def __call__(self, bits, rng):
        bits = _check_bits(bits).astype(float)
        return bits + _noise.gaussian(rng, self.sigma, bits.shape or None, tag=self.name)
