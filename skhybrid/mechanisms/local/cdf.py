"""All threshold (CDF) queries on {0,1}^b in the local model: a hierarchical histogram."""

import math
from numbers import Integral

import numpy as np
from sklearn.isotonic import isotonic_regression

from .. import _noise
from .._base import SignRandomizer, check_epsilon
from .frequency_oracle import _check_domain_values, _check_probability, fwht, hadamard_sign

__all__ = ["HierarchicalCDF", "cdf_sample_size"]

#: Levels up to this many bits keep a dense array of all 2^l prefix estimates.
DENSE_MAX_BITS = 20
#: Largest supported b (values and prefixes are int64).
MAX_BITS = 62
# Query-by-reports blocks are at most this many (query, report) pairs.
_BLOCK = 1 << 22


def _check_bits(bits):
    if isinstance(bits, bool) or not isinstance(bits, Integral) or not 1 <= bits <= MAX_BITS:
        raise ValueError(f"bits must be an integer in [1, {MAX_BITS}]; got {bits!r}.")
    return int(bits)


def _cdf_error(bits, epsilon, n, beta):
    c_eps = 1.0 / math.tanh(epsilon / 2)
    return c_eps * bits * math.sqrt(2.0 * (bits * math.log(2.0) + math.log(2.0 / beta)) / n)


def _monotone(raw):
    """Isotonic (non-decreasing) L2 projection of ``raw`` onto ``[0, 1]`` (post-processing)."""
    return isotonic_regression(np.asarray(raw, dtype=float), y_min=0.0, y_max=1.0)


def cdf_sample_size(bits, alpha, beta, epsilon):
    """Return the agents sufficient for sup-error ``α`` w.p. ``1−β`` (BKNSS Thm 2.15).

    With the explicit constants of :ref:`notes_hierarchical_cdf`,
    ``n = ⌈2 c_ε² b² (b ln 2 + ln(2/β)) / α²⌉ = O(b³ log(1/β) / (α² ε²))``, the
    inverse of :meth:`HierarchicalCDF.error_bound`.

    Parameters
    ----------
    bits : int
        ``b``: the domain is ``[0, 2^b)``.
    alpha, beta : float in (0, 1)
        Accuracy and failure probability.
    epsilon : float
        Local privacy parameter.

    Returns
    -------
    n : int
        Number of agents.
    """
    bits = _check_bits(bits)
    alpha = _check_probability(alpha, "alpha")
    beta = _check_probability(beta, "beta")
    c_eps = 1.0 / math.tanh(check_epsilon(epsilon) / 2)
    return math.ceil(2.0 * c_eps ** 2 * bits ** 2
                     * (bits * math.log(2.0) + math.log(2.0 / beta)) / alpha ** 2)


class HierarchicalCDF(SignRandomizer):
    """Non-interactive ε-LDP estimate of the CDF of integers in ``[0, 2^b)`` (BKNSS Thm 2.15).

    Each agent is assigned a level ``l ~ Unif{1..b}`` by public randomness drawn before
    the data is looked at, and sends one Hadamard randomized-response report
    (:class:`~skhybrid.mechanisms.local.HadamardResponse`) of its ``l``-bit prefix over
    ``{0,1}^l``: one ε-LDP report per agent. This is the hierarchical histogram behind
    TreeHist (Bassily, Nissim, Stemmer, Thakurta 2017; BKNSS Remark 2.16;
    :ref:`notes_hierarchical_cdf`).

    The server estimates the fraction of agents with prefix ``p`` at level ``l`` by
    ``f̂_l(p) = (b/n) c_ε Σ_{u: l_u = l} y_u H[p, j_u]`` and answers
    ``#{x < u}/n = Σ_{l: u_l = 1} f̂_l(u_1 … u_{l−1} 0)`` (dyadic decomposition), with
    ``cdf(w) = #{x < w+1}/n``. Dividing by the *expected* group size ``n/b`` makes every
    answer an average of ``n`` independent per-agent terms in ``[−b c_ε/n, b c_ε/n]`` whose
    mean is the exact answer, level sampling included, so Hoeffding plus a union bound
    over the ``2^b`` thresholds give :meth:`error_bound`. The answers are then clipped to
    ``[0, 1]`` and made monotone by isotonic regression (pool-adjacent-violators). Both
    steps are non-expansive in the sup norm and leave a monotone truth in ``[0, 1]``
    unchanged, so they never increase the sup error; unlike a running maximum, one noisy
    overshoot does not pin every later answer.

    Parameters
    ----------
    epsilon : float
        Local privacy parameter of each agent's single report.
    bits : int
        ``b``: values are integers in ``[0, 2^b)``, ``1 ≤ b ≤ 62``.

    Attributes
    ----------
    n_agents_ : int
    levels_ : ndarray of uint8, shape (n_agents,)
        Level of each agent (data-independent).
    level_counts_ : ndarray of shape (bits,)
        Number of agents at each level ``1..b``.

    Notes
    -----
    Memory is ``O(Σ_l min(2^l, n_l))``: levels ``l ≤ 20`` keep all ``2^l`` prefix
    estimates (one FWHT each), and for ``b ≤ 20`` the whole monotone CDF table is
    precomputed, so :meth:`cdf` is a lookup. Deeper levels keep their reports aggregated
    by Hadamard column, and each query costs ``O(n_l)`` per such level; monotonicity is
    then enforced over the thresholds of one :meth:`cdf` call (the error bound holds for
    either post-processing).
    """

    name = "hierarchical_cdf"
    kind = "pure"

    def __init__(self, epsilon, bits):
        self.epsilon = check_epsilon(epsilon)
        self.bits = _check_bits(bits)

    def params(self):
        """Return the parameters recorded with the mechanism's events.

        Returns
        -------
        params : dict
            Public parameters (scale, sensitivity, ...), kept in the ledger.
        """
        return {"bits": self.bits, "keep_probability": self.keep_probability}

    def error_bound(self, n, beta):
        """Return the sup error over all thresholds that holds w.p. ``1−β``.

        ``c_ε b sqrt(2 (b ln 2 + ln(2/β)) / n)``: Hoeffding with ranges ``2 b c_ε / n`` and
        a union bound over the ``2^b`` thresholds (:ref:`notes_hierarchical_cdf`); it covers
        the randomizer noise and the random level assignment.

        Parameters
        ----------
        n : int
            Number of agents.
        beta : float
            Failure probability.

        Returns
        -------
        bound : float
            The sup error bound.
        """
        beta = _check_probability(beta, "beta")
        return _cdf_error(self.bits, self.epsilon, n, beta)

    # ------------------------------------------------------------------ agents

    def assign(self, n_agents, rng):
        """Draw the public, data-independent randomness: each agent's level and column.

        Parameters
        ----------
        n_agents : int
            Number of agents.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        levels : ndarray of int64, shape (n_agents,)
            Uniform on ``{1, …, b}``.
        j : ndarray of int64, shape (n_agents,)
            Uniform on ``[0, 2^{levels})``.
        """
        levels = np.asarray(_noise.integers(rng, self.bits, n_agents, tag=self.name + ":level"),
                            dtype=np.int64) + 1
        j = np.asarray(_noise.integers(rng, np.left_shift(np.int64(1), levels), n_agents,
                                       tag=self.name + ":index"), dtype=np.int64)
        return levels, j

    def randomize(self, values, rng):
        """Return each agent's report ``(level, j, y)``: HRR of its ``level``-bit prefix.

        The assignment is drawn first, from ``n`` alone; only ``y`` depends on the data.

        Parameters
        ----------
        values : array-like of int, shape (n,)
            One integer in ``[0, 2^bits)`` per agent.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        levels, j : ndarray of int64, shape (n,)
            The public assignment (see :meth:`assign`).
        y : ndarray of int8, shape (n,)
            The randomized signs, one ε-LDP report per agent.
        """
        values = _check_domain_values(values, 1 << self.bits)
        levels, j = self.assign(values.shape[0], rng)
        flip = _noise.bernoulli(rng, self.flip_probability, values.shape[0], tag=self.name)
        h = hadamard_sign(values >> (self.bits - levels), j)
        return levels, j, np.where(flip, -h, h).astype(np.int8)

    # ------------------------------------------------------------------ server

    def aggregate(self, levels, j, y):
        """Turn the agents' reports into prefix estimates (the server side).

        Parameters
        ----------
        levels, j, y : ndarray of shape (n,)
            The reports, as returned by :meth:`randomize`.

        Returns
        -------
        self : HierarchicalCDF
            The fitted protocol (ready for :meth:`cdf`).
        """
        levels, j, y = (np.asarray(a) for a in (levels, j, y))
        if not levels.shape == j.shape == y.shape or levels.ndim != 1 or levels.size == 0:
            raise ValueError("levels, j and y must be non-empty 1-d arrays of equal length.")
        if levels.min() < 1 or levels.max() > self.bits:
            raise ValueError(f"levels must lie in [1, {self.bits}]; pass randomize's output.")
        if not np.isin(y, (-1, 1)).all():
            raise ValueError("y must contain only the signs -1 and +1.")
        levels, j = levels.astype(np.int64), j.astype(np.int64)
        if j.min() < 0 or np.any(j >= np.left_shift(np.int64(1), levels)):
            raise ValueError("j must lie in [0, 2^level); pass randomize's output.")
        n = levels.shape[0]
        scale = self.c_epsilon * self.bits / n
        self.n_agents_ = n
        self.levels_ = levels.astype(np.uint8)
        self.level_counts_ = np.bincount(levels, minlength=self.bits + 1)[1:]
        self._dense, self._sparse = {}, {}
        for level in range(1, self.bits + 1):
            mask = levels == level
            if level <= DENSE_MAX_BITS:
                a = np.bincount(j[mask], weights=y[mask], minlength=1 << level)
                self._dense[level] = scale * fwht(a)
            else:
                cols, inv = np.unique(j[mask], return_inverse=True)
                self._sparse[level] = (cols, scale * np.bincount(inv, weights=y[mask],
                                                                  minlength=cols.size))
        self._table = None
        if self.bits <= DENSE_MAX_BITS:
            raw = self._raw_less_than(np.arange(1, (1 << self.bits) + 1, dtype=np.int64))
            self._table = _monotone(raw)
        return self

    def fit(self, values, rng):
        """Run the protocol on one value per agent.

        Parameters
        ----------
        values : array-like of int, shape (n,)
            Integers in ``[0, 2^bits)``.
        rng : numpy.random.Generator
            Source of every random draw.

        Returns
        -------
        self : HierarchicalCDF
            The fitted protocol.
        """
        return self.aggregate(*self.randomize(values, rng))

    def _prefix_estimate(self, level, prefixes):
        if level in self._dense:
            return self._dense[level][prefixes]
        cols, weights = self._sparse[level]
        out = np.empty(prefixes.shape[0])
        step = max(1, _BLOCK // max(cols.size, 1))
        for start in range(0, prefixes.shape[0], step):  # blocks of queries, not samples
            block = prefixes[start:start + step]
            out[start:start + step] = hadamard_sign(block[:, None], cols[None, :]) @ weights
        return out

    def _raw_less_than(self, u):
        """Unprocessed estimates of ``#{x < u}/n`` for ``u`` in ``[1, 2^b]``."""
        out = np.zeros(u.shape[0])
        top = u >= (1 << self.bits)
        out[top] = 1.0  # every value is below 2^b: public knowledge
        inner = ~top
        for level in range(1, self.bits + 1):
            pre = u >> (self.bits - level)
            hit = inner & (pre & 1).astype(bool)
            if hit.any():
                out[hit] += self._prefix_estimate(level, pre[hit] - 1)
        return out

    def cdf_table(self):
        """The estimated CDF at every ``w`` in ``[0, 2^bits)``, as one array.

        Equal to ``self.cdf(np.arange(2**bits))`` (the raw dyadic sums, then one
        isotonic projection over all thresholds), but each level deeper than the dense
        table is transformed once by a fast Walsh-Hadamard transform of its aggregated
        reports (``O(l 2^l)``) instead of once per query (``O(n_l)`` each): for a search
        over every threshold. Post-processing of the released reports.

        Returns
        -------
        table : ndarray of shape (2**bits,)
            ``table[w]`` is the estimated fraction of agents with value ``≤ w``.
        """
        if not hasattr(self, "n_agents_"):
            raise ValueError("This HierarchicalCDF is not fitted yet; call fit(values, rng) first.")
        acc = np.zeros(1)  # Σ of the levels so far, per prefix of the current length
        for level in range(1, self.bits + 1):  # b levels, not samples
            if level in self._dense:
                est = self._dense[level]
            else:
                cols, weights = self._sparse[level]
                dense = np.zeros(1 << level)
                dense[cols] = weights
                est = fwht(dense)
            # #{x < u} adds f_l(prefix − 1) where u's l-bit prefix is odd (dyadic sums)
            term = np.zeros(1 << level)
            term[1::2] = est[0::2]
            acc = np.repeat(acc, 2) + term
        raw = np.concatenate([acc[1:], [1.0]])  # u = 1 .. 2^bits: every value is below 2^bits
        return _monotone(raw)

    def cdf(self, w):
        """Estimated fraction of agents with value ``≤ w`` (clipped, monotone).

        Parameters
        ----------
        w : int or array-like of int
            Thresholds in ``[0, 2^bits)``.

        Returns
        -------
        q : float or ndarray of the shape of ``w``
            The estimated CDF at ``w``.
        """
        if not hasattr(self, "n_agents_"):
            raise ValueError("This HierarchicalCDF is not fitted yet; call fit(values, rng) first.")
        w_arr = np.asarray(w)
        flat = _check_domain_values(w_arr.reshape(-1), 1 << self.bits, name="w")
        if self._table is not None:
            out = self._table[flat]
        else:
            order = np.argsort(flat, kind="stable")
            out = np.empty(flat.shape[0])
            out[order] = _monotone(self._raw_less_than(flat[order] + 1))
        return float(out[0]) if w_arr.ndim == 0 else out.reshape(w_arr.shape)
