"""Local-model quantile by binary search with randomized response (BKNSS Thm 2.19)."""

import math
from fractions import Fraction

import numpy as np

from .. import _noise
from .._base import Mechanism, check_epsilon
from ..randomized_response import RandomizedResponse
from .frequency_oracle import _check_probability

__all__ = ["QuantileSearch", "rr_quantile_search", "quantile_sample_size"]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _check_real(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or (
            not math.isfinite(value)):
        raise ValueError(f"{name} must be a finite real number; got {value!r}.")
    return float(value)


class QuantileSearch(Mechanism):
    """Interactive ε-LDP binary search for a ``p*``-quantile on ``[lo, hi]``.

    The randomized-response binary search of BKNSS Thm 2.19 (their [31, Thm 17]), with
    provable constants (:ref:`notes_quantile_search`). ``T = ⌈log₂((hi − lo)/τ)⌉``
    rounds; round ``t`` asks a *fresh* batch of ``m = ⌈c_ε² ln(2T/β) / (2λ²)⌉`` agents for ``RR_ε(1[x ≤ mid])``
    (:class:`~skhybrid.mechanisms.RandomizedResponse`), debiases the mean to ``p̂``, and
    moves ``lo ← mid`` if ``p̂ < p*`` else ``hi ← mid``. Every agent sends one ε-LDP bit.

    Parameters
    ----------
    epsilon : float
        Local privacy parameter of each agent.
    lo, hi : float
        Public range ``[Q_min, Q_max]`` known to contain the quantile.
    tau : float
        Target bracket width ``τ`` (``τ < 1`` on integer domains leaves ≤ 1 atom inside).
    lam : float in (0, 1)
        Mass tolerance ``λ``.
    beta : float in (0, 1)
        Failure probability.

    Notes
    -----
    Each agent's term ``c_ε (r − 1/(e^ε+1))`` lies in an interval of length ``c_ε`` and has
    mean ``1[x ≤ mid]`` (mean ``F(mid)`` for i.i.d. draws from ``P``), so by Hoeffding
    ``|p̂ − F(mid)| ≤ λ`` in each round w.p. ``≥ 1 − β/T``. Hence w.p. ``≥ 1 − β`` the
    returned bracket satisfies ``hi − lo ≤ τ`` and

    * ``F(hi) ≥ p* − λ`` (or ``hi`` is the initial upper end), and
    * ``F(lo) < p* + λ`` (or ``lo`` is the initial lower end),

    where ``F`` is the CDF of ``P`` when the agents are i.i.d. draws from ``P`` (the setting
    of Thm 2.19), and the empirical CDF of each round's agents for a fixed dataset. So the
    bracket meets ``[q_{p*−λ}, q_{p*+λ}]`` up to width ``τ``. Returning one endpoint instead
    does **not** satisfy the theorem's "either/or" in every case (:ref:`notes_quantile_search`).
    """

    name = "rr_quantile_search"
    kind = "pure"

    def __init__(self, epsilon, lo, hi, tau, lam, beta):
        self.epsilon = check_epsilon(epsilon)
        self.lo, self.hi = _check_real(lo, "lo"), _check_real(hi, "hi")
        if not self.lo < self.hi:
            raise ValueError(f"lo must be smaller than hi; got lo={lo!r}, hi={hi!r}.")
        self.tau = _check_real(tau, "tau")
        if self.tau <= 0:
            raise ValueError(f"tau must be positive; got {tau!r}.")
        self.lam = _check_probability(lam, "lam")
        self.beta = _check_probability(beta, "beta")

    @property
    def c_epsilon(self):
        """The debiasing factor ``(e^ε+1)/(e^ε−1)``."""
        return 1.0 / math.tanh(self.epsilon / 2)

    @property
    def rounds(self):
        """``T = ⌈log₂((hi − lo)/τ)⌉`` (at least 1)."""
        return max(1, math.ceil(math.log2((self.hi - self.lo) / self.tau)))

    @property
    def agents_per_round(self):
        """``m = ⌈c_ε² ln(2T/β) / (2λ²)⌉`` (Hoeffding at level ``β/T``)."""
        return math.ceil(self.c_epsilon ** 2 * math.log(2 * self.rounds / self.beta)
                         / (2 * self.lam ** 2))

    @property
    def sample_size(self):
        """Total agents needed, ``N = T·m``."""
        return self.rounds * self.agents_per_round

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"rounds": self.rounds, "agents_per_round": self.agents_per_round}

    def event(self, count=1, population="local", source=""):
        """Return the per-agent event: one pure ε-LDP bit.

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

    def report(self, values, threshold, rng):
        """Return one round's reports ``RR_ε(1[x ≤ threshold])``, one bit per agent.

        Parameters
        ----------
        values : array-like of float, shape (m,)
            The round's agents' values.
        threshold : float
            The round's query point.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        reports : ndarray of shape (m,)
            The randomized bits.
        """
        return RandomizedResponse(self.epsilon)((np.asarray(values) <= threshold).astype(np.int8),
                                                rng)

    def search(self, values, p_star, rng):
        """Run the search on the agents' values.

        Agents are split into ``T`` rounds by a uniformly random permutation drawn from
        ``rng`` before any report (data-independent); all agents are used, each once.

        Parameters
        ----------
        values : array-like of float, shape (n,)
            One value per agent, ``n >= sample_size``.
        p_star : float in (0, 1)
            The quantile sought.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        lo, hi : float
            The final bracket (see the class Notes).
        """
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or not np.all(np.isfinite(values)):
            raise ValueError("values must be a 1-d array of finite numbers, one per agent.")
        return self._run(values, p_star, rng, exact=False)

    def search_integers(self, values, p_star, rng):
        """Run the search on integer values in exact arithmetic.

        The same protocol and draws as :meth:`search`, but the midpoints are exact
        fractions and each agent answers ``1[x ≤ ⌊mid⌋]`` (equal to ``1[x ≤ mid]`` for an
        integer ``x``) in integer arithmetic, so values beyond ``2^53``, which float64
        cannot tell apart, are compared exactly.

        Parameters
        ----------
        values : array-like of int, shape (n,)
            One integer per agent (int64 range), ``n >= sample_size``.
        p_star : float in (0, 1)
            The quantile sought.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        lo, hi : fractions.Fraction
            The final bracket, exactly (see the class Notes).
        """
        values = np.asarray(values)
        if values.ndim != 1 or values.dtype.kind not in "iu":
            raise ValueError("values must be a 1-d array of integers, one per agent.")
        return self._run(values.astype(np.int64), p_star, rng, exact=True)

    def _run(self, values, p_star, rng, exact):
        p_star = _check_probability(p_star, "p_star")
        if values.shape[0] < self.sample_size:
            raise ValueError(
                f"rr_quantile_search needs at least {self.sample_size} agents "
                f"({self.rounds} rounds x {self.agents_per_round}) for lam={self.lam}, "
                f"beta={self.beta}, epsilon={self.epsilon}; got {values.shape[0]}. "
                "Add agents, or increase lam, beta or tau.")
        order = _noise.permutation(rng, values.shape[0], tag=self.name + ":split")
        rr = RandomizedResponse(self.epsilon)
        if exact:
            lo, hi = Fraction(self.lo), Fraction(self.hi)
        else:
            lo, hi = self.lo, self.hi
        for batch in np.array_split(order, self.rounds):  # T rounds, not a loop over agents
            if exact:
                mid = (lo + hi) / 2
                # x ≤ mid ⇔ x ≤ ⌊mid⌋ for integers; clipped to int64, where the values live.
                query = min(max(math.floor(mid), _INT64_MIN), _INT64_MAX)
            else:
                mid = query = 0.5 * (lo + hi)
            p_hat = rr.debias(self.report(values[batch], query, rng))
            if p_hat < p_star:
                lo = mid
            else:
                hi = mid
        return lo, hi


def quantile_sample_size(epsilon, lo, hi, tau, lam, beta):
    """Return the agents needed by :func:`rr_quantile_search`: ``T·⌈c_ε² ln(2T/β)/(2λ²)⌉``.

    Matches BKNSS Thm 2.19's ``N ≳ T λ⁻² c_ε² log(T/β)`` with explicit constants
    (:ref:`notes_quantile_search`).

    Parameters
    ----------
    epsilon : float
        Local privacy parameter of each agent.
    lo, hi : float
        Public range known to contain the quantile.
    tau : float
        Target bracket width.
    lam : float in (0, 1)
        Mass tolerance.
    beta : float in (0, 1)
        Failure probability.

    Returns
    -------
    n : int
        Number of agents.
    """
    return QuantileSearch(epsilon, lo, hi, tau, lam, beta).sample_size


def rr_quantile_search(values, p_star, epsilon, rng, lo, hi, tau, lam, beta):
    """Find a bracket of the ``p_star``-quantile by an ε-LDP binary search.

    See :class:`QuantileSearch` for the protocol and its guarantee: w.p. ``≥ 1 − β``,
    ``hi − lo ≤ τ``, ``F(hi) ≥ p* − λ`` (or ``hi`` is the initial ``hi``) and
    ``F(lo) < p* + λ`` (or ``lo`` is the initial ``lo``).

    Parameters
    ----------
    values : array-like of float, shape (n,)
        One value per agent; ``n ≥ quantile_sample_size(epsilon, lo, hi, tau, lam, beta)``.
    p_star : float in (0, 1)
        The quantile sought.
    epsilon : float
        Local privacy parameter of each agent.
    rng : numpy.random.Generator
        Source of every random draw.
    lo, hi, tau, lam, beta : float
        As in :class:`QuantileSearch`.

    Returns
    -------
    lo, hi : float
        The final bracket.
    """
    return QuantileSearch(epsilon, lo, hi, tau, lam, beta).search(values, p_star, rng)
