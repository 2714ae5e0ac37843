"""Hadamard randomized response (HRR): a one-bit frequency oracle in the local model."""

import math
from numbers import Integral

import numpy as np

from .. import _noise
from .._base import SignRandomizer, check_epsilon

__all__ = ["fwht", "hadamard_sign", "HadamardResponse"]


def fwht(a):
    """Unnormalised fast Walsh–Hadamard transform along the last axis.

    Computes ``out[..., v] = Σ_j H[v, j] a[..., j]`` with ``H[v, j] = (−1)^popcount(v & j)``
    (Sylvester ordering) in O(D log D) operations, vectorised over leading axes.

    Parameters
    ----------
    a : array-like of shape (..., D)
        ``D`` must be a power of two.

    Returns
    -------
    out : ndarray of shape (..., D), float
        The transform.
    """
    a = np.array(a, dtype=float)
    if a.ndim == 0:
        raise ValueError("fwht needs an array whose last axis has power-of-two length.")
    d = a.shape[-1]
    if d < 1 or d & (d - 1):
        raise ValueError(f"fwht needs a last axis of power-of-two length; got {d}. Pad with zeros.")
    lead = a.shape[:-1]
    h = 1
    while h < d:
        # Butterfly on pairs (x, y) at distance h: (x + y, x − y).
        b = a.reshape(*lead, d // (2 * h), 2, h)
        x, y = b[..., 0, :], b[..., 1, :]
        a = np.stack((x + y, x - y), axis=-2).reshape(*lead, d)
        h *= 2
    return a


def hadamard_sign(v, j):
    """Return entries ``H[v, j] = (−1)^popcount(v & j)`` of the Sylvester Hadamard matrix.

    Vectorised: ``v`` and ``j`` broadcast against each other.

    Parameters
    ----------
    v, j : int or array-like of int
        Row and column indices (non-negative).

    Returns
    -------
    h : ndarray of int8
        The signs ±1, with the broadcast shape of ``v`` and ``j``.
    """
    parity = np.bitwise_count(np.bitwise_and(np.asarray(v, dtype=np.int64),
                                             np.asarray(j, dtype=np.int64))) & 1
    # signed: bitwise_count gives uint8, whose 1 - 2 wraps, and on scalars numpy warns of
    # that overflow exactly when the sign is -1 (a warning that carries the sign)
    return (1 - 2 * parity.astype(np.int8)).astype(np.int8)


def _check_probability(value, name):
    if isinstance(value, bool) or not isinstance(value, (float, int, np.floating)) or not (
            0 < value < 1):
        raise ValueError(f"{name} must be a float in (0, 1); got {value!r}.")
    return float(value)


def _check_domain_values(values, high, name="values"):
    """Integer values in ``[0, high)`` as an int64 array (floats must be integral)."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array with one value per agent; "
                         f"got shape {values.shape}.")
    if values.size == 0:
        raise ValueError(f"{name} is empty: the protocol needs at least one agent.")
    if not np.issubdtype(values.dtype, np.integer):
        if not np.issubdtype(values.dtype, np.floating) or not (
                np.all(np.isfinite(values)) and np.all(values == np.round(values))):
            raise ValueError(f"{name} must be integers in [0, {high}); got dtype {values.dtype} "
                             "with non-integral entries.")
    if values.min() < 0 or values.max() >= high:
        # The values are the agents' private data: say which domain, never which value.
        raise ValueError(f"{name} must lie in the public domain [0, {high}); some entries lie "
                         "outside it. Map them into the domain (e.g. clip or bucket them) "
                         "before randomizing.")
    return values.astype(np.int64)


class HadamardResponse(SignRandomizer):
    """Hadamard randomized response: each agent sends one index and one randomized sign.

    The domain ``[0, domain_size)`` is padded to ``D = 2^ℓ``. An agent with value ``v``
    draws ``j ~ Unif[0, D)`` independently of ``v`` and sends ``(j, y)`` with
    ``y = H[v, j]`` w.p. ``e^ε/(1+e^ε)`` and ``−H[v, j]`` otherwise. For a fixed ``j`` the
    two possible ``y`` have likelihood ratio at most ``e^ε`` under any two values, so
    the report is ε-LDP (Bassily & Smith 2015 single-bit oracle; :ref:`notes_hadamard_response`).

    The server estimate ``ĉ(v) = c_ε Σ_u y_u H[v, j_u]`` with ``c_ε = (e^ε+1)/(e^ε−1)``
    is unbiased for the count ``c(v)`` with variance ``n c_ε² − c(v)``; all ``D``
    estimates cost one fast Walsh–Hadamard transform.

    Parameters
    ----------
    epsilon : float
        Local privacy parameter of each agent's single report.
    domain_size : int
        Number of possible values ``|X|``.

    Attributes
    ----------
    padded_size : int
        ``D``, the smallest power of two ``≥ domain_size``.
    """

    name = "hadamard_response"
    kind = "pure"

    def __init__(self, epsilon, domain_size):
        self.epsilon = check_epsilon(epsilon)
        if isinstance(domain_size, bool) or not isinstance(domain_size, Integral) or (
                domain_size < 1):
            raise ValueError(f"domain_size must be a positive integer; got {domain_size!r}.")
        self.domain_size = int(domain_size)
        self.padded_size = 1 << (self.domain_size - 1).bit_length()

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"domain_size": self.domain_size, "keep_probability": self.keep_probability}

    def randomize(self, values, rng):
        """Each agent's report ``(j, y)``; ``j`` is drawn before, and independently of, the data.

        Parameters
        ----------
        values : array-like of int, shape (n,)
            One value in ``[0, domain_size)`` per agent.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        j : ndarray of int64, shape (n,)
            Public Hadamard column of each agent, uniform on ``[0, D)``.
        y : ndarray of int8, shape (n,)
            The randomized sign ``±H[v, j]``.
        """
        values = _check_domain_values(values, self.domain_size)
        n = values.shape[0]
        j = np.asarray(_noise.integers(rng, self.padded_size, n, tag=self.name + ":index"),
                       dtype=np.int64)
        flip = _noise.bernoulli(rng, self.flip_probability, n, tag=self.name)
        h = hadamard_sign(values, j)
        return j, np.where(flip, -h, h).astype(np.int8)

    def _check_reports(self, j, y):
        j, y = np.asarray(j), np.asarray(y)
        if j.shape != y.shape or j.ndim != 1:
            raise ValueError(f"j and y must be 1-d arrays of equal length; got shapes "
                             f"{j.shape} and {y.shape}.")
        if j.size and (j.min() < 0 or j.max() >= self.padded_size):
            raise ValueError(f"j must lie in [0, {self.padded_size}); pass the indices "
                             "returned by randomize.")
        if y.size and not np.isin(y, (-1, 1)).all():
            raise ValueError("y must contain only the signs -1 and +1.")
        return j.astype(np.int64), y.astype(float)

    def estimate_counts(self, j, y):
        """Return unbiased estimates of the count of every value, ``ĉ = c_ε · FWHT(A)``.

        ``A[k] = Σ_{u: j_u = k} y_u``; O(n + D log D) time.

        Parameters
        ----------
        j : ndarray of int, shape (n,)
            The agents' public Hadamard columns.
        y : ndarray of shape (n,)
            Their randomized signs.

        Returns
        -------
        counts : ndarray of shape (domain_size,)
            The estimated count of every value.
        """
        j, y = self._check_reports(j, y)
        a = np.bincount(j, weights=y, minlength=self.padded_size)
        return self.c_epsilon * fwht(a)[: self.domain_size]

    def variance(self, n, counts):
        """Return the variance ``n c_ε² − c(v)`` of ``ĉ(v)`` for true counts ``counts``.

        Derived in :ref:`notes_hadamard_response`.

        Parameters
        ----------
        n : int
            Number of agents.
        counts : array-like
            True counts ``c(v)``.

        Returns
        -------
        variance : ndarray
            The variance of each estimate.
        """
        return n * self.c_epsilon ** 2 - np.asarray(counts, dtype=float)

    def error_bound(self, n, beta):
        """Return ``c_ε sqrt(2 n ln(2|X|/β))``, a bound on every count's error w.p. ``1−β``.

        Each of the ``n`` terms of ``ĉ(v)`` lies in ``[−c_ε, c_ε]``; Hoeffding's inequality
        and a union bound over the ``|X|`` values (:ref:`notes_hadamard_response`).

        Parameters
        ----------
        n : int
            Number of agents.
        beta : float
            Failure probability.

        Returns
        -------
        bound : float
            With probability ``≥ 1−β`` every ``|ĉ(v) − c(v)|`` is below it.
        """
        beta = _check_probability(beta, "beta")
        return self.c_epsilon * math.sqrt(2.0 * n * math.log(2.0 * self.domain_size / beta))
