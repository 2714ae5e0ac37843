"""Select-then-estimate in the hybrid model (BKNSS Appendix B)."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_epsilon_halves, check_group_nonempty, check_mask
from ..accounting import PrivacyAccountant
from ..mechanisms.exponential import ExponentialMechanism
from ..mechanisms.laplace import LaplaceMechanism
from ..mechanisms.randomized_response import RandomizedResponse
from ..utils._sklearn_compat import Interval, Options, validate_data, validate_params

__all__ = ["SelectThenEstimate"]


#: Rows per block of the {-1, 1} check: bounds its temporaries to ~1 MB per column.
_CHECK_BLOCK_ROWS = 1 << 20


def _all_plus_minus_one(X):
    """Whether every entry of X is -1 or 1, blockwise (no n x d temporary)."""
    step = max(1, _CHECK_BLOCK_ROWS // max(1, X.shape[1] if X.ndim > 1 else 1))
    for start in range(0, X.shape[0], step):
        block = X[start:start + step]
        if not ((block == 1) | (block == -1)).all():
            return False
    return True


class SelectThenEstimate(PrivateEstimatorMixin, BaseEstimator):
    """Curator selects a near-best coordinate of the mean; local agents estimate it (BKNSS App. B).

    Rows are ``x ∈ {−1, 1}^d`` with mean ``μ``. The goal is ``(i, μ̂_i)`` with
    ``μ_i ≥ max_j μ_j − α`` and ``|μ̂_i − μ_i| ≤ α'`` for ``α' < α``. The curator's ``m``
    rows suffice for the selection (``O(log d/(αε))`` rows) but not for the fine estimate
    (``Ω(1/α'²)``); the ``n`` local agents suffice for the estimate but not the selection
    (``Ω(d log d/α²)`` non-interactively). The protocol is interactive in that order:

    1. **Curator**: exponential mechanism over ``j`` with score ``u_j = Σ_i x_ij``
       (sensitivity 2 under replacement: one row moves each sum by at most 2;
       McSherry–Talwar 2007), ε central.
    2. **Referee** sends ``i`` to the local agents; each sends one binary randomized
       response of ``(1 + x_i)/2`` (Warner 1965), ε-LDP; the referee debiases:
       ``μ̂_i = 2·c_ε(mean − 1/(e^ε+1)) − 1``, error ``≤ 2c_ε sqrt(ln(2/β)/(2n))`` w.p. 1−β.

    Parameters
    ----------
    epsilon : float, default=1.0
        The ε of both populations. ``np.inf``: exact argmax and exact mean.
    accountant : PrivacyAccountant or None, default=None
        Charged (check-and-spend) before the fit reads a private row; ``None`` records
        the spend only in ``privacy_spent_``.
    random_state : int, RandomState, Generator or None, default=None
        Source of the privacy noise. Leave ``None`` (fresh OS entropy) for a release: a
        seed or a generator is kept by the fitted estimator (``get_params``, pickle),
        which lets whoever holds it replay the noise, and a seed reused across fits
        reuses the noise (a :class:`~skhybrid.SeedReuseWarning` under a finite budget).
        Seeds and generators are for tests and reproductions.
    verbose : int, default=0
        Print progress messages (``0``: silent).

    Attributes
    ----------
    selected_index_ : int
    estimate_ : float
        The estimate of ``μ_{selected_index_}``.
    curator_only_ : bool
    privacy_spent_ : dict
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int

    Notes
    -----
    An estimator of a statistic, not a predictor: it has ``fit`` only (no ``predict``,
    ``transform`` or ``score``), as a ``transform`` would invent a meaning the paper does
    not give. ``y`` is ignored. ``curator_mask=None`` (every row at the curator, how
    sklearn's checks call ``fit``): the curator selects with ``ε/2`` and estimates the
    mean with the Laplace mechanism at ``ε/2`` (sensitivity ``2/m``); still ε-DP. An
    explicit mask leaving either group empty raises ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.hybrid import SelectThenEstimate
    >>> rng = np.random.default_rng(0)
    >>> mu = np.full(50, 0.0); mu[7] = 0.6
    >>> X = np.where(rng.random((100000, 50)) < (1 + mu) / 2, 1, -1)
    >>> est = SelectThenEstimate(epsilon=1.0, random_state=0)
    >>> est = est.fit(X, curator_mask=np.arange(100000) < 2000)
    >>> est.selected_index_, abs(est.estimate_ - 0.6) < 0.05
    (7, True)
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    # Pure DP: δ is always 0 (read by PrivateEstimatorMixin; not a parameter).
    delta = 0.0

    def __init__(self, epsilon=1.0, *, accountant=None, random_state=None, verbose=0):
        self.epsilon = epsilon
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y=None, *, curator_mask=None):
        """Select a coordinate on the curator's rows, estimate it on the agents' rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, d)
            Entries in ``{−1, 1}``; anything else raises ValueError.
        y : None
            Ignored.
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True for the curator's rows (the selection), False for local agents (the
            estimate).

        Returns
        -------
        self : SelectThenEstimate
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X = validate_data(self, X, dtype=None)
        X = np.asarray(X)
        if not _all_plus_minus_one(X):
            raise ValueError("X must contain only -1/+1 entries (BKNSS App. B rows in "
                             "{-1,1}^d); map bits b to 2b-1 first.")
        # X is not converted as a whole: only the curator's rows and the selected column
        # of the agents' rows are read (as int64), so a fit adds no n x d copy.
        n = X.shape[0]
        mask = check_mask(curator_mask, n, "curator_mask", index=x_index)
        curator_only = curator_mask is None
        if curator_only:
            mask = np.ones(n, dtype=bool)
        else:
            check_group_nonempty(mask, "curator_mask", "curator rows", trusted=True)
            check_group_nonempty(mask, "curator_mask", "local agents", trusted=False)
        cur, loc = np.flatnonzero(mask), np.flatnonzero(~mask)
        name = type(self).__name__

        if curator_only:
            check_epsilon_halves(self.epsilon, "curator_mask=None: the curator's rows both "
                                 "select and estimate")
        eps_sel = self.epsilon / 2 if curator_only else self.epsilon
        if self.nonprivate:
            events = [nonprivate_event("central", name)]
            if not curator_only:
                events.append(nonprivate_event("local", name))
        else:
            select = ExponentialMechanism(eps_sel, sensitivity=2.0, integer=True)  # ±1 sums
            events = [select.event(source=name)]
            if curator_only:
                estimate = LaplaceMechanism(self.epsilon / 2, sensitivity=2.0 / cur.size)
                events.append(estimate.event(source=name))
            else:
                estimate = RandomizedResponse(self.epsilon)
                events.append(estimate.event(population="local", source=name))
        self._charge(events)
        rng = self._make_rng()

        # Curator-only fits read every row: sum X itself rather than a copy of X[cur].
        X_cur = X if curator_only else X[cur]
        # Entries are +-1, so integer and float64 sums are exact and equal; other dtypes
        # (e.g. object) go through int64 as before.
        if X.dtype.kind in "biu":
            sums = X_cur.sum(axis=0, dtype=np.int64).astype(float)
        elif X.dtype == np.float64:
            sums = X_cur.sum(axis=0)
        else:
            sums = X_cur.astype(np.int64).sum(axis=0).astype(float)
        del X_cur
        if self.nonprivate:
            i = int(np.argmax(sums))
            rows = cur if curator_only else loc
            value = float(X[rows, i].astype(np.int64).mean())
        else:
            i = int(select(sums, rng))
            if curator_only:
                value = float(estimate(X[cur, i].astype(np.int64).mean(), rng))
            else:
                reports = estimate((X[loc, i].astype(np.int64) + 1) // 2, rng)
                value = 2.0 * float(estimate.debias(reports)) - 1.0
        self.selected_index_ = i
        self.estimate_ = value
        self.curator_only_ = curator_only
        if self.verbose:
            print(f"[SelectThenEstimate] selected {i}, estimate {value:.4f}")
        return self

    def __sklearn_is_fitted__(self):
        return hasattr(self, "selected_index_")

