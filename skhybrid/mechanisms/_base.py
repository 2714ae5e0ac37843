"""What every mechanism shares: validated parameters and the event it declares."""

import math
from fractions import Fraction

import numpy as np

from .._validation import check_delta, check_epsilon, check_positive  # noqa: F401
from ..accounting import PrivacyEvent
from . import _noise


#: Lattice indices are clamped to ±2^50, values to ±2^50 g (a 1-Lipschitz map: no
#: sensitivity cost), so indices plus noise stay exact in int64 and in float64.
RANGE_STEPS = 2**50

#: The real-valued lattices pay for a sensitivity 2^-32 above the one given. Callers
#: compute Δ and clip rows in floating point, a few units in the last place away from the
#: real numbers of the proofs (a row clipped to radius r can have norm r(1 + ~d·2^-53)); where
#: Δ/g sits just below an integer, ``floor(Δ/g) + 1`` steps would leave no room for that.
#: The slack costs one lattice step in those cases only, and covers relative errors up to
#: 2^-32 (d up to about 10^6 features).
SENSITIVITY_SLACK = Fraction(2**32 + 1, 2**32)


def lattice_span(sensitivity, g):
    """``floor(Δ(1 + 2^-32)/g)``, exactly: how many steps of ``g`` a change of at most
    ``sensitivity`` (with :data:`SENSITIVITY_SLACK`) spans before rounding."""
    return math.floor(Fraction(sensitivity) * SENSITIVITY_SLACK / Fraction(g))


# Integer input is clamped to ±2^62 before its index is computed (1-Lipschitz, so free):
# int64 arithmetic below then cannot overflow, and uint64 input is held.
_INT_CLAMP = 2**62


def exact_values(value, name="value"):
    """``value`` as an array whose numbers the lattice code reads exactly.

    Integer and float64 (or narrower float) arrays pass as they are. An object array of
    integers becomes int64, clamped to ±2^62 as :func:`lattice_index` clamps integer
    input anyway; any other object array, or a wider float, is cast to float64 only if the
    cast is exact: float64 rounds integers beyond 2^53, which moves neighbours further
    apart on the lattice than the calibration pays for. Strings are refused. No value is
    printed.
    """
    arr = np.asarray(value)
    if arr.dtype.kind in "iub" or (arr.dtype.kind == "f" and arr.dtype.itemsize <= 8):
        return arr
    if arr.dtype == object and all(isinstance(v, (int, np.integer))
                                   for v in arr.ravel().tolist()):
        clamp = _INT_CLAMP
        return np.array([max(-clamp, min(clamp, int(v))) for v in arr.ravel().tolist()],
                        dtype=np.int64).reshape(arr.shape)
    exact = False
    if arr.dtype == object:  # Python compares int and float exactly
        try:
            items = arr.ravel().tolist()
            floats = [float(v) for v in items]
            exact = all(f == v or f != f for f, v in zip(floats, items))
        except (TypeError, ValueError, OverflowError):
            exact = False
        if exact:
            return np.array(floats, dtype=np.float64).reshape(arr.shape)
    elif arr.dtype.kind == "f":  # wider than float64
        cast = arr.astype(np.float64)
        if np.all((cast.astype(arr.dtype) == arr) | np.isnan(arr)):
            return cast
    if arr.dtype == object or arr.dtype.kind == "f":
        raise ValueError(
            f"{name} holds numbers that float64 would round (integers beyond 2^53 mixed with "
            "floats, or wider floats): pass integers as an integer array, or float64 values.")
    raise ValueError(f"{name} must be numbers; got an array of dtype {arr.dtype.kind!r}.")


def lattice_index(value, g):
    """Index of the lattice point nearest ``value`` on the lattice ``g Z`` (g a power of
    two), rounding half to even, clamped to ``±RANGE_STEPS``; int64.

    Float input: ``value / g`` is exact and :func:`numpy.rint` rounds it. Integer input is
    never cast to float64 first — beyond 2^53 the cast rounds, and that rounding added to
    the lattice's own moved neighbours one step further apart than the calibration pays
    for (1,026 steps against 1,025 at Δ = 16399.2, ε = 1) — so its index is computed in
    integer arithmetic, with the same rule (identical below 2^53).
    """
    arr = np.asarray(value)
    if not np.issubdtype(arr.dtype, np.integer):
        return np.rint(np.clip(arr.astype(np.float64) / g, -float(RANGE_STEPS),
                               float(RANGE_STEPS))).astype(np.int64)
    if np.issubdtype(arr.dtype, np.unsignedinteger):
        x = np.minimum(arr, np.uint64(_INT_CLAMP)).astype(np.int64)
    else:
        x = np.clip(arr.astype(np.int64), -_INT_CLAMP, _INT_CLAMP)
    k = math.frexp(g)[1] - 1  # g = 2^k
    if k <= 0:  # x / g = x · 2^-k, an integer: clamp x first so that it cannot overflow
        limit = RANGE_STEPS >> -k
        return np.clip(x, -limit, limit) << -k
    q = x >> k  # floor(x / 2^k)
    r = x - (q << k)
    half = 1 << (k - 1)
    index = q + ((r > half) | ((r == half) & (q % 2 == 1)))
    return np.clip(index, -RANGE_STEPS, RANGE_STEPS)


def check_sensitivity(sensitivity):
    return check_positive(sensitivity, "sensitivity")


class Mechanism:
    """Base class: a mechanism knows its guarantee before it runs (charge before release)."""

    name = "mechanism"
    kind = "pure"

    def _event_fields(self):
        """(epsilon, delta, extra fields) of one use; overridden by subclasses."""
        return self.epsilon, 0.0, {}

    def event(self, count=1, population="central", source=""):
        """Return the :class:`~skhybrid.accounting.PrivacyEvent` of ``count`` adaptive uses.

        Parameters
        ----------
        count : int, default=1
            Number of adaptive uses.
        population : {"central", "local"}, default="central"
            Whose privacy the uses spend.
        source : str, default=""
            Who spends it (usually an estimator's class name).

        Returns
        -------
        event : PrivacyEvent
            The event to charge before the mechanism runs.
        """
        epsilon, delta, extra = self._event_fields()
        return PrivacyEvent(
            mechanism=self.name,
            kind=self.kind,
            epsilon=epsilon,
            delta=delta,
            count=count,
            population=population,
            source=source,
            params=self.params(),
            **extra,
        )

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {}


class SignRandomizer(Mechanism):
    """Base class of local randomizers that keep a ±1 / 0-1 answer w.p. e^ε/(1+e^ε).

    One report of such a randomizer is ε-LDP: the likelihood ratio of any report under
    two inputs is at most e^ε. Its events default to the ``"local"`` population.
    """

    @property
    def flip_probability(self):
        """Probability ``q`` that the report is not the true answer, as drawn.

        ``1/(e^ε+1)`` rounded up to a multiple of 2^-53, the probability the coin
        realises exactly (:func:`~skhybrid.mechanisms._noise.coin_probability`). The
        realised ratio ``(1−q)/q`` is therefore at most e^ε, also where ``e^ε/(1+e^ε)``
        rounds to 1.0 (ε ≳ 37: the report still flips with probability 2^-53).
        """
        t = math.exp(-self.epsilon)  # 1/(e^ε + 1) = e^-ε/(1 + e^-ε): no overflow
        return min(_noise.coin_probability(t / (1.0 + t), computed=True, positive=True), 0.5)

    @property
    def keep_probability(self):
        """Probability ``1 − q`` that the true answer is sent.

        ``e^ε/(1+e^ε)`` up to the coin's rounding (:attr:`flip_probability`).
        """
        return 1.0 - self.flip_probability

    @property
    def c_epsilon(self):
        """The debiasing factor ``1/(1 − 2q)`` of the coin drawn.

        ``(e^ε+1)/(e^ε−1)`` up to the coin's rounding (:attr:`flip_probability`).
        """
        return 1.0 / (1.0 - 2.0 * self.flip_probability)

    def event(self, count=1, population="local", source=""):
        """Return the per-agent event: ``count`` pure ε-LDP reports.

        Parameters
        ----------
        count : int, default=1
            Number of reports per agent.
        population : {"central", "local"}, default="local"
            Whose privacy the reports spend.
        source : str, default=""
            Who spends it (usually an estimator's class name).

        Returns
        -------
        event : PrivacyEvent
            The event to charge before the agents report.
        """
        return super().event(count=count, population=population, source=source)
