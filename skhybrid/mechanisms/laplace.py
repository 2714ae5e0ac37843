"""The Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006), on a lattice."""

import math
from fractions import Fraction

import numpy as np

from . import _noise
from .._validation import check_generator
from ._base import (
    RANGE_STEPS,
    Mechanism,
    check_epsilon,
    check_sensitivity,
    exact_values,
    lattice_index,
    lattice_span,
)

__all__ = ["LaplaceMechanism", "laplace_mechanism", "laplace_lattice"]

# Lattice steps are chosen so the noise has at least this many steps per unit of scale:
# the rounding then costs at most ~1/1024 of the sensitivity.
_STEPS = 1024

# Largest discrete Laplace scale t drawn: the exact sampler's uniform integers below
# t·k (k the step of Canonne et al.'s Algorithm 1, ~never beyond 60) and its values
# u + t·v stay within int64.
_MAX_SCALE = 2**56


def laplace_lattice(sensitivity, epsilon, n_values, integer=False, min_step=None):
    """Lattice step ``g``, integer noise scale ``t`` and realised ε of the snapped mechanism.

    The value is rounded to the lattice ``g Z`` (``g`` a power of two) and discrete
    Laplace noise ``DLap(t)`` (Canonne, Kamath & Steinke 2020, Algorithm 2) is added in
    lattice units. Rounding moves each coordinate by at most ``g/2``, so neighbouring
    values ``|v - v'|_1 <= Δ`` give lattice indices at ℓ1 distance at most
    ``floor(Δ/g) + n_values`` (Mironov 2012's snapping argument, here with the exact
    integer noise of CKS instead of snapping the noisy output), paid as
    ``floor(Δ(1 + 2^-32)/g) + n_values``: room for a caller's Δ or clipping a few units
    in the last place short (:data:`~skhybrid.mechanisms._base.SENSITIVITY_SLACK`);
    integer-valued queries with ``Δ/g`` an integer are exact on the lattice and cost
    nothing. The discrete
    Laplace with scale ``t`` on integer queries of ℓ1 sensitivity ``Δ_int`` is
    ``Δ_int/t``-DP (the ratio of its probabilities at x and x + k is at most
    ``exp(|k|/t)``), and ``t = ceil(Δ_int / ε)`` in exact rational arithmetic, so the
    realised ε never exceeds the one charged.

    Parameters
    ----------
    sensitivity : float
        The ℓ1 sensitivity Δ of the query.
    epsilon : float
        Privacy parameter ε.
    n_values : int
        Number of coordinates of one release (each costs rounding).
    integer : bool, default=False
        Whether the query is integer-valued.
    min_step : float or None, default=None
        A power of two below which ``g`` is not taken: values are clamped to ``±2^50``
        lattice steps, so a tiny sensitivity would otherwise shrink the range a release
        can hold. The rounding term ``n_values`` of ``Δ_int`` then dominates (the noise is
        about ``n_values · g / ε``), which the calibration above already covers.

    Returns
    -------
    g : float
        The lattice step (a power of two).
    t : int
        The discrete Laplace scale, in lattice units.
    realised_epsilon : float
        The ε of the snapped mechanism (at most ``epsilon``).
    """
    if integer and float(sensitivity).is_integer():
        # Integer data: any g = 2^-k <= 1 holds it exactly; pick g for >= _STEPS steps.
        k = max(0, math.ceil(math.log2(_STEPS * epsilon / sensitivity)))
        g = 2.0**-k
        delta_int = int(sensitivity) << k
        t = max(1, math.ceil(Fraction(delta_int) / Fraction(epsilon)))
        if t <= _MAX_SCALE:
            return g, t, delta_int / t
        # Δ/ε beyond 2^56 unit steps: a coarser lattice (its rounding paid) keeps t exact.
    g = 2.0 ** math.floor(math.log2(sensitivity / (_STEPS * max(1, n_values))))
    if min_step is not None:
        g = max(g, float(min_step))
    delta_int = lattice_span(sensitivity, g) + int(n_values)
    t = max(1, math.ceil(Fraction(delta_int) / Fraction(epsilon)))
    if t > _MAX_SCALE:
        raise ValueError(
            f"The Laplace mechanism at epsilon={epsilon!r} over {int(n_values)} values needs "
            f"a noise scale of {float(t):.3g} lattice steps (the rounding of each value "
            "costs one step), beyond the 2^56 its exact sampler draws in int64. Use a larger "
            "epsilon or release fewer values at a time."
        )
    return g, t, delta_int / t


class LaplaceMechanism(Mechanism):
    """Add Laplace-type noise of scale about Δ/ε to a query of ℓ1-sensitivity Δ, exactly.

    Pure ε-DP. The textbook mechanism adds continuous Laplace(Δ/ε) noise (Dwork & Roth
    2014, Thm 3.6), but floating-point Laplace samplers leak the input through the low
    bits of the output (Mironov 2012). This one snaps the value to a lattice of step
    ``2^k`` and adds exact discrete Laplace noise on that lattice (Canonne, Kamath &
    Steinke 2020, Algorithm 2), calibrated with the rounding's cost included
    (:func:`laplace_lattice`): the output is a lattice point whose distribution under
    neighbouring inputs differs by a factor at most e^ε, exactly.

    Parameters
    ----------
    epsilon : float
        Privacy parameter ε > 0.
    sensitivity : float
        The ℓ1-sensitivity Δ of the query (over the whole output vector).
    min_step : float or None, default=None
        Smallest lattice step (a power of two), for queries whose sensitivity is tiny
        against the values' range (see :func:`laplace_lattice`).
    """

    name = "laplace"
    kind = "pure"

    def __init__(self, epsilon, sensitivity=1.0, min_step=None):
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_sensitivity(sensitivity)
        self.min_step = min_step

    @property
    def scale(self):
        """The nominal Laplace scale b = Δ/ε (the lattice noise's is within ~0.1 % above)."""
        return self.sensitivity / self.epsilon

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"scale": self.scale, "sensitivity": self.sensitivity}

    def value_bound(self, n_values=1, integer=False):
        """The largest magnitude a release of ``n_values`` coordinates holds: ``2^50 g``.

        Each coordinate is clamped to ``[-value_bound, value_bound]`` before the noise is
        added (a 1-Lipschitz map, so it costs no privacy), which keeps the lattice indices
        exact in int64 and float64. The bound depends on the parameters only (Δ, ε, the
        number of coordinates, ``min_step``): at Δ = 1, ε = 1 it is about 1.1e12 for one
        coordinate. A query that can exceed it must be rescaled (e.g. released in
        thousands, with its sensitivity divided by 1,000) or given a larger ``min_step``.

        Parameters
        ----------
        n_values : int, default=1
            Coordinates released together.
        integer : bool, default=False
            Whether the query is integer-valued (an integer dtype).

        Returns
        -------
        bound : float
            The largest ``|value|`` released without clamping.
        """
        g = laplace_lattice(self.sensitivity, self.epsilon, max(1, int(n_values)), integer,
                            self.min_step)[0]
        return RANGE_STEPS * g

    def __call__(self, value, rng):
        """Release ``value`` snapped to a lattice plus exact discrete Laplace noise.

        Returns a float array of the shape of ``value`` whose entries are lattice points
        (multiples of a power of two). Integer-valued input (an integer dtype: counts) is
        held exactly by the lattice. Each coordinate is first clamped to
        ``±value_bound(value.size)``: a larger value is released as if it were the bound
        (see :meth:`value_bound`).
        """
        rng = check_generator(rng, "rng")  # (an int seeds; None: fresh entropy)
        arr = exact_values(value)
        integer = np.issubdtype(arr.dtype, np.integer)
        if not integer and not np.all(np.isfinite(arr.astype(np.float64))):
            raise ValueError("The Laplace mechanism needs finite values (got NaN or inf).")
        g, t, _ = laplace_lattice(self.sensitivity, self.epsilon, max(1, arr.size), integer,
                                  self.min_step)
        index = lattice_index(arr, g)
        noise = _noise.discrete_laplace(rng, t, arr.shape or None, unit=g, tag=self.name)
        return (index + noise).astype(np.float64) * g


def laplace_mechanism(value, *, sensitivity, epsilon, rng):
    """Release ``value`` with exact discrete Laplace noise, pure ε-DP.

    The functional form of :class:`LaplaceMechanism`.

    Parameters
    ----------
    value : float or array-like
        The query's value.
    sensitivity : float
        The ℓ1 sensitivity Δ of the query.
    epsilon : float
        Privacy parameter ε.
    rng : numpy.random.Generator, int, numpy.random.RandomState or None
        Source of every random draw (an int seeds a new generator; ``None`` draws fresh
        OS entropy, as for the estimators' ``random_state``).

    Returns
    -------
    released : float or ndarray
        The noisy value, a lattice point, with the shape of ``value``. Each coordinate is
        clamped to ``LaplaceMechanism(epsilon, sensitivity).value_bound(size)`` first
        (about 1.1e12 at Δ = 1, ε = 1): rescale a query that can be larger.
    """
    return LaplaceMechanism(epsilon, sensitivity)(value, rng)
