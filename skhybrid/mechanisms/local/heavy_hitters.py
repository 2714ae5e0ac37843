"""Local-model heavy hitters on small domains: HRR counts and a threshold (BKNSS Thm 2.18 shape)."""

import numpy as np

from .frequency_oracle import HadamardResponse, _check_probability

__all__ = ["HeavyHitters", "heavy_hitters", "MAX_DOMAIN_SIZE"]

#: Largest domain handled (one dense FWHT of size D); larger domains need a prefix tree.
MAX_DOMAIN_SIZE = 1 << 24


class HeavyHitters(HadamardResponse):
    """Non-interactive ε-LDP heavy hitters over ``[0, domain_size)``, ``domain_size ≤ 2^24``.

    Every agent sends one :class:`HadamardResponse` report; the server estimates all counts
    by one FWHT and keeps ``Est = {x : ĉ(x) ≥ 2t}`` with ``t = c_ε sqrt(2n ln(2|X|/β))``.
    W.p. ``≥ 1−β`` every ``|ĉ(x) − c(x)| < t`` (:meth:`HadamardResponse.error_bound`), so
    ``Est`` contains every ``x`` with ``c(x) ≥ 3t`` and every ``x ∈ Est`` has ``c(x) > t``:
    the shape of BKNSS Thm 2.18 (Bassily & Smith 2015), since ``2/ε ≤ c_ε ≤ 2.17/ε`` for
    ``ε ≤ 1`` (:ref:`notes_heavy_hitters`).

    Parameters
    ----------
    epsilon : float
        Local privacy parameter of each agent.
    domain_size : int
        ``|X| ≤ 2^24``. The prefix-tree variant for larger domains is not implemented.
    beta : float in (0, 1)
        Failure probability of the guarantee.
    """

    name = "heavy_hitters"

    def __init__(self, epsilon, domain_size, beta):
        super().__init__(epsilon, domain_size)
        if self.domain_size > MAX_DOMAIN_SIZE:
            raise ValueError(
                f"domain_size={domain_size} exceeds {MAX_DOMAIN_SIZE} (2^24): the dense HRR "
                "heavy-hitters protocol would need a transform of that size. Hash or bucket "
                "the values into a smaller domain (a prefix-tree version is not implemented).")
        self.beta = _check_probability(beta, "beta")

    def threshold(self, n):
        """Return ``t = c_ε sqrt(2n ln(2|X|/β))``; items are kept when ``ĉ ≥ 2t``.

        Parameters
        ----------
        n : int
            Number of agents.

        Returns
        -------
        t : float
            The threshold unit.
        """
        return self.error_bound(n, self.beta)

    def fit(self, values, rng):
        """Run the protocol on one value per agent.

        Sets ``items_``, ``estimates_`` (by decreasing estimate) and ``threshold_``.

        Parameters
        ----------
        values : array-like of int, shape (n,)
            One value in ``[0, domain_size)`` per agent.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        self : HeavyHitters
            The fitted protocol.
        """
        j, y = self.randomize(values, rng)
        counts = self.estimate_counts(j, y)
        self.threshold_ = self.threshold(j.shape[0])
        items = np.flatnonzero(counts >= 2 * self.threshold_)
        items = items[np.argsort(-counts[items], kind="stable")]
        self.items_, self.estimates_ = items, counts[items]
        return self


def heavy_hitters(values, domain_size, epsilon, rng, beta):
    """ε-LDP heavy hitters: the items whose estimated count is at least ``2t``.

    See :class:`HeavyHitters`. W.p. ``≥ 1−β`` the list contains every item held by at least
    ``3t`` agents and no item held by at most ``t``.

    Parameters
    ----------
    values : array-like of int, shape (n,)
        One value in ``[0, domain_size)`` per agent.
    domain_size : int
        ``|X| ≤ 2^24``.
    epsilon : float
    rng : numpy.random.Generator
        Source of every random draw.
    beta : float in (0, 1)

    Returns
    -------
    items : ndarray of int64
        Heavy items, by decreasing estimated count.
    estimates : ndarray of float
        Their estimated counts.
    t : float
        ``c_ε sqrt(2n ln(2|X|/β))``.
    """
    hh = HeavyHitters(epsilon, domain_size, beta).fit(values, rng)
    return hh.items_, hh.estimates_, hh.threshold_
