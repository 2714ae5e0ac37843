"""PARITY in one round of the hybrid model (Kohen & Sheffet, Appendix B)."""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_group_nonempty, check_mask
from ..accounting import PrivacyAccountant
from ..exceptions import label_repr, warn_degenerate
from ..learners._parity import binary_labels, check_binary_features, parity_event
from ..learners._parity_core import (
    _inclusion_rate,
    boosted_private_parity,
    parity_privacy_epsilon,
    predict_parity,
)
from ..mechanisms import RandomizedResponse, _noise
from ..utils._sklearn_compat import (
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    validate_data,
    validate_params,
)

__all__ = ["ParityTransfer"]


class ParityTransfer(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Learn a parity for a target population in one curator round and one local test.

    The curator runs the ε-DP parity learner of Kasiviswanathan et al. (KLNRS 2008) on
    ``n_chunks`` disjoint chunks of its rows (sampled from a source S); every non-⊥
    output is a candidate parity. Each local agent (sampled from the target T) then
    answers *one* binary randomized-response query — "does candidate j mislabel my
    example?" for the candidate j of its batch — and the candidate with the smallest
    debiased error estimate is returned (Kohen & Sheffet, Appendix B: when χ²(T‖S) is
    polynomial the curator's chunks are full rank w.h.p. and one round suffices).

    Parameters
    ----------
    epsilon : float, default=1.0
        Curator guarantee: the parity learner is ε-DP per chunk, hence ε-DP for every
        curator row (parallel composition). ``np.inf`` runs the non-private baseline (all
        rows kept, no ⊥ floor, exact local errors).
    local_epsilon : float or None, default=None
        Each local agent's pure LDP level (binary randomized response, one report).
        ``None``: ``epsilon``.
    delta : float, default=0.0
        Unused by the mechanisms (both guarantees are pure); kept for the common
        interface of skhybrid estimators.
    n_chunks : int or None, default=None
        Number of disjoint curator chunks. ``None``: ⌈log_{4/3}(2/β)⌉ (KS Cor. B.3).
    alpha : float in (0, 1), default=0.1
        Validation threshold: ``validated_`` is True when the chosen candidate's estimated
        target error is ≤ α.
    beta : float in (0, 1), default=0.05
        Failure probability; sets the default ``n_chunks``.
    rate : {"tanh", "klnrs"}, default="tanh"
        Inclusion rate of the parity learner (see
        :func:`~skhybrid.learners._parity_core.private_parity`): ``"tanh"`` is exactly ε-DP;
        ``"klnrs"`` is KS's p = ε/4.
    floor : float, default=0.5
        Probability of ⊥ per chunk regardless of the data (needed for DP;
        :ref:`notes_parity_learner`).
    classes : array-like of shape (2,) or None, default=None
        The label set (a public domain). ``None`` reads it from ``y`` with a
        :class:`~skhybrid.PrivacyLeakWarning`: the label set, ``classes_`` and whether the
        fit succeeds then depend on private labels. A label outside a declared set is
        refused before anything is charged, naming no value.
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
        Print the number of candidate parities and the local test's (DP) estimates.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the label of parity 1.
    parity_ : ndarray of shape (n_features,), dtype uint8
        The chosen parity vector r (prediction ⟨r, x⟩ mod 2); all zeros when every chunk
        returned ⊥.
    candidates_ : ndarray of shape (n_candidates, n_features)
        The distinct non-⊥ outputs of the curator's chunks (a DP output).
    target_error_estimates_ : ndarray of shape (n_candidates,)
        Debiased randomized-response estimates of each candidate's target error.
    validated_ : bool
        Whether the chosen candidate's estimate is ≤ ``alpha``.
    privacy_spent_ : dict
        ``{"central": (ε, 0), "local": (local ε, 0)}``.
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int

    Notes
    -----
    *Privacy, curator.* Each chunk's output is ε-DP (the ⊥-floor analysis of
    :ref:`notes_parity_learner`; exactly ε with ``rate="tanh"``); chunks are disjoint and chosen
    independently of the data, so the list is ε-DP (parallel composition). KS Cor. B.3
    uses p = ε/4, which is ε-DP for ε ≤ 3.83 (and about ε/2 for small ε).
    *Privacy, local agents.* Agents are split into one batch per candidate by a
    data-independent permutation; each sends one ``RandomizedResponse(local_epsilon)``
    report of one bit, so the fit is ``local_epsilon``-LDP. The selection is
    post-processing.
    *Accuracy.* A candidate's estimate has standard deviation about
    c_ε/(2√N_j) with N_j agents in its batch and c_ε = coth(ε/2); a wrong parity has
    error 1/2 under the uniform T, so a few hundred agents per candidate separate it
    from the true one (error 0) at ε = 1 (KS: O(ε⁻²α⁻²) local agents).

    *Degenerate input.* ``curator_mask=None`` (all rows at the curator) runs the curator
    step only and returns the most frequent candidate; an explicit mask with no local
    rows is an error when ``epsilon`` is finite.

    References
    ----------
    Y. Kohen and O. Sheffet. Transfer learning in differential privacy's hybrid-model.
    ICML 2022, Appendix B. S. Kasiviswanathan, H. Lee, K. Nissim, S. Raskhodnikova and
    A. Smith. What can we learn privately? FOCS 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.transfer import ParityTransfer
    >>> rng = np.random.default_rng(0)
    >>> r = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    >>> Xs = (rng.random((4000, 8)) < 0.3).astype(int)    # source: biased bits
    >>> Xt = rng.integers(0, 2, size=(3000, 8))           # target: uniform bits
    >>> X = np.vstack([Xs, Xt])
    >>> y = (X @ r) % 2
    >>> mask = np.r_[np.ones(4000, bool), np.zeros(3000, bool)]
    >>> clf = ParityTransfer(epsilon=1.0, classes=[0, 1], random_state=0)
    >>> clf = clf.fit(X, y, curator_mask=mask)
    >>> clf.parity_.tolist() == r.tolist()
    True
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "local_epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf}),
                          None],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "n_chunks": [Interval(Integral, 1, None, closed="left"), None],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "rate": [StrOptions({"tanh", "klnrs"})],
        "floor": [Interval(Real, 0, 1, closed="both")],
        "accountant": [PrivacyAccountant, None],
        "classes": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, epsilon=1.0, *, local_epsilon=None, delta=0.0, n_chunks=None, alpha=0.1,
                 beta=0.05, rate="tanh", floor=0.5, classes=None, accountant=None, random_state=None,
                 verbose=0):
        self.epsilon = epsilon
        self.local_epsilon = local_epsilon
        self.delta = delta
        self.n_chunks = n_chunks
        self.alpha = alpha
        self.beta = beta
        self.rate = rate
        self.floor = floor
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def _events(self, has_local):
        name = type(self).__name__
        if self.nonprivate:
            central = nonprivate_event(source=name)
        else:
            # The proven level ln((1+p)/(1−p)) ∨ ln(1 + p(1−q)/q): exactly ε with tanh and a
            # floor of at least (1-p)/(3-p); a lower floor would spend more than epsilon, so
            # it is refused here, before the charge.
            p = _inclusion_rate(self.epsilon, self.rate)
            level = parity_privacy_epsilon(p, self.floor) if self.floor > 0 else math.inf
            if level > self.epsilon * (1 + 1e-12):
                raise ValueError(
                    f"floor={self.floor} is too low for epsilon={self.epsilon}: the parity "
                    f"learner would then be only {level:.4g}-DP. Use floor >= "
                    f"{(1 - p) / (3 - p):.4g} (the smallest floor that keeps it epsilon-DP)."
                )
            central = parity_event(level, rate=self.rate,
                                   floor=self.floor, n_chunks=self._k,
                                   composition="parallel", p=p)
        if not has_local:
            return [central], None
        eps_l = self.epsilon if self.local_epsilon is None else self.local_epsilon
        if math.isinf(eps_l):
            return [central, nonprivate_event("local", source=name)], None
        rr = RandomizedResponse(eps_l)
        return [central, rr.event(count=1, population="local")], rr

    def fit(self, X, y, *, curator_mask=None):
        """Run the curator's boosted parity learner, then one local test.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 features.
        y : array-like of shape (n_samples,)
            Two classes; ``classes_[1]`` is parity 1.
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True for the curator's source rows, False for the target's local agents.

        Returns
        -------
        self : ParityTransfer
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params()
        # Validate the 0/1 domain before any cast: an int cast would turn 0.5 into 0.
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X, y = validate_data(self, X, y, dtype=None)
        X = check_binary_features(X).astype(np.int64)
        self.classes_, bits = binary_labels(y, type(self).__name__, self.classes)
        n, d = X.shape
        if curator_mask is None:
            curator = np.ones(n, dtype=bool)
        else:
            curator = check_mask(curator_mask, n, "curator_mask", index=x_index)
            check_group_nonempty(curator, "curator_mask", "curator rows (source sample)")
            if curator.all() and not self.nonprivate:
                raise ValueError(
                    "curator_mask leaves no local rows (target agents): ParityTransfer tests "
                    "its candidates on local agents; mark some rows False, or pass "
                    "curator_mask=None for a curator-only fit."
                )
        self._k = self.n_chunks or math.ceil(math.log(2 / self.beta) / math.log(4 / 3))
        has_local = not curator.all()
        events, rr = self._events(has_local)
        self._charge(events)  # before any private row is read
        rng = self._make_rng()

        if self.nonprivate:
            outs = boosted_private_parity(X[curator], bits[curator], np.inf, rng, self._k,
                                          rate="tanh", floor=0.0)
        else:
            outs = boosted_private_parity(X[curator], bits[curator], self.epsilon, rng, self._k,
                                          rate=self.rate, floor=self.floor)
        found = [r for r in outs if r is not None]
        if found:
            cands, counts = np.unique(np.vstack(found), axis=0, return_counts=True)
        else:
            cands, counts = np.zeros((0, d), dtype=np.uint8), np.zeros(0, dtype=int)
        self.candidates_ = cands
        self.parity_ = np.zeros(d, dtype=np.uint8)
        self.target_error_estimates_ = np.full(len(cands), np.nan)
        self.validated_ = False
        self._say(f"{len(outs)} curator chunks gave {len(cands)} distinct candidate parities")
        if len(cands) == 0:
            warn_degenerate(type(self).__name__,
                            "the curator's learner found no parity, so it predicts "
                            f"{label_repr(self.classes_[0])} everywhere",
                            "The source labels may not be a parity of the features, or there "
                            "are too few curator rows for this epsilon.")
            return self
        if not has_local:
            self.parity_ = cands[int(np.argmax(counts))].copy()
            return self

        Xl, bl = X[~curator], bits[~curator]
        # Data-independent split of the agents, one batch per candidate (not privacy noise).
        batches = np.array_split(_noise.permutation(rng, Xl.shape[0], tag="agent-batches"),
                                  len(cands))
        est = np.full(len(cands), np.nan)
        for j, idx in enumerate(batches):
            if idx.size == 0:
                continue
            loss = (predict_parity(cands[j], Xl[idx]) != bl[idx]).astype(np.int8)  # by agents
            est[j] = loss.mean() if rr is None else rr.debias(rr(loss, rng))
        self.target_error_estimates_ = est
        best = int(np.nanargmin(est))
        self.parity_ = cands[best].copy()
        self.validated_ = bool(est[best] <= self.alpha)
        self._say(f"local test: estimated target errors {np.round(est, 3).tolist()}; chose "
                  f"candidate {best} ({'validated' if self.validated_ else 'not validated'} "
                  f"at alpha={self.alpha})")
        if not self.validated_:
            warn_degenerate(type(self).__name__,
                            f"no candidate passed the local test (the best estimated target "
                            f"error is {est[best]:.3f} > alpha={self.alpha})",
                            "The target may not share the source's parity, or the test is too "
                            "noisy: more local agents or a larger local_epsilon sharpen it.")
        return self

    def _say(self, message):
        if self.verbose:
            print(f"[{type(self).__name__}] {message}")

    def decision_function(self, X):
        """Return 1 where the chosen parity is 1, −1 elsewhere.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 features.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            The signed parity.
        """
        check_is_fitted(self, "parity_")
        X = check_binary_features(validate_data(self, X, dtype=None, reset=False))
        return 2.0 * predict_parity(self.parity_, X) - 1.0

    def predict(self, X):
        """Predict ``classes_[⟨r, x⟩ mod 2]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            0/1 features.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        bits = (self.decision_function(X) > 0).astype(int)  # checks fitted first
        return self.classes_[bits]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # parities are binary
        tags.classifier_tags.poor_score = True  # sklearn's checks use real-valued, non-parity data
        return tags
