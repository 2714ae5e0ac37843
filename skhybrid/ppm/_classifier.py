"""PPMHalfspaceClassifier: privately learning halfspaces when privacy follows the label."""

import math
from numbers import Integral, Real

import numpy as np
from scipy.spatial import QhullError
from sklearn.base import BaseEstimator, ClassifierMixin

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_group_nonempty, check_mask, labels_as_given, resolve_classes
from ..accounting import PrivacyAccountant
from ..exceptions import label_repr, warn_degenerate
from ..mechanisms import ExponentialMechanism
from ..utils._sklearn_compat import (
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    validate_data,
    validate_params,
)
from ._candidates import (
    affine_hull,
    affine_hull_halfspaces,
    direction_net_halfspaces,
    exact_family_size,
    hull_facets,
    intersections_exact,
    membership_tolerance,
    supporting_halfspaces_exact,
)
from ._scoring import (
    containment_matrix,
    error_weights,
    halfspace_violations,
    iter_error_blocks,
    streamed_exponential_mechanism,
)

__all__ = ["PPMHalfspaceClassifier"]

# Score sensitivity for replacing one private row: that row adds 0 or 1 error to
# every candidate and nothing else moves (Bassily, Moran & Nandi 2020, Lemma 4.1).
_SENSITIVITY = 1.0
# Levels of the direction net: public order statistics (``candidates="net"``).
_NET_QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.99, 1.0)


def _family_size(n_halfspaces, max_size, include_all=False, n_extra=0):
    """``|G| = 1 + Σ_{m ≤ max_size} C(h, m)`` (+1 for the whole family) + ``n_extra``, as
    enumerated by :func:`~skhybrid.ppm._candidates.intersections_exact` and
    :func:`_net_levels`."""
    size = 1 + sum(math.comb(n_halfspaces, m) for m in range(1, min(max_size, n_halfspaces) + 1))
    return size + int(include_all and n_halfspaces > max_size) + n_extra


def _family_blocks(families, max_size):
    """Candidate blocks of one or more families over one stacked ``(W, B)``.

    ``families`` lists ``(offset, n_halfspaces, include_all, extra)``: each family's
    intersections of at most ``max_size`` of its own members (indices shifted by
    ``offset``), its whole-family candidate and its extra member tuples. The empty
    hypothesis is yielded once, by the first family. Intersections across families are
    not candidates: the union's size is the sum of the families' sizes.
    """
    for i, (offset, n_halfspaces, include_all, extra) in enumerate(families):
        blocks = intersections_exact(n_halfspaces, max_size, include_all=include_all)
        if i:
            next(blocks)  # the empty intersection: already a candidate
        for block in blocks:
            yield block + offset
        if len(extra):
            yield extra + offset


def _net_levels(n_halfspaces, n_levels):
    """One extra candidate per level: the intersection of every direction at that level.

    Rows of :func:`~skhybrid.ppm._candidates.direction_net_halfspaces` are direction-major,
    so level ``j`` is members ``{i · n_levels + j}``. This "quantile polytope" is the robust
    analogue of the whole convex hull of the ``"hull"`` family (level 1 is the
    circumscribed polygon of the net); it is built from public rows only.
    """
    return np.arange(n_halfspaces, dtype=np.intp).reshape(-1, n_levels).T.copy()


class PPMHalfspaceClassifier(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Halfspace learning with public rows of one class (PPM, Bassily, Moran & Nandi 2020).

    Label-determined privacy model (§3): rows of the *private class* are private, rows
    of the *public class* are public. The learner outputs a polytope: rows inside are
    predicted as the public class, rows outside as the private class. Candidate
    polytopes are intersections of at most ``k`` halfspaces (``k`` = dimension of the
    affine hull ``Aff`` of the public rows, ``d`` in general position) from a family
    built from public rows only, each intersected with ``Aff``, plus the "empty
    hypothesis" that predicts the private class everywhere (Algorithm 2, Step 8).
    One candidate is selected by the exponential mechanism with score ``-(number of
    errors on all rows)`` (Algorithm 2, Step 9), sampled exactly in one streamed pass
    with rate ``ε/2`` per error (sensitivity 1, McSherry & Talwar 2007, Thm 6; see
    :func:`~skhybrid.ppm._scoring.streamed_exponential_mechanism`).

    The candidate classes grow exponentially with the dimension: in practice ``d <= 3``
    (at ``d = 4`` every family exceeds the default ``max_candidates`` on a few hundred
    public rows). Project first, with a projection fit on the public rows, e.g.
    ``PublicFitTransformer(make_pipeline(StandardScaler(), PCA(2)))``. A class too
    large is refused before anything is computed from the private rows or charged.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε of the fit (pure ε-DP for the private rows, Lemma 4.1).
        ``np.inf`` returns the exact empirical-risk minimiser over the candidate class
        (first one on ties) — the non-private baseline.
    private_class : label or None, default=None
        The label whose rows are private. ``None`` means ``classes_[1]`` (sklearn's
        positive class). Never inferred from private rows.
    classes : array-like of shape (2,) or None, default=None
        The label set (a public domain). ``None``: the public rows' label together with
        ``private_class`` when it is given (both public facts), else the labels found in
        ``y``, with a :class:`~skhybrid.PrivacyLeakWarning`. A label outside the set is
        refused before anything is charged, naming no value.
    candidates : {"union", "exact", "hull", "net"}, default="union"
        The candidate family, always a function of public rows only:

        - ``"union"``: every candidate of ``"hull"`` and every candidate of ``"net"``,
          selected by one exponential mechanism over both. The guarantee is unchanged
          (Lemma 4.1 holds for any finite class built from public rows) and the utility
          bound grows only with the log of the class size, so the union gets the hull's
          near-exact fit on clean labels and the net's robustness to label noise.

        - ``"exact"``: faithful Algorithm 2 over Algorithm 1's family ``C_pub`` (for
          every subset of at most ``k`` public points, one supporting hyperplane and
          both of its halfspaces), built from *all* public rows, labels unused. About
          ``(2 n_pub^k)^k / k!`` candidates: small problems only.
        - ``"hull"``: facets of the convex hull of the public rows carrying the public
          class, intersections of at most ``k`` facets plus the whole hull. For
          realizable data a zero-error candidate exists (Helly's theorem, see
          :func:`~skhybrid.ppm._candidates.hull_facets`); one mislabelled public row
          inflates the hull, so it collapses under label noise.
        - ``"net"``: a fixed net of ``n_directions`` directions × public order
          statistics (levels 0.5, 0.75, 0.9, 0.95, 0.99, 1) of the public-class rows
          (:func:`~skhybrid.ppm._candidates.direction_net_halfspaces`), intersections
          of at most ``k`` members plus, per level, the intersection of all directions.
          Robust to label noise and public outliers, but coarser than ``"hull"`` on
          clean labels (it was within ~0.02 of ``"hull"`` on realizable data and 3×
          better under 10% label noise in our d = 2 measurements).
    max_candidates : int, default=10**8
        Largest candidate class scored. A larger class is refused with a
        ``ValueError`` before anything is charged (the size depends on public
        information only).
    n_directions : int or None, default=None
        Size of the direction net (``candidates="net"`` or ``"union"``). ``None`` uses
        ``16 * (d - 1)``: 16 at d = 2; at d = 3, 16 directions left the ERM over the net
        at ≈ 0.12 test error on a halfspace target and 32 at ≈ 0.07 (measured in
        ``python -m skhybrid reproduce ppm-halfspaces``).
    n_jobs : int or None, default=None
        Threads scoring candidate blocks (joblib's convention: ``-1`` uses every core;
        ``0`` is refused). The selection is identical for every value at a fixed
        ``random_state`` (noise is drawn in stream order).
    accountant : PrivacyAccountant or None, default=None
        Charged one pure ε event before any private row is scored.
    random_state : int, RandomState, Generator or None, default=None
        Source of the privacy noise. Leave ``None`` (fresh OS entropy) for a release: a
        seed or a generator is kept by the fitted estimator (``get_params``, pickle),
        which lets whoever holds it replay the noise, and a seed reused across fits
        reuses the noise (a :class:`~skhybrid.SeedReuseWarning` under a finite budget).
        Seeds and generators are for tests and reproductions.
    verbose : int, default=0
        Print the family size and the selection.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    private_class_ : label
        The private class actually used.
    halfspaces_ : tuple (W, B)
        The selected polytope ``{x : W x <= B}`` (``W`` of shape (m, n_features)),
        including the halfspaces cutting out ``Aff``. The empty hypothesis is stored
        as the single unsatisfiable halfspace ``{x : 0·x <= -1}``. A DP output:
        releasing it is post-processing.
    empty_hypothesis_ : bool
        True when the selected candidate predicts the private class everywhere.
    tol_ : float
        Membership slack (from public rows only), used by ``predict``.
    n_candidates_ : int
        Size of the candidate class the mechanism selected from.
    privacy_spent_ : dict
        ``{"central": (ε, 0), "local": (0, 0)}`` spent by this fit.
    privacy_events_ : list of PrivacyEvent
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has feature names.

    See Also
    --------
    skhybrid.learners.DPLogisticRegression : DP logistic regression with public rows.

    Notes
    -----
    *Labels of private and public rows.* In the label-determined model every private
    row has the private class. Under relaxation (ii) of §4 public rows may carry
    either label; they are scored like every row (the score counts errors on all
    rows). A private row carrying the public class is **accepted** (relaxation (i)
    of §4): Lemma 4.1 bounds the score change by 1 for *any* replacement of a private
    row, whatever its label, so the guarantee is unchanged, whereas rejecting such
    rows would make the exception itself an output that depends on a private row.
    Such rows only cost accuracy. The label *set* (``classes_``) is declared
    (``classes``), or follows from the public rows and ``private_class``; only when
    neither gives it is it read from ``y``, with a warning.

    *Privacy (Lemma 4.1).* The candidate class, ``Aff`` and the membership slack are
    functions of public rows, the mask and the parameters; the score ``-errors`` has
    sensitivity 1 for replacing one private row. The exponential mechanism is then
    ε-DP for every fixed public part, whatever finite class is scored; changing public
    rows changes the class, never the charge. The event is ε-bounded-range, hence
    ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2), which the accountant may use.

    *Degenerate inputs.* ``public_mask=None`` (every row private; how sklearn's checks
    call ``fit``): the family is empty, the only candidate is the empty hypothesis,
    and the model predicts the private class everywhere (still charged: one event
    over one candidate). An explicit mask with no public row, or with no private row,
    raises ``ValueError``. With ``"hull"``/``"net"`` and no public row of the public
    class, the empty hypothesis is again the only candidate.

    *Decision function.* ``max_k (W_k·x - B_k) - tol_``: the largest violation over the
    selected halfspaces, positive outside the polytope (private class). Its sign is
    flipped when the private class is ``classes_[0]``, so that, as everywhere in
    scikit-learn, positive values mean ``classes_[1]``. The empty hypothesis gives
    ``+1`` (or ``-1``) everywhere.

    References
    ----------
    R. Bassily, S. Moran, A. Nandi. Learning from mixtures of private and public
    populations. NeurIPS 2020 (§3, §4, Algorithms 1–2, Lemma 4.1, Theorem 4.6).

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.ppm import PPMHalfspaceClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(400, 2))
    >>> y = (np.linalg.norm(X, axis=1) > 0.6).astype(int)   # 1 = private, outside a disc
    >>> public = y == 0                                      # label-determined model
    >>> clf = PPMHalfspaceClassifier(epsilon=1.0, private_class=1, random_state=0)
    >>> clf = clf.fit(X, y, public_mask=public)
    >>> clf.privacy_spent_["central"]
    (1.0, 0.0)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    __metadata_request__fit = {"public_mask": True}

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "private_class": "no_validation",
        "classes": ["array-like", None],
        "candidates": [StrOptions({"union", "exact", "hull", "net"})],
        "max_candidates": [Interval(Integral, 1, None, closed="left")],
        "n_directions": [Interval(Integral, 1, None, closed="left"), None],
        # joblib's convention: 0 has no meaning (refused here, before the charge).
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        epsilon=1.0,
        *,
        private_class=None,
        classes=None,
        candidates="union",
        max_candidates=10**8,
        n_directions=None,
        n_jobs=None,
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.private_class = private_class
        self.classes = classes
        self.candidates = candidates
        self.max_candidates = max_candidates
        self.n_directions = n_directions
        self.n_jobs = n_jobs
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    @property
    def delta(self):
        """Always 0: the exponential mechanism is pure ε-DP."""
        return 0.0

    def fit(self, X, y, *, public_mask=None):
        """Select a polytope by the exponential mechanism; private rows get ε-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, public and private.
        y : array-like of shape (n_samples,)
            Binary labels.
        public_mask : array-like of bool of shape (n_samples,), default=None
            True for public rows. ``None``: every row is private (degenerate: the
            model predicts the private class everywhere).

        Returns
        -------
        self : PPMHalfspaceClassifier
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        y_given = y
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        n, d = X.shape
        mask_given = public_mask is not None
        public = check_mask(public_mask, n, "public_mask", index=x_index)
        if mask_given:
            check_group_nonempty(public, "public_mask", "public rows")
            check_group_nonempty(public, "public_mask", "private rows", trusted=False)
        label_set = self._label_set(y, public, labels_as_given(y_given, public))
        origin = None if self.classes is not None else (
            f"the public rows' label and private_class={self.private_class!r}")
        self.classes_, codes = resolve_classes(y, label_set, estimator=type(self).__name__,
                                               binary=True, origin=origin, trusted=public)
        # y by value, in classes_'s type: a private label's own type (a Decimal(1) among
        # ints made y an object array, which scikit-learn refuses) reaches nothing below.
        y = self.classes_[codes]
        if self.private_class is None:
            self.private_class_ = self.classes_[1]
        elif self.private_class in self.classes_.tolist():
            self.private_class_ = self.classes_[self.classes_.tolist().index(self.private_class)]
        else:
            raise ValueError(
                f"private_class={self.private_class!r} is not one of the classes "
                f"({self.classes_.tolist()}); pass one of them or None for classes_[1]."
            )
        is_private_class = y == self.private_class_

        # --- Candidate class: public rows, the mask and parameters only (Lemma 4.1). ---
        if self.candidates == "exact":
            X_cand = X[public]  # Algorithm 1 uses all public points, labels unused.
        else:
            # Public rows with the private label (relaxation (ii)) would inflate the
            # polytope; dropping them is still a function of public rows.
            X_cand = X[public & ~is_private_class]
        W, B, k, W_aff, B_aff, tol, families = self._build_family(X_cand, d)
        n_candidates = self._union_size(families, k)
        if self.verbose:
            print(
                f"[PPMHalfspaceClassifier] {self.candidates!r}: {W.shape[0]} halfspaces, "
                f"affine dimension {k}, {n_candidates} candidates"
            )

        # --- Charge before any private row is scored. ---
        if self.nonprivate:
            events = [nonprivate_event(source=type(self).__name__)]
        else:
            events = [ExponentialMechanism(self.epsilon, _SENSITIVITY).event(count=1)]
        self._charge(events)
        rng = self._make_rng()

        # --- Score every candidate on all rows and select (Algorithm 2, Step 9). ---
        if W_aff.shape[0]:
            in_region = ~halfspace_violations(W_aff, B_aff, X, tol=tol).any(axis=0)
        else:
            in_region = None
        weights, n_public_class = error_weights(is_private_class, in_region)
        contain = containment_matrix(W, B, X, tol=tol)
        blocks = _family_blocks(families, k)
        selection = streamed_exponential_mechanism(
            iter_error_blocks(contain, weights, n_public_class, blocks),
            self.epsilon,
            _SENSITIVITY,
            rng,
            n_jobs=self.n_jobs,
            integer=True,  # -errors, Δ = 1: the lattice is the integers, nothing rounded
        )
        members = np.asarray(selection.candidate, dtype=np.intp)
        self.empty_hypothesis_ = members.size == 0
        if self.empty_hypothesis_:
            warn_degenerate(type(self).__name__,
                            f"the empty hypothesis was selected, so it predicts "
                            f"{label_repr(self.private_class_)} (the private class) everywhere",
                            "Mark the public rows in public_mask; with them, more rows or a "
                            "larger epsilon usually help.")
        if self.empty_hypothesis_:
            self.halfspaces_ = (np.zeros((1, d)), np.array([-1.0]))
        else:
            self.halfspaces_ = (np.vstack([W[members], W_aff]), np.concatenate([B[members], B_aff]))
        self.tol_ = tol
        self.n_candidates_ = selection.n_candidates
        if self.verbose:
            print(
                f"[PPMHalfspaceClassifier] selected candidate {selection.index} "
                f"({members.size} halfspaces)"
            )
        return self

    def _label_set(self, y, public, given=None):
        """The label set without reading a private label, when parameters allow it.

        ``classes`` when declared. Otherwise, in the label-determined model, the public rows
        show the public class and ``private_class`` names the other: together they are
        the label set, a public fact. Failing both, ``None`` (read from ``y`` with a
        PrivacyLeakWarning).
        """
        if self.classes is not None:
            return self.classes
        public_labels = (np.unique(y[public] if given is None else given) if public.any()
                         else np.array([]))
        if self.private_class is not None and public_labels.size == 1:
            if public_labels[0] != self.private_class:
                # Typed by these two values only, never by y's dtype, which every label
                # sets, private ones included: a string dtype's width would cut a longer
                # private_class (red team 18), and one private Decimal(1) among ints made
                # the set, and classes_, an object array (red team 22).
                return np.array([public_labels[0], self.private_class])
        if public_labels.size == 2:
            return public_labels
        return None

    def _build_family(self, X_cand, d):
        """Stacked halfspaces ``(W, B)``, intersection size ``k``, ``Aff`` halfspaces, the
        membership slack and the families (see :func:`_family_blocks`) over ``(W, B)``.

        Public rows only. Refuses (before any charge) a class larger than
        ``max_candidates``.
        """
        empty = np.empty((0, d)), np.empty(0)
        no_extra = np.empty((0, 0), dtype=np.intp)
        tol = membership_tolerance(X_cand)
        if X_cand.shape[0] == 0:
            return *empty, 0, *empty, tol, [(0, 0, False, no_extra)]
        origin, basis = affine_hull(X_cand)
        k = basis.shape[1]
        W_aff, B_aff = affine_hull_halfspaces(origin, basis)
        parts = []  # (W, B, include_all, extra) per family
        if self.candidates == "exact":
            _, size = exact_family_size(X_cand.shape[0], k)
            self._check_size(size)
            parts.append((*supporting_halfspaces_exact(X_cand), False, no_extra))
        net = None
        if self.candidates in ("net", "union"):
            W, B = direction_net_halfspaces(
                X_cand, n_directions=self._n_directions(X_cand.shape[1]), quantiles=_NET_QUANTILES
            )
            extra = _net_levels(W.shape[0], len(_NET_QUANTILES)) if W.shape[0] else no_extra
            net = (W, B, False, extra)
        if self.candidates in ("hull", "union"):
            # The hull has at least k + 1 facets (a simplex in Aff), so its family has at
            # least 2^(k+1) candidates: refuse that before Qhull, which in a dozen
            # dimensions runs for minutes and then fails.
            at_least = [(0, k + 1, True, no_extra)]
            if net is not None:
                at_least.append((k + 1, net[0].shape[0], False, net[3]))
            self._check_size(self._union_size(at_least, k), at_least=True)
            try:
                parts.append((*hull_facets(X_cand), True, no_extra))
            except QhullError:
                raise ValueError(
                    f"candidates={self.candidates!r}: the convex hull of the public rows in "
                    f"{k} dimensions is beyond Qhull. PPM's candidate classes grow "
                    "exponentially with the dimension: project the rows to 2 or 3 "
                    "dimensions first, e.g. PublicFitTransformer(make_pipeline("
                    "StandardScaler(), PCA(2))), or use candidates='net'. Nothing was "
                    "charged.") from None
        if net is not None:
            parts.append(net)
        families, offset = [], 0
        for W, _B, include_all, extra in parts:
            families.append((offset, W.shape[0], include_all, extra))
            offset += W.shape[0]
        if self.candidates != "exact":
            self._check_size(self._union_size(families, k))
        W = np.vstack([p[0] for p in parts])
        B = np.concatenate([p[1] for p in parts])
        return W, B, k, W_aff, B_aff, tol, families

    @staticmethod
    def _union_size(families, k):
        """Candidates of the union: each family's, with the empty hypothesis counted once."""
        sizes = [_family_size(h, k, include_all, len(extra))
                 for _, h, include_all, extra in families]
        return sum(sizes) - (len(sizes) - 1)

    def _check_size(self, size, at_least=False):
        if size > self.max_candidates:
            # Only the families smaller than the one asked for are worth suggesting.
            smaller = {"union": "use candidates='hull' or 'net' (fewer candidates), ",
                       "hull": "use candidates='net' (a fixed net of directions), ",
                       "net": "lower n_directions, "}
            other = smaller.get(self.candidates, "")
            raise ValueError(
                f"candidates={self.candidates!r} gives {'at least ' if at_least else ''}"
                f"{size} candidate hypotheses, more than "
                f"max_candidates={self.max_candidates}. Raise max_candidates (scoring runs at "
                f"roughly 10^7 candidates/s), {other}or reduce the number of public rows or "
                "features (e.g. a projection fit on public rows)."
            )

    def _margin(self, X):
        W, B = self.halfspaces_
        return np.max(X @ W.T - B, axis=1) - self.tol_

    def decision_function(self, X):
        """Return the largest violation of the selected halfspaces.

        Positive means ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            The signed largest violation.
        """
        check_is_fitted(self, "halfspaces_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        margin = self._margin(X)
        return margin if self.private_class_ == self.classes_[1] else -margin

    def predict(self, X):
        """Predict the private class outside the selected polytope, the public class inside.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self, "halfspaces_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        W, B = self.halfspaces_
        # The same membership test as the scoring, so predictions match the errors counted.
        outside = halfspace_violations(W, B, X, tol=self.tol_).any(axis=0)
        public_class = (
            self.classes_[0] if self.private_class_ == self.classes_[1] else self.classes_[1]
        )
        return np.where(outside, self.private_class_, public_class)

    def _n_directions(self, n_features):
        if self.n_directions is not None:
            return self.n_directions
        return 16 * max(1, n_features - 1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # sklearn's checks fit without public_mask, i.e. with no public row: the only
        # candidate is the empty hypothesis (private class everywhere, Algorithm 2's
        # degenerate case), so no accuracy threshold can be met by design.
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags
