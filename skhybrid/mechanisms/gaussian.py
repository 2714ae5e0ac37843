"""The Gaussian mechanism on a lattice: exact discrete Gaussian noise, zCDP accounting."""

import math
from fractions import Fraction

import numpy as np
from scipy.optimize import brentq

from ..accounting import _composition as comp
from . import _noise
from .._validation import check_generator
from ..utils._rounding import float_at_least
from ._base import (Mechanism, check_delta, check_epsilon, check_sensitivity, exact_values,
                    lattice_index)

__all__ = ["GaussianMechanism", "gaussian_mechanism", "gaussian_lattice", "zcdp_rho_for"]

# The discrete Gaussian sampler takes integer sigma up to 4096; aim for ~2048 lattice steps
# per standard deviation, so the lattice is fine against the noise.
_SIGMA_STEPS = 2048


def zcdp_rho_for(epsilon, delta):
    """Return the largest ρ such that ρ-zCDP implies (ε, δ)-DP.

    Inverts the conversion of Canonne, Kamath & Steinke 2020, Cor. 13, by root finding,
    and lands on the feasible side.

    Parameters
    ----------
    epsilon : float
        Target ε.
    delta : float
        Target δ in (0, 1).

    Returns
    -------
    rho : float
        The largest ρ whose conversion gives at most ε at ``delta``.
    """
    hi = 1.0
    while comp.zcdp_epsilon(hi, delta) < epsilon:
        hi *= 2.0
    rho = brentq(lambda r: comp.zcdp_epsilon(r, delta) - epsilon, 0.0, hi, xtol=1e-15)
    while comp.zcdp_epsilon(rho, delta) > epsilon:  # land on the feasible side
        rho *= 1 - 1e-12
    return rho


def _shift_up(scaled, n_values):
    """The smallest float ``>= scaled + sqrt(n_values)`` (``scaled`` is exact: Δ/g)."""
    shift = scaled + math.sqrt(n_values)
    # Δ/g + sqrt(d) is the exact bound on the lattice distance; the float sum and the
    # float sqrt round to nearest, so step up until (shift - Δ/g)^2 >= d holds exactly.
    while shift < scaled or (Fraction(shift) - Fraction(scaled)) ** 2 < n_values:
        shift = math.nextafter(shift, math.inf)
    return shift


def _realised_rho(shift, sigma_int):
    """``shift^2 / (2 sigma_int^2)`` rounded up to a float (the exact ρ is rational)."""
    return float_at_least(Fraction(shift) ** 2 / (2 * sigma_int**2))


def gaussian_lattice(sensitivity, rho, n_values, integer=False, min_sigma=0.0):
    """Lattice step ``g``, integer noise ``sigma_int`` and realised ρ of the snapped mechanism.

    The value is rounded to ``g Z^d`` (``g`` a power of two) and discrete Gaussian noise
    ``N_Z(0, sigma_int^2)`` per coordinate is added in lattice units (Canonne, Kamath &
    Steinke 2020, Algorithm 3). Rounding moves each coordinate by at most ``g/2``, so
    neighbouring values at ℓ2 distance Δ give lattice indices at ℓ2 distance at most
    ``Δ/g + sqrt(d)``; nothing extra for integer data on a lattice with ``g ≤ 1`` and
    ``Δ/g`` an integer (integers are lattice points only for ``g ≤ 1``: on a coarser
    lattice they are rounded, and the rounding is paid as for real data). A discrete
    Gaussian shifted by an integer vector of norm Δ' is ``Δ'^2/(2 sigma^2)``-zCDP (CKS 2020,
    Theorem 4 and Proposition 5: Rényi divergences of independent coordinates add), and
    ``sigma_int`` is the smallest integer meeting ``rho`` and ``min_sigma`` (value units).

    Parameters
    ----------
    sensitivity : float
        The ℓ2 sensitivity Δ of the query.
    rho : float
        The zCDP budget ρ of one release.
    n_values : int
        Number of coordinates of one release (each costs rounding).
    integer : bool, default=False
        Whether the query is integer-valued (exact on a lattice with ``g ≤ 1`` and
        ``Δ/g`` integer).
    min_sigma : float, default=0.0
        Lower bound on the noise standard deviation, in value units.

    Returns
    -------
    g : float
        The lattice step (a power of two).
    sigma_int : int
        The discrete Gaussian's scale, in lattice units.
    rho : float
        The realised ρ (at most the one asked for): ``Δ'^2/(2 sigma_int^2)``, evaluated
        exactly and rounded up to a float (a discrete Gaussian shifted by an integer
        vector has exactly this Rényi divergence at every integer order).
    """
    target = max(sensitivity / math.sqrt(2.0 * rho), min_sigma)
    best = None
    k = math.floor(math.log2(target / _SIGMA_STEPS))
    for step in range(k, k + 40):  # coarser lattices until the integer noise fits
        g = 2.0**step
        if integer and g <= 1.0:
            if not float(sensitivity / g).is_integer():
                continue
            shift = sensitivity / g
        else:  # real data, or integers rounded to a coarser lattice
            shift = _shift_up(sensitivity / g, n_values)
        sigma_int = max(1, math.ceil(max(shift / math.sqrt(2.0 * rho), min_sigma / g)))
        # Exact test (rationals): a rounded Δ'^2/(2σ^2) may fall an ulp below the true one.
        while Fraction(shift) ** 2 > 2 * sigma_int**2 * Fraction(rho):
            sigma_int += 1
        fits = sigma_int <= _noise.MAX_GAUSSIAN_SIGMA
        if fits and (best is None or sigma_int * g < best[1] * best[0]):
            best = (g, sigma_int, _realised_rho(shift, sigma_int))
        if best is not None and step > k + 2:
            break
    if best is None:
        # Rounding costs sqrt(n_values) lattice steps whatever the step, so the integer
        # noise needs at least sqrt(n_values / (2 rho)) steps; the sampler takes 4096.
        raise ValueError(
            f"The exact Gaussian mechanism cannot release {n_values} values at zCDP "
            f"rho={rho:.3g}: rounding to its lattice alone would need more than "
            f"{_noise.MAX_GAUSSIAN_SIGMA} lattice steps of noise (rho must be at least about "
            f"{n_values / (2.0 * _noise.MAX_GAUSSIAN_SIGMA**2):.2g}). Raise epsilon or delta."
        )
    return best


class GaussianMechanism(Mechanism):
    """Add Gaussian noise to a query of ℓ2-sensitivity Δ, exactly, with (ε, δ) via zCDP.

    Textbook Gaussian samplers in floating point leak the input through the low bits of
    the output (Mironov 2012; Jin et al. 2022). This mechanism snaps the value to a lattice
    and adds exact discrete Gaussian noise (Canonne, Kamath & Steinke 2020), calibrated
    by :func:`gaussian_lattice` with the rounding included, at least the continuous
    ``sigma`` below. Its guarantee is ρ-zCDP with ρ = Δ'^2/(2σ^2) (CKS 2020, Thm 4),
    converted to (ε, δ) with CKS Cor. 13; the event records ρ (kind ``"zcdp"``).

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    delta : float
        Privacy parameter δ ∈ (0, 1).
    sensitivity : float, default=1.0
        The ℓ2-sensitivity Δ of the query.
    calibration : {"analytic", "classic"}, default="analytic"
        ``"analytic"``: the smallest σ with δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ,
        the exact privacy curve of the Gaussian mechanism (Balle & Wang 2018, Thm 8;
        their Algorithm 1 computes the same σ), valid for every ε > 0.
        ``"classic"``: σ = Δ sqrt(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1), valid only
        for ε < 1.

    Notes
    -----
    ``sigma`` is the continuous reference; the released noise is the discrete Gaussian
    whose zCDP meets (ε, δ) (about 9 % larger at ε = 1). The event has kind ``"zcdp"``
    with the ρ that (ε, δ) allows; every release realises at most that ρ.
    """

    name = "gaussian"
    kind = "zcdp"

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

    @property
    def rho(self):
        """The zCDP budget ρ that (ε, δ) allows; each release realises at most this."""
        return zcdp_rho_for(self.epsilon, self.delta)

    def _event_fields(self):
        return self.epsilon, self.delta, {"rho": self.rho}

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"sigma": self.sigma, "sensitivity": self.sensitivity,
                "calibration": self.calibration}

    def lattice(self, n_values, integer=False):
        """Return the lattice of a release of ``n_values`` coordinates.

        Parameters
        ----------
        n_values : int
            Number of coordinates of one release.
        integer : bool, default=False
            Whether the query is integer-valued.

        Returns
        -------
        g, sigma_int, rho : float, int, float
            As :func:`gaussian_lattice`.
        """
        return gaussian_lattice(self.sensitivity, self.rho, n_values, integer,
                                min_sigma=self.sigma)

    def __call__(self, value, rng, n_values=None):
        """Release ``value`` snapped to a lattice plus exact discrete Gaussian noise.

        ``n_values``: the number of coordinates of ONE release when ``value`` stacks
        several independent releases of the same query (the lattice's rounding cost is
        per release); default ``value.size`` (one release).
        """
        rng = check_generator(rng, "rng")  # (an int seeds; None: fresh entropy)
        arr = exact_values(value)
        integer = np.issubdtype(arr.dtype, np.integer)
        if not integer and not np.all(np.isfinite(arr.astype(np.float64))):
            raise ValueError("The Gaussian mechanism needs finite values (got NaN or inf).")
        n = max(1, arr.size) if n_values is None else int(n_values)
        g, sigma_int, _ = self.lattice(n, integer)
        index = lattice_index(arr, g)
        noise = _noise.discrete_gaussian(rng, sigma_int, arr.shape or None, unit=g,
                                         tag=self.name)
        return (index + noise).astype(np.float64) * g


def gaussian_mechanism(value, *, sensitivity, epsilon, delta, rng, calibration="analytic"):
    """Release ``value`` with exact discrete Gaussian noise, (ε, δ)-DP.

    The functional form of :class:`GaussianMechanism`.

    Parameters
    ----------
    value : float or array-like
        The query's value.
    sensitivity : float
        The ℓ2 sensitivity Δ of the query.
    epsilon : float
        Privacy parameter ε.
    delta : float
        Privacy parameter δ in (0, 1).
    rng : numpy.random.Generator, int, numpy.random.RandomState or None
        Source of every random draw (an int seeds a new generator; ``None`` draws fresh
        OS entropy, as for the estimators' ``random_state``).
    calibration : {"analytic", "classic"}, default="analytic"
        How σ is chosen (see :class:`GaussianMechanism`).

    Returns
    -------
    released : float or ndarray
        The noisy value, a lattice point, with the shape of ``value``.
    """
    return GaussianMechanism(epsilon, delta, sensitivity, calibration)(value, rng)
