"""Threshold learning by local agents, and parity-and-threshold in the hybrid model (BKNSS App. A)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_mask
from ..accounting import PrivacyAccountant
from ..learners._parity import (
    binary_labels,
    parity_event,
    resolve_floor,
    select_candidate,
)
from ..learners._parity_core import boosted_private_parity, predict_parity
from ..mechanisms.gf2 import pack_bits, solve_affine
from ..mechanisms.local.cdf import HierarchicalCDF
from ._parity_threshold import (
    EmpiricalCDF,
    LaplaceTreeCDF,
    _HybridParams,
    check_threshold_values,
    split_columns,
)

__all__ = ["LocalThresholdClassifier", "ParityAndThresholdClassifier", "threshold_from_cdf"]

#: Above this many bits the threshold is searched on a grid of 2^16 + 1 candidates.
_FULL_SEARCH_BITS = 16


def encode_labelled(t, labels, bits):
    """One integer per agent: the label as bit ``b`` on top of ``t`` (domain ``[0, 2^{b+1})``)."""
    return (labels.astype(np.int64) << bits) | t


def threshold_from_cdf(cdf, bits):
    """Empirical-risk-minimising threshold from a CDF ``G`` of the encoded ``(label, t)``.

    With ``u = label·2^b + t`` and ``G(w) = Pr[u ≤ w]``, the error of "predict 1 iff
    ``t ≥ θ``" is ``Pr[label=1, t<θ] + Pr[label=0, t≥θ] = G(2^b + θ − 1) − G(θ − 1)``
    (``G(−1) = 0``), for ``θ ∈ [0, 2^b]``. If ``G`` has sup error ``a``, the returned
    ``θ`` has empirical error within ``4a`` of the best threshold (post-processing).

    Returns
    -------
    theta : int in [0, 2^bits]
    errors : ndarray
        Estimated error of each candidate.
    """
    top = 1 << bits
    if bits <= _FULL_SEARCH_BITS:
        theta = np.arange(top + 1, dtype=np.int64)
    else:
        theta = np.unique(np.linspace(0, top, (1 << _FULL_SEARCH_BITS) + 1).astype(np.int64))
    query = cdf.cdf
    lower = np.zeros(theta.shape)
    pos = theta > 0
    lower[pos] = query(theta[pos] - 1)
    upper = query(top + theta - 1)
    errors = np.asarray(upper, dtype=float) - lower
    return int(theta[np.argmin(errors)]), errors


class LocalThresholdClassifier(_HybridParams, PrivateEstimatorMixin, ClassifierMixin,
                               BaseEstimator):
    """ε-LDP threshold learner from local agents' (value, label) reports (BKNSS App. A).

    Learns ``Thr_θ(t) = 1[t ≥ θ]`` over the integer threshold feature ``t ∈ [0, 2^b)``;
    every other column is ignored (on parity-XOR-threshold data this is the local-only
    baseline: no local learner can see the parity, Lemma 3.2).

    Each agent sends **one** ε-LDP report: its value with the label as an extra top bit,
    ``u = label·2^b + t``, to the hierarchical CDF protocol on ``b + 1`` bits (BKNSS
    Thm 2.15; :class:`~skhybrid.mechanisms.local.HierarchicalCDF`). The referee picks the
    ``θ`` minimising the estimated error ``G(2^b+θ−1) − G(θ−1)``
    (:func:`threshold_from_cdf`). This is a non-interactive replacement of App. A's
    two-phase protocol (quantile binary search for the ``α/4``-quantiles, then a
    heavy-hitter count of 1-labels per bin): one CDF of the labelled values answers both
    questions at once, with excess error ``≤ 4·sup|Ĝ − G|``.

    Parameters
    ----------
    threshold_feature : int, default=-1
    threshold_bits : int, default=8
        ``b``: the feature's public domain is ``[0, 2^b)``.
    alpha : float in (0, 1), default=0.1
        Target accuracy (used only by :meth:`error_bound`; the protocol has no tuning knob).
    epsilon : float, default=1.0
        Local ε of each agent. ``np.inf``: exact empirical risk minimisation.
    accountant, random_state, verbose
        As everywhere in skhybrid.

    Attributes
    ----------
    threshold_ : int in [0, 2^b]
        Predict ``classes_[1]`` iff ``t ≥ threshold_``.
    estimated_errors_ : ndarray
        Estimated training error of each candidate threshold.
    classes_, privacy_spent_, n_features_in_

    Notes
    -----
    Uses the local agents only (rows with ``curator_mask`` False); curator rows are
    ignored. ``curator_mask=None`` treats every row as a local agent (an ε-LDP protocol
    run on rows the curator holds is also ε-DP centrally); its event is charged to the
    ``"local"`` population. An explicit mask without local rows raises.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.hybrid import LocalThresholdClassifier
    >>> rng = np.random.default_rng(42)   # data and mechanism seeds must differ
    >>> t = rng.integers(0, 256, size=100000)
    >>> X, y = t[:, None], (t >= 77).astype(int)
    >>> clf = LocalThresholdClassifier(threshold_bits=8, random_state=0).fit(X, y)
    >>> abs(clf.threshold_ - 77) < 26
    True
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        "threshold_feature": [Integral],
        "threshold_bits": [Interval(Integral, 1, 61, closed="both")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, threshold_feature=-1, threshold_bits=8, alpha=0.1, epsilon=1.0, *,
                 accountant=None, random_state=None, verbose=0):
        self.threshold_feature = threshold_feature
        self.threshold_bits = threshold_bits
        self.alpha = alpha
        self.epsilon = epsilon
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, *, curator_mask=None):
        """Run the protocol on the local agents' rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two-class labels.
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True rows are ignored; None: every row is a local agent.

        Returns
        -------
        self : LocalThresholdClassifier
        """
        self._validate_params()
        self._check_privacy_params()
        X, y = validate_data(self, X, y, dtype=None)
        self.classes_, bits = binary_labels(y, type(self).__name__)
        _, tf = split_columns(X, self.threshold_feature, check_parity=False)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        local = np.ones(X.shape[0], dtype=bool)
        if curator_mask is not None:
            local = ~check_mask(curator_mask, X.shape[0], "curator_mask")
            if not local.any():
                raise ValueError("curator_mask leaves no local agents: at least one row must "
                                 "be False in curator_mask.")
        b = self.threshold_bits
        name = type(self).__name__
        if self.nonprivate:
            self._charge([nonprivate_event("local", name)])
        else:
            self._charge([HierarchicalCDF(self.epsilon, b + 1).event(source=name)])
        rng = self._make_rng()
        u = encode_labelled(t[local], bits[local], b)
        if self.nonprivate:
            cdf = EmpiricalCDF(u)
        else:
            cdf = HierarchicalCDF(self.epsilon, b + 1).fit(u, rng)
        self.threshold_, self.estimated_errors_ = threshold_from_cdf(cdf, b)
        if self.verbose:
            print(f"[LocalThresholdClassifier] {int(local.sum())} agents, "
                  f"threshold {self.threshold_}")
        return self

    def error_bound(self, n, beta=0.05):
        """Excess-error bound ``4 c_ε (b+1) sqrt(2((b+1) ln 2 + ln(2/β))/n)`` of the fit.

        Four times the CDF's sup error (BUILDING_BLOCKS §5.3 on ``b + 1`` bits).
        """
        return 4 * HierarchicalCDF(self.epsilon, self.threshold_bits + 1).error_bound(n, beta)

    def predict(self, X):
        """Predict ``classes_[1[t ≥ threshold_]]``."""
        check_is_fitted(self, "threshold_")
        X = validate_data(self, X, dtype=None, reset=False)
        _, tf = split_columns(X, self.threshold_feature, check_parity=False)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        return self.classes_[(t >= self.threshold_).astype(np.int64)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # One ε-LDP report per agent: with sklearn's ~100-row check sets the CDF error is
        # of order b·c_ε/√n ≫ 1, so accuracy thresholds are out of reach.
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags


class ParityAndThresholdClassifier(_HybridParams, PrivateEstimatorMixin, ClassifierMixin,
                                   BaseEstimator):
    """Parity *and* threshold in the hybrid model (BKNSS App. A, Theorem A.1): a 2-bit label.

    The concept is ``c_{k,θ}(x, t) = (⟨k, x⟩, 1[t ≥ θ])``; ``y`` has shape
    ``(n_samples, 2)`` (sklearn's multi-output convention), column 0 the parity label and
    column 1 the threshold label, each with two classes. The curator learns the parity
    part (:class:`~skhybrid.learners.PrivateParityClassifier`'s boosted PPAR on disjoint
    chunks, ε central) and the local agents the threshold part
    (:class:`LocalThresholdClassifier`'s protocol, ε-LDP, one report each); the two
    interactions are independent, as in App. A.

    Parameters
    ----------
    threshold_feature, threshold_bits, alpha, epsilon
        As in :class:`ParityThresholdClassifier`.
    n_chunks : int, default=4
        Disjoint chunks of the curator's PPAR (parallel composition).
    rate, floor
        PPAR parameters.
    accountant, random_state, verbose

    Attributes
    ----------
    parity_ : ndarray of shape (c,) or None
    threshold_ : int
    classes_ : list of two ndarrays of shape (2,)
    privacy_spent_, n_features_in_

    Notes
    -----
    ``curator_mask=None``: every row is at the curator, which spends ``ε/2`` on PPAR and
    ``ε/2`` on the threshold through a Laplace dyadic tree of the label-encoded values
    (:class:`~skhybrid.hybrid._parity_threshold.LaplaceTreeCDF`); still ε-DP. An explicit
    mask leaving either group empty raises.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.hybrid import ParityAndThresholdClassifier
    >>> rng = np.random.default_rng(0)
    >>> n = 60000
    >>> X = np.column_stack([rng.integers(0, 2, (n, 5)), rng.integers(0, 256, n)])
    >>> Y = np.column_stack([X[:, :5] @ [1, 1, 0, 0, 1] % 2, X[:, -1] >= 99])
    >>> clf = ParityAndThresholdClassifier(threshold_bits=8, random_state=1)
    >>> clf = clf.fit(X, Y, curator_mask=np.arange(n) < 5000)
    >>> clf.parity_.tolist()
    [1, 1, 0, 0, 1]
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        **LocalThresholdClassifier._parameter_constraints,
        "n_chunks": [Interval(Integral, 1, None, closed="left")],
        "rate": [StrOptions({"tanh", "klnrs"})],
        "floor": [Interval(Real, 0, 1, closed="both"), StrOptions({"min"})],
    }

    def __init__(self, threshold_feature=-1, threshold_bits=8, alpha=0.1, epsilon=1.0, *,
                 n_chunks=4, rate="tanh", floor=0.5, accountant=None, random_state=None,
                 verbose=0):
        self.threshold_feature = threshold_feature
        self.threshold_bits = threshold_bits
        self.alpha = alpha
        self.epsilon = epsilon
        self.n_chunks = n_chunks
        self.rate = rate
        self.floor = floor
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X, y, *, curator_mask=None):
        """Run both halves of the protocol.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples, 2)
        curator_mask : array-like of bool of shape (n_samples,), default=None

        Returns
        -------
        self : ParityAndThresholdClassifier
        """
        self._validate_params()
        self._check_privacy_params()
        X, y = validate_data(self, X, y, dtype=None, multi_output=True)
        if y.ndim != 2 or y.shape[1] != 2:
            raise ValueError(f"y must have shape (n_samples, 2) (parity label, threshold "
                             f"label); got {y.shape}.")
        Xp, tf = split_columns(X, self.threshold_feature)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        check_classification_targets(y)
        name = type(self).__name__
        c0, par_bits = binary_labels(y[:, 0], name + " (parity column y[:, 0])")
        c1, thr_bits = binary_labels(y[:, 1], name + " (threshold column y[:, 1])")
        self.classes_ = [c0, c1]
        mask = self._check_masks(curator_mask, X.shape[0])
        curator_only = curator_mask is None
        b = self.threshold_bits

        eps_par = self.epsilon / 2 if curator_only else self.epsilon
        if self.nonprivate:
            events = [nonprivate_event("central", name)]
            if not curator_only:
                events.append(nonprivate_event("local", name))
        else:
            floor = resolve_floor(eps_par, self.rate, self.floor)
            events = [parity_event(eps_par, rate=self.rate, floor=floor,
                                   n_chunks=int(self.n_chunks), source=name)]
            if curator_only:
                events.append(LaplaceTreeCDF(self.epsilon / 2, b + 1).event(source=name))
            else:
                events.append(HierarchicalCDF(self.epsilon, b + 1).event(source=name))
        self._charge(events)
        rng = self._make_rng()

        cur = np.flatnonzero(mask)
        if self.nonprivate:
            ok, particular, _ = solve_affine(pack_bits(Xp[cur]), par_bits[cur],
                                             n_features=Xp.shape[1])
            self.parity_ = particular if ok else None
        else:
            self.parity_ = select_candidate(boosted_private_parity(
                Xp[cur], par_bits[cur], eps_par, rng, int(self.n_chunks), rate=self.rate,
                floor=floor))
        agents = cur if curator_only else np.flatnonzero(~mask)
        u = encode_labelled(t[agents], thr_bits[agents], b)
        if self.nonprivate:
            cdf = EmpiricalCDF(u)
        elif curator_only:
            cdf = LaplaceTreeCDF(self.epsilon / 2, b + 1).fit(u, rng)
        else:
            cdf = HierarchicalCDF(self.epsilon, b + 1).fit(u, rng)
        self.threshold_, _ = threshold_from_cdf(cdf, b)
        return self

    def predict(self, X):
        """Predict both labels; returns an array of shape (n_samples, 2)."""
        check_is_fitted(self, "threshold_")
        X = validate_data(self, X, dtype=None, reset=False)
        Xp, tf = split_columns(X, self.threshold_feature)
        t = check_threshold_values(X[:, tf], self.threshold_bits)
        par = (np.zeros(X.shape[0], dtype=np.int64) if self.parity_ is None
               else predict_parity(self.parity_, Xp).astype(np.int64))
        thr = (t >= self.threshold_).astype(np.int64)
        return np.column_stack([self.classes_[0][par], self.classes_[1][thr]])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        # Binary parity columns, an integer threshold column and a DP fit: sklearn's
        # check data and sizes are out of reach (see ParityThresholdClassifier).
        tags.classifier_tags.poor_score = True
        return tags
