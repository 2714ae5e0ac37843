"""Local randomizers: binary randomized response and Gaussian randomized response."""

import math

import numpy as np

from . import _noise
from .gaussian import gaussian_lattice, zcdp_rho_for
from .._validation import check_generator
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
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"keep_probability": self.keep_probability}

    def __call__(self, bits, rng):
        """Each agent's randomized report of its bit (one report per agent)."""
        rng = check_generator(rng, "rng")  # (an int seeds; None: fresh entropy)
        bits = _check_bits(bits)
        flip = _noise.bernoulli(rng, self.flip_probability, bits.shape or None, tag=self.name)
        return np.where(flip, 1 - bits, bits).astype(np.int8)

    def debias(self, reports, axis=None):
        """Return an unbiased estimate of the fraction of 1-bits behind ``reports``.

        Parameters
        ----------
        reports : array-like of {0, 1}
            Randomized reports, one per agent.
        axis : int or None, default=None
            Axis along which to average (``None``: all reports).

        Returns
        -------
        fraction : float or ndarray
            ``c_ε (mean(reports) − q)``, with the flip probability ``q`` ≈ 1/(e^ε+1) and
            ``c_ε = 1/(1 − 2q)`` of the coin actually drawn.
        """
        mean = np.mean(reports, axis=axis)
        return self.c_epsilon * (mean - self.flip_probability)


class GaussianRandomizedResponse(Mechanism):
    """Gaussian randomized response RR_{ε,δ}(b) ~ N(b, 2 ln(2/δ)/ε²) (Kohen & Sheffet, §2).

    Each agent adds Gaussian noise of standard deviation σ = sqrt(2 ln(2/δ))/ε to its bit;
    averaging N reports estimates the mean of the bits with error O(σ/√N).

    Privacy: a bit has ℓ2-sensitivity 1. The report is the bit plus exact discrete
    Gaussian noise on a lattice (no floating-point low bits to leak, Mironov 2012), at
    least the paper's σ (the classic calibration with ln(2/δ) in place of ln(1.25/δ)) and
    enough for (ε, δ) through zCDP (Canonne, Kamath & Steinke 2020, Thm 4, Cor. 13); the
    event records that ρ.

    Parameters
    ----------
    epsilon : float
        Local privacy parameter ε of each report.
    delta : float in (0, 1)
        Local privacy parameter δ of each report.
    """

    name = "gaussian_randomized_response"
    kind = "zcdp"

    def __init__(self, epsilon, delta):
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, strictly_positive=True)
        # The paper's continuous sigma is a floor: the report is the bit plus exact discrete
        # Gaussian noise on the lattice 2^-k Z (bits are lattice points, so the lattice costs
        # nothing), at least this large and within the zCDP budget (epsilon, delta) allows
        # (Canonne, Kamath & Steinke 2020, Thm 4 and Cor. 13).
        sigma = math.sqrt(2.0 * math.log(2.0 / self.delta)) / self.epsilon
        rho = zcdp_rho_for(self.epsilon, self.delta)
        self.lattice_step, self.sigma_int, self.rho = gaussian_lattice(
            1.0, rho, 1, integer=True, min_sigma=sigma)
        if self.lattice_step > 1.0:
            # A bit rounded to a lattice coarser than the integers is always 0: private,
            # but every report would be pure noise. Refuse (a function of ε and δ only).
            steps = _noise.MAX_GAUSSIAN_SIGMA
            eps_min = math.sqrt(2.0 * math.log(2.0 / self.delta)) / steps
            raise ValueError(
                f"Gaussian randomized response at epsilon={self.epsilon!r}, "
                f"delta={self.delta!r} needs noise of standard deviation {sigma:.4g}, more "
                f"than the exact sampler's {steps} steps on the integer lattice: the bits "
                "would be rounded away and the reports carry no information about them. "
                f"Use epsilon >= about {eps_min:.3g} (or a larger delta)."
            )

    @property
    def sigma(self):
        """The noise standard deviation of a report (lattice step times ``sigma_int``)."""
        return self.lattice_step * self.sigma_int

    def _event_fields(self):
        return self.epsilon, self.delta, {"rho": self.rho}

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"sigma": self.sigma}

    def __call__(self, bits, rng):
        rng = check_generator(rng, "rng")
        bits = _check_bits(bits).astype(np.int64)
        index = bits * int(round(1.0 / self.lattice_step))
        noise = _noise.discrete_gaussian(rng, self.sigma_int, bits.shape or None,
                                         unit=self.lattice_step, tag=self.name)
        return (index + noise).astype(np.float64) * self.lattice_step
