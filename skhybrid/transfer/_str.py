"""Subsample-Test-Reweigh: private transfer learning in the hybrid model (Kohen & Sheffet)."""

import copy
import math
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.metaestimators import available_if

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import check_group_nonempty, check_mask, resolve_classes
from ..accounting import PrivacyAccountant, PrivacyEvent
from ..learners import DPLogisticRegression
from ..mechanisms import GaussianRandomizedResponse, _noise
from ._exact_subsample import (
    check_kappa_representable,
    kappa_dense_tv_bound,
    sample_kappa_dense,
)
from ._kappa_dense import (
    multiplicative_weights_update,
    sample_from_log_weights,
)
from ..utils._sklearn_compat import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    check_is_fitted,
    validate_data,
    validate_params,
)
from ._privacy import str_curator_guarantee
from ._sample_complexity import (
    str_curator_size_algorithm4,
    str_curator_size_rdp,
    str_kappa,
    str_max_iterations,
    str_min_curator_size,
    str_min_local_batch_size,
    str_sgd_sigma2,
)
from ._sgd import NoisySGDClassifier, calibrated_noise_multiplier, sgd_step_epsilon
from ..utils._rows import predict_silently

__all__ = ["SubsampleTestReweigh"]

# A private round's learner should see at least this many rows per feature (plus one for
# the intercept); fewer and STR refuses before charging, naming the rows it would need.
_MIN_ROWS_PER_FEATURE = 10


def _is_dp_learner(estimator):
    params = estimator.get_params(deep=False)
    return all(name in params for name in ("epsilon", "delta", "accountant"))


class _ConstantHypothesis:
    """The hypothesis of a non-private base learner handed a one-class subsample."""

    def __init__(self, label, classes):
        self.label = label
        self.classes_ = classes

    def predict(self, X):
        return np.full(X.shape[0], self.label)

    def decision_function(self, X):
        sign = 1.0 if self.label == self.classes_[1] else -1.0
        return np.full(X.shape[0], sign)

    def predict_proba(self, X):
        p = float(self.label == self.classes_[1])
        return np.tile([1.0 - p, p], (X.shape[0], 1))


def _detach_random_state(h, base, params):
    """Give a fitted round learner back the template's ``random_state``.

    A round's learner is fitted with STR's own generator, the one that also draws the
    subsamples, the agent permutation and the local agents' Gaussian randomized response.
    A released hypothesis holding it (or a deep copy) would let anyone step the generator
    back (PCG64 can be rewound) and replay that noise, i.e. strip it from the released
    estimates. After the fit the parameter gets the value ``clone(base)`` would give, so
    no released object holds a generator that drew privacy noise.
    """
    if "random_state" in params:
        template = base.get_params(deep=False)["random_state"]
        h.set_params(random_state=clone(template, safe=False))
    return h


def _hypothesis_has(method):
    def check(self):
        if hasattr(self, "hypothesis_"):
            return hasattr(self.hypothesis_, method)
        base = DPLogisticRegression() if self.base_estimator is None else self.base_estimator
        return hasattr(base, method)

    return check


def _largest_certified_size(guarantee, epsilon, hi):
    """Largest subsample size m in [1, hi) whose ``guarantee(m)`` is feasible, given that
    m = 1 is and m = ``hi`` is not (feasibility is monotone in m).

    The bracket [feasible, infeasible] shrinks to adjacent integers, so the result is the
    bisection's; the next m is the root of the line through the bracket's margins
    total ε − ``epsilon`` (regula falsi; the margin is close to linear in m) whenever the
    last two steps halved the bracket and both margins are finite (the total is infinite
    where the rounds' δ exceed the target), else the midpoint. 4 to 12 guarantees where
    bisection takes 14 to 23 (each composes the rounds optimally, ~0.3 ms). With
    ``accounting="paper"`` feasibility is not the margin's sign alone: midpoints only.
    """
    def margin(g):
        return g.total_epsilon - epsilon if g.accounting == "tight" else math.nan

    lo, f_lo, f_hi = 1, margin(guarantee(1)), margin(guarantee(hi))
    widths = [math.inf, math.inf]
    while hi - lo > 1:
        # (the geometric midpoint while the bracket spans more than a factor 4: m₁ is
        # often far below the number of curator rows)
        mid = min(max(math.isqrt(lo * hi) if hi > 4 * lo else (lo + hi) // 2, lo + 1), hi - 1)
        if hi - lo <= widths[-2] / 2 and math.isfinite(f_lo) and math.isfinite(f_hi) \
                and f_lo <= 0 < f_hi:
            x = lo + (hi - lo) * f_lo / (f_lo - f_hi)
            mid = min(max(int(x), lo + 1), hi - 1)
        widths.append(hi - lo)
        g = guarantee(mid)
        if g.feasible:
            lo, f_lo = mid, margin(g)
        else:
            hi, f_hi = mid, margin(g)
    return lo


class SubsampleTestReweigh(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Subsample-Test-Reweigh (STR): transfer a curator-model learner to a target population.

    The curator holds a labelled sample from a source distribution S (rows with
    ``curator_mask=True``); the other rows are labelled local agents from the target T.
    Each round, STR fits ``base_estimator`` on ``subsample_size`` draws from a
    multiplicative-weights distribution μᵗ over the curator rows, tests the hypothesis's
    target error on local agents, and stops when it is small; otherwise it down-weights
    the curator points the hypothesis gets right (rate α/8) and repeats (Kohen & Sheffet,
    Algorithms 1 and 2).

    Parameters
    ----------
    base_estimator : estimator or None, default=None
        The curator's learner. ``None`` uses
        :class:`~skhybrid.learners.DPLogisticRegression`. With finite ``epsilon`` it must
        be a DP learner exposing ``epsilon``, ``delta`` and ``accountant`` parameters (it is
        cloned each round with the per-round (ε_M, δ_M) of the accounting and
        ``accountant=None``: STR's own event covers it). With ``epsilon=np.inf`` any
        scikit-learn classifier is accepted (a DP learner is run with ``epsilon=np.inf``).
    epsilon : float, default=1.0
        Privacy of the whole fit, for both populations: (ε, δ)-DP for each curator row
        (over ``max_iter`` rounds) and (ε, δ)-local-DP for each local agent. ``np.inf``
        runs the non-private Algorithm 1 (the baseline).
    delta : float, default=1e-6
        The δ of both guarantees; must be > 0 when ``epsilon`` is finite.
    alpha : float in (0, 1), default=0.1
        Target error α; MW rate α/8; stopping threshold 3α + α_H (Algorithm 2) or
        2α + τ + α_H (Algorithm 1).
    beta : float in (0, 1), default=0.05
        Failure probability; enters the default ``max_iter``-free quantities (``tau``).
    chi2_bound : float >= 0, default=1.0
        Public upper bound on χ²(T‖S) = E_S[(dT/dS)²] − 1, from knowledge of the
        shift, not from the data (user guide, :ref:`ug_transfer`; for Gaussian shifts
        :func:`chi2_plus_one_gaussian_scale` gives χ² + 1). Sets the default ``kappa``
        and ``max_iter``; an understated bound voids the error guarantee, not privacy.
    max_iter : int or None, default=None
        Cap T on the number of rounds. The privacy analysis always charges all T rounds,
        never the data-dependent stopping time. ``None``: with a finite ``epsilon``, as
        many rounds as the local rows can test meaningfully -- ``n_local // N0`` with N0
        from ``local_batch_size`` -- capped at the paper's T = 128·log₂(8(χ²+1)/α)/α²
        (Algorithm 2); with ``epsilon=np.inf``, 32·log₂(8(χ²+1)/α)/α² (Algorithm 1).
    subsample_size : int or None, default=None
        The draws m₁ from μᵗ per round. ``None``: the number of curator rows when
        ``epsilon=np.inf``; otherwise the largest m₁ the accounting certifies for the
        curator rows at hand (n is public). When that is under 10·(n_features + 1) rows,
        too few for a round's learner to learn anything, the fit refuses before charging
        and names the number of curator rows it would need.
    local_batch_size : int or None, default=None
        N₀, fresh local agents per round (finite ``epsilon`` only). ``None``:
        ⌊n_local / max_iter⌋ when ``max_iter`` is given, else the smallest batch whose
        test has standard error at most α/2 (:func:`str_min_local_batch_size`); with fewer
        local rows than that the fit refuses before charging. ``max_iter *
        local_batch_size`` must not exceed the number of local rows: each agent answers at
        most one query. A batch below :func:`str_min_local_batch_size` warns: its test is
        too noisy for ``converged_`` to mean much.
    kappa : float in (0, 1] or None, default=None
        Density of the projected weights (finite ``epsilon``). ``None``: α/(8(χ²+1))
        (Algorithm 2).
    base_epsilon : float, default=1.0
        The privacy parameter ε_M each round's learner is cloned with (KS use 1: "privacy
        for free" for most sample complexities). Amplification by κ-dense sampling turns
        it into the per-round curator guarantee.
    accounting : {"tight", "paper"}, default="tight"
        ``"tight"``: coupled-sampling amplification (valid for every ε_M) and the tightest
        valid composition (basic / DRV / KOV closed form / KOV optimal); ``"paper"``: KS
        Claim 4.1 and Thm 4.2's advanced-composition arithmetic (needs ``base_epsilon <= 1``).
        See :func:`~skhybrid.transfer._privacy.str_curator_guarantee`. With a
        :class:`~skhybrid.transfer.NoisySGDClassifier` base (Algorithm 4): ``"tight"`` is
        the RDP accounting of :func:`~skhybrid.accounting._rdp.subsampled_gaussian_rdp`
        over all R·T steps; ``"paper"`` is KS App. A's tCDP arithmetic (σ² of Algorithm 4,
        n ≥ √(x ln x), x = 52RT/(8κ²ε)), which rests on KS Thm A.3 applied outside the
        hypotheses of Bun et al.'s subsampling theorem (:ref:`notes_transfer`) — kept only to
        reproduce the paper.
    agnostic : bool, default=False
        Return the tested hypothesis with the smallest estimated target error (KS §3,
        agnostic case) instead of the one that stopped the loop (or the last one).
    approximation_error : float >= 0, default=0.0
        The best achievable error α_H in the class; added to the stopping threshold.
    tau : float >= 0 or None, default=None
        SQ tolerance τ of Algorithm 1 (``epsilon=np.inf``). ``None``: the Hoeffding bound
        √(ln(2T/β)/(2·n_local)) for the exact empirical error on the local rows.
    reweighting : {"subsample", "sample_weight"}, default="subsample"
        ``epsilon=np.inf`` only: ``"sample_weight"`` fits the base learner once per round
        on all curator rows with ``sample_weight = n·μᵗ`` instead of m₁ draws from μᵗ
        (cheaper, deterministic; does nothing for hard-margin learners, and changes a
        soft-margin learner's effective regularisation less than subsampling does).
    warm_start : bool, default=False
        ``epsilon=np.inf`` only: keep one base-learner instance across rounds and fit it
        with ``warm_start=True`` (the base estimator must have a ``warm_start`` parameter,
        e.g. :class:`~skhybrid.transfer.HardMarginLinearSVC`), so each round starts from
        the previous hypothesis. For an exact solver (a unique optimum) this changes only
        the running time, not the hypotheses; for an iterative solver stopped at a
        tolerance it can change them within that tolerance.
    classes : array-like of shape (2,) or None, default=None
        The label set (a public domain). ``None`` reads it from ``y`` -- curator rows and
        agents' labels alike, all private -- with a :class:`~skhybrid.PrivacyLeakWarning`.
        A label outside a declared set is refused before anything is charged.
    accountant : PrivacyAccountant or None, default=None
        Charged before any private row is read.
    random_state : int, RandomState, Generator or None, default=None
        Source of the privacy noise. Leave ``None`` (fresh OS entropy) for a release: a
        seed or a generator is kept by the fitted estimator (``get_params``, pickle),
        which lets whoever holds it replay the noise, and a seed reused across fits
        reuses the noise (a :class:`~skhybrid.SeedReuseWarning` under a finite budget).
        Seeds and generators are for tests and reproductions.
    verbose : int, default=0
        Print progress: about ten lines at 1 (the round, its DP error estimate, the
        elapsed time and the time left at most), every round at 2 or more.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    hypothesis_ : estimator
        The chosen hypothesis (a fitted clone of ``base_estimator``). Its ``random_state``
        is the template's: the generator it was fitted with is STR's, which also draws
        the agents' randomized response, and is not released.
    n_iter_ : int
        Rounds run (= hypotheses tested).
    n_hypotheses_ : int
        Number of hypotheses tested on local agents (0 in the degenerate case).
    target_error_estimates_ : ndarray of shape (n_iter,)
        The target-error estimates aᵗ (a DP output of the local agents' reports).
    converged_ : bool
        Whether the stopping rule fired before the cap.
    privacy_params_ : dict
        The data-independent plan: κ, m₁, N₀, T, the learner's (ε_M, δ_M), the per-round
        and composed curator guarantees, the RR noise σ and the threshold.
    privacy_spent_ : dict
        ``{"central": (ε, δ), "local": (ε, δ)}``.
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has feature names.

    Notes
    -----
    *Privacy, curator.* Round t's weights depend on the curator rows only through the
    losses of h¹…h^{t−1}, so neighbouring datasets give weight vectors that differ in one
    coordinate; after Π_κ the example distributions are within η = 1/(κn) in total
    variation (:ref:`notes_kappa_dense`). The draws realise this exactly: integer κ-dense
    weights summing to ⌈Kκn⌉, each row at most K, and uniform integers
    (:mod:`skhybrid.transfer._exact_subsample`, :ref:`guarantee`). Running an
    (ε_M, δ_M)-DP learner on m₁ draws is then (ε̂, δ̂)-DP per round, and T = ``max_iter``
    rounds compose adaptively; the tests, the MW update and the stopping rule are
    post-processing. The whole composed guarantee is charged as a single ``"approx"``
    event, with the per-round values in its ``params``: the accountant could not
    re-derive the amplification from per-round events, and one event makes
    ``privacy_spent_`` exactly the certified value.

    *The learner's δ.* KS Algorithm 2 passes δ/(ε√(2T)) to the learner while the proof of
    Thm 4.2 uses κδ/(8eT). We instead derive δ_M from the accounting: ``"paper"`` takes
    δ_M = κnδ/(8T·m₁·e^{ε*}) (so Claim 4.1's δ* is exactly the δ/(2T) the proof needs);
    ``"tight"`` takes the largest δ_M with T·δ̂ = δ/2.

    *Privacy, local agents.* Agents are assigned to rounds by a data-independent random
    permutation; each answers one Gaussian randomized-response query
    RR_{ε,δ}(L(h(x), y)) ~ N(L, 2 ln(2/δ)/ε²) (KS §2), i.e. (ε, δ)-local DP once.

    *Algorithm 4 (private SGD).* With ``base_estimator=NoisySGDClassifier(...)`` and a
    finite ``epsilon``, each round runs ``n_steps`` = R noisy SGD steps, each on ONE draw
    from μᵗ (KS Algorithm 4) instead of a learner on m₁ draws. Each step is a
    subsampled-Gaussian release with TV η = 1/(κn) and sensitivity 2L; the curator is
    charged the RDP composition of all R·``max_iter`` steps, converted to (ε, δ), as one
    ``"approx"`` event. The noise multiplier σ/L is calibrated to exactly ``epsilon``
    unless the base learner fixes it (then too few curator rows raise an error stating
    the minimum n, :func:`~skhybrid.transfer._sample_complexity.str_curator_size_rdp`).
    ``subsample_size`` and ``base_epsilon`` are unused. As in Algorithm 2, the local test
    and the MW update use the 0/1 loss (KS Algorithm 4 uses the hinge loss scaled by
    L·D); this changes neither privacy analysis.

    *Degenerate input.* ``curator_mask=None`` (every row at the curator), or an explicit
    mask with no local rows when ``epsilon=np.inf``, runs the base learner once on the
    curator rows at (``epsilon``, ``delta``) with no target test.

    References
    ----------
    Y. Kohen and O. Sheffet. Transfer learning in differential privacy's hybrid-model.
    ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.svm import LinearSVC
    >>> from skhybrid.transfer import SubsampleTestReweigh
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 3))
    >>> curator = np.arange(600) < 400
    >>> X[~curator, 0] *= 0.1                  # the target is concentrated near x0 = 0
    >>> y = (X[:, 0] > 0.02).astype(int)
    >>> clf = SubsampleTestReweigh(LinearSVC(), epsilon=np.inf, alpha=0.1, max_iter=20,
    ...                            classes=[0, 1], random_state=0)
    >>> clf = clf.fit(X, y, curator_mask=curator)
    >>> clf.n_iter_ <= 20
    True
    """

    __metadata_request__fit = {"curator_mask": True}

    _parameter_constraints = {
        "base_estimator": [HasMethods(["fit", "predict"]), None],
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "beta": [Interval(Real, 0, 1, closed="neither")],
        "chi2_bound": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "subsample_size": [Interval(Integral, 1, None, closed="left"), None],
        "local_batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "kappa": [Interval(Real, 0, 1, closed="right"), None],
        "base_epsilon": [Interval(Real, 0, None, closed="neither")],
        "accounting": [StrOptions({"tight", "paper"})],
        "agnostic": ["boolean"],
        "approximation_error": [Interval(Real, 0, 1, closed="left")],
        "tau": [Interval(Real, 0, None, closed="left"), None],
        "reweighting": [StrOptions({"subsample", "sample_weight"})],
        "warm_start": ["boolean"],
        "accountant": [PrivacyAccountant, None],
        "classes": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        base_estimator=None,
        epsilon=1.0,
        delta=1e-6,
        *,
        alpha=0.1,
        beta=0.05,
        chi2_bound=1.0,
        max_iter=None,
        subsample_size=None,
        local_batch_size=None,
        kappa=None,
        base_epsilon=1.0,
        accounting="tight",
        agnostic=False,
        approximation_error=0.0,
        tau=None,
        reweighting="subsample",
        warm_start=False,
        classes=None,
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.base_estimator = base_estimator
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.beta = beta
        self.chi2_bound = chi2_bound
        self.max_iter = max_iter
        self.subsample_size = subsample_size
        self.local_batch_size = local_batch_size
        self.kappa = kappa
        self.base_epsilon = base_epsilon
        self.accounting = accounting
        self.agnostic = agnostic
        self.approximation_error = approximation_error
        self.tau = tau
        self.reweighting = reweighting
        self.warm_start = warm_start
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fit

    def fit(self, X, y, *, curator_mask=None):
        """Run Subsample-Test-Reweigh.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Curator rows and local agents' rows together.
        y : array-like of shape (n_samples,)
            Binary labels of every row (curator and local agents).
        curator_mask : array-like of bool of shape (n_samples,), default=None
            True for the curator's source sample, False for the target's local agents.
            ``None``: every row is at the curator (degenerate: one base-learner fit).

        Returns
        -------
        self : SubsampleTestReweigh
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params(delta_required=True)
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        self.classes_, codes = resolve_classes(y, self.classes, estimator=type(self).__name__,
                                              binary=True)
        # y by value, in classes_'s type: a private label's own type (a Decimal(1) among
        # ints made y an object array, which scikit-learn refuses) reaches nothing below.
        y = self.classes_[codes]
        n = X.shape[0]
        if curator_mask is None:
            curator = np.ones(n, dtype=bool)
        else:
            curator = check_mask(curator_mask, n, "curator_mask", index=x_index)
            check_group_nonempty(curator, "curator_mask", "curator rows (source sample)")
            if not self.nonprivate and curator.all():
                raise ValueError(
                    "curator_mask leaves no local rows (target agents): with a finite epsilon "
                    "STR tests every hypothesis on local agents; mark some rows False in "
                    "curator_mask, or pass curator_mask=None for a curator-only fit."
                )
        base = DPLogisticRegression() if self.base_estimator is None else self.base_estimator
        is_dp = _is_dp_learner(base)
        if not self.nonprivate and not is_dp:
            raise ValueError(
                f"base_estimator {type(base).__name__} is not a DP learner (it has no "
                "epsilon/delta/accountant parameters); with a finite epsilon use a skhybrid DP "
                "learner such as DPLogisticRegression, or set epsilon=np.inf."
            )
        if self.reweighting == "sample_weight" and not self.nonprivate:
            raise ValueError(
                "reweighting='sample_weight' exposes the private weights to the learner and is "
                "only available with epsilon=np.inf; use reweighting='subsample'."
            )

        if self.warm_start and not self.nonprivate:
            raise ValueError(
                "warm_start=True reuses the previous round's learner and is only available "
                "with epsilon=np.inf (the private rounds each run a fresh DP learner); set "
                "warm_start=False."
            )
        if self.warm_start and "warm_start" not in base.get_params(deep=False):
            raise ValueError(
                f"warm_start=True needs a base_estimator with a warm_start parameter; "
                f"{type(base).__name__} has none. Use e.g. HardMarginLinearSVC, or set "
                "warm_start=False."
            )
        if curator.all():
            return self._fit_degenerate(X, y, base, is_dp)
        if self.nonprivate:
            return self._fit_nonprivate(X, y, curator, base, is_dp)
        return self._fit_private(X, y, curator, base)

    def _learner_params(self, base, is_dp, rng, epsilon, delta):
        """Per-fit parameters of a base-learner clone (never its own accountant)."""
        params = {}
        names = base.get_params(deep=False)
        if is_dp:
            params.update(epsilon=epsilon, accountant=None, random_state=rng)
            if delta is not None:
                params["delta"] = delta
            if "classes" in names:
                params["classes"] = self.classes_  # the label set is public: keep it fixed
        elif "random_state" in names:
            # Non-private learners take an int seed (epsilon=np.inf: no privacy noise here).
            params["random_state"] = int(rng.integers(2**31 - 1))
        return params

    def _fit_base(self, base, params, X, y, sample_weight=None, warm=None):
        if not params.get("epsilon", np.inf) < np.inf and np.unique(y).size < 2:
            return _ConstantHypothesis(y[0], self.classes_)
        fit_params = {} if sample_weight is None else {"sample_weight": sample_weight}
        try:
            if warm is not None:
                # One instance refitted in place (warm_start=True); the round's hypothesis
                # is a frozen copy so later rounds do not overwrite it.
                h = copy.deepcopy(warm.set_params(**params).fit(X, y, **fit_params))
            else:
                h = clone(base).set_params(**params).fit(X, y, **fit_params)
        except ValueError as exc:
            if not np.isfinite(params.get("epsilon", np.inf)):
                raise
            # A refusal of the base estimator's own parameters says "Nothing was charged";
            # STR's fit was charged already.
            reason = str(exc).replace(" Nothing was charged.", "")
            raise ValueError(
                f"{type(self).__name__}'s base estimator refused a round's fit: {reason} "
                f"{type(self).__name__}'s charge for this fit stands.") from None
        return _detach_random_state(h, base, params)

    def _set_result(self, hypothesis, estimates, converged, plan):
        # The round learners were fitted without an accountant (STR's own events cover
        # them). The released one gets the user's back, so that refitting it (or a clone
        # of it) is charged: the base estimator's, else STR's.
        if hasattr(hypothesis, "get_params") and "accountant" in hypothesis.get_params(
                deep=False):
            base = self.base_estimator
            mine = None if base is None else base.get_params(deep=False).get("accountant")
            hypothesis.set_params(accountant=self.accountant if mine is None else mine)
        self.hypothesis_ = hypothesis
        self.target_error_estimates_ = np.asarray(estimates, dtype=float)
        self.n_hypotheses_ = len(estimates)
        self.n_iter_ = max(1, len(estimates))
        self.converged_ = converged
        self.privacy_params_ = plan
        return self

    def _fit_degenerate(self, X, y, base, is_dp):
        if self.nonprivate:
            events = [nonprivate_event(source=type(self).__name__)]
        else:
            events = [PrivacyEvent("str-base-learner", "approx", self.epsilon, self.delta,
                                   population="central", params={"degenerate": True})]
        self._charge(events)
        rng = self._make_rng()
        epsilon = self.epsilon if is_dp else np.inf
        params = self._learner_params(base, is_dp, rng, epsilon, None if self.nonprivate
                                      else self.delta)
        h = self._fit_base(base, params, X, y)
        return self._set_result(h, [], False, {"degenerate": True})

    # ------------------------------------------------------------------ Algorithm 1

    def _fit_nonprivate(self, X, y, curator, base, is_dp):
        Xc, yc = X[curator], y[curator]
        Xl, yl = X[~curator], y[~curator]
        n_c, n_l = Xc.shape[0], Xl.shape[0]
        T = self.max_iter or str_max_iterations(self.alpha, self.chi2_bound, constant=32.0)
        m1 = n_c if self.subsample_size is None else self.subsample_size
        tau = self.tau
        if tau is None:
            tau = math.sqrt(math.log(2.0 * T / self.beta) / (2.0 * n_l))
        threshold = 2.0 * self.alpha + tau + self.approximation_error
        plan = {"algorithm": 1, "max_iter": T, "subsample_size": m1, "tau": tau,
                "threshold": threshold, "reweighting": self.reweighting,
                "warm_start": self.warm_start,
                "test_std": math.sqrt(0.25 / n_l)}  # sampling error of the exact local error
        self._charge([nonprivate_event(source=type(self).__name__),
                      nonprivate_event("local", source=type(self).__name__)])
        rng = self._make_rng()

        log_w = np.zeros(n_c)  # Algorithm 1: w¹ = 1, μᵗ ∝ wᵗ
        warm = clone(base).set_params(warm_start=True) if self.warm_start else None
        # A learner whose fit depends only on the set of distinct rows it is given (the
        # hard-margin SVM: the same constraints, the same unique optimum) gets each drawn
        # row once, in index order: the same hypothesis from a smaller matrix, gathered
        # in a cache-friendly order (at App. C's size 37k rows instead of 48k, and the
        # gather 2x faster). The class itself must declare it: a subclass may change fit.
        distinct_rows = bool(vars(type(base)).get("_fit_depends_on_distinct_rows_only",
                                                  False))
        # A learner that keeps no view of its X (declared by the class itself) refitted in
        # place gets its rows gathered into one reused buffer: no fresh 150 MB per round to
        # page in (App. C: the gather 43 -> 27 ms).
        reuse = warm is not None and bool(vars(type(base)).get("_fit_keeps_no_view_of_X",
                                                                False))
        buffer = (np.empty((min(m1, n_c) if distinct_rows else m1, Xc.shape[1]))
                  if reuse else None)

        def round_(t, log_w):
            log_mu = log_w - np.logaddexp.reduce(log_w)
            params = self._learner_params(base, is_dp, rng, np.inf, None)
            if self.reweighting == "sample_weight":
                h = self._fit_base(base, params, Xc, yc, sample_weight=n_c * np.exp(log_mu),
                                   warm=warm)
            else:
                # Algorithm 1 is not a privacy mechanism (epsilon=np.inf): draws within
                # n·2^-52 of μ in total variation (float inverse CDF) are all it needs.
                idx = sample_from_log_weights(log_mu, m1, rng)
                if distinct_rows:
                    idx = np.unique(idx)
                # (mode="clip": with mode="raise" numpy buffers out= through a copy)
                X_round = (np.take(Xc, idx, axis=0, out=buffer[:idx.size], mode="clip")
                           if reuse else Xc[idx])
                h = self._fit_base(base, params, X_round, yc[idx], warm=warm)
            return h, float(np.mean(h.predict(Xl) != yl))  # SQ oracle: exact local error

        return self._run_rounds(round_, log_w, Xc, yc, T, threshold, plan)

    # ------------------------------------------------------------------ Algorithm 2

    def _rounds_kappa_batch(self, n_l, rr_sigma):
        """T (the cap), κ and N₀ of the private algorithms, from parameters and n_local.

        Each local agent answers at most one query, so T·N₀ must not exceed n_local.
        Everything here is public: parameters and the number of local rows.
        """
        kappa = self.kappa if self.kappa is not None else str_kappa(self.alpha, self.chi2_bound)
        n0_min = str_min_local_batch_size(self.alpha, rr_sigma)
        if self.max_iter is None:
            n0 = self.local_batch_size if self.local_batch_size is not None else n0_min
            if n_l < n0:
                raise ValueError(
                    f"{n_l} local rows are too few for one test of the target error: with "
                    f"alpha={self.alpha}, epsilon={self.epsilon}, delta={self.delta} a test "
                    f"needs {n0} local agents (standard error alpha/2 under randomized "
                    f"response with sigma={rr_sigma:.3g}). Provide at least {n0} local rows, "
                    "or raise alpha or epsilon. Nothing was charged."
                )
            T = min(str_max_iterations(self.alpha, self.chi2_bound), n_l // n0)
        else:
            T = self.max_iter
            n0 = self.local_batch_size if self.local_batch_size is not None else n_l // T
        if n0 < 1 or T * n0 > n_l:
            n0_shown = max(n0, 1)
            raise ValueError(
                f"max_iter * local_batch_size = {T} * {n0_shown} = {T * n0_shown} exceeds the "
                f"{n_l} local rows, and each local agent answers at most one query: the largest "
                f"feasible max_iter is {n_l // n0_shown}, or provide at least {T * n0_shown} "
                "local rows (or lower local_batch_size)."
            )
        if n0 < n0_min:
            warnings.warn(
                f"Each round tests its hypothesis on {n0} local agents, fewer than the "
                f"{n0_min} that give a standard error of alpha/2 at epsilon={self.epsilon}: "
                "a round can pass the test by noise, so converged_ means little. Lower "
                "max_iter (or leave it None), or provide more local rows.",
                UserWarning,
                stacklevel=4,
            )
        return T, kappa, n0

    def _plan_private(self, n_c, n_l, n_features):
        """Every privacy-relevant quantity, from parameters and the (public) group sizes."""
        eps, dlt = float(self.epsilon), float(self.delta)
        rr = GaussianRandomizedResponse(eps, dlt)
        T, kappa, n0 = self._rounds_kappa_batch(n_l, rr.sigma)
        check_kappa_representable(kappa, n_c)
        if self.accounting == "paper" and self.base_epsilon > 1:
            raise ValueError(
                f"accounting='paper' applies KS Claim 4.1 with the learner's epsilon <= 1; got "
                f"base_epsilon={self.base_epsilon}. Lower base_epsilon or use accounting='tight'."
            )

        def guarantee(m):
            return str_curator_guarantee(eps, dlt, n_c, kappa, m, T,
                                         learner_epsilon=self.base_epsilon,
                                         accounting=self.accounting)

        # With max_iter=None the rounds are as many local batches as fit, and a larger ε
        # shrinks the batches: more rounds, more curator rows. Only an explicit max_iter
        # makes "raise epsilon" advice.
        # At one round there is nothing to lower: no "lower max_iter" advice then.
        rounds = f"max_iter={T} round" + ("s" if T != 1 else "")
        if self.max_iter is not None:
            rounds_hint = rounds
        elif T > 1:
            rounds_hint = (f"{rounds} (derived: as many batches of {n0} local agents as fit; "
                           "a larger epsilon fits more rounds, so pass a smaller max_iter "
                           "instead)")
        else:
            rounds_hint = f"{rounds} (derived: one batch of {n0} local agents)"
        raise_eps = ", or raise epsilon" if self.max_iter is not None else ""
        lower = "max_iter, " if T > 1 else ""

        def too_small(m):
            n_min = str_min_curator_size(eps, dlt, T, kappa, m, learner_epsilon=self.base_epsilon,
                                         accounting=self.accounting)
            return ValueError(
                f"{n_c} curator rows are too few for epsilon={eps}, delta={dlt} over "
                f"{rounds_hint} with accounting={self.accounting!r}: with "
                f"subsample_size={m}, base_epsilon={self.base_epsilon} and kappa={kappa:.4g} "
                f"the minimum is n = {n_min} curator rows. Add curator rows, or lower "
                f"{lower}subsample_size or base_epsilon{raise_eps}."
            )

        if self.subsample_size is not None:
            m1 = self.subsample_size
            g = guarantee(m1)
            if not g.feasible:
                raise too_small(m1)
        else:
            if not guarantee(1).feasible:
                raise too_small(1)
            m1 = n_c if guarantee(n_c).feasible else _largest_certified_size(guarantee, eps, n_c)
            g = guarantee(m1)
            m_learn = _MIN_ROWS_PER_FEATURE * (n_features + 1)
            if m1 < m_learn:
                n_min = str_min_curator_size(eps, dlt, T, kappa, m_learn,
                                             learner_epsilon=self.base_epsilon,
                                             accounting=self.accounting)
                raise ValueError(
                    f"With {n_c} curator rows the accounting certifies subsample_size={m1} "
                    f"for epsilon={eps}, delta={dlt} over {rounds_hint}: too few for a "
                    f"round's learner on {n_features} features (STR needs "
                    f"{m_learn} = {_MIN_ROWS_PER_FEATURE}*(n_features+1)). That takes "
                    f"n = {n_min} curator rows; "
                    + (f"or lower max_iter{raise_eps}, " if T > 1 else
                       f"{raise_eps[2:]}, " if raise_eps else "")
                    + "or pass subsample_size explicitly to override. Nothing was charged."
                )
        plan = {
            "algorithm": 2, "accounting": self.accounting, "max_iter": T, "kappa": kappa,
            "subsample_size": m1, "local_batch_size": n0, "eta": g.eta,
            "learner_epsilon": g.learner_epsilon, "learner_delta": g.learner_delta,
            "round_epsilon": g.round_epsilon, "round_delta": g.round_delta,
            "total_epsilon": g.total_epsilon, "total_delta": g.total_delta,
            "rr_sigma": rr.sigma, "threshold": 3.0 * self.alpha + self.approximation_error,
            "test_std": math.sqrt((0.25 + rr.sigma**2) / n0),
        }
        return plan, rr

    def _plan_private_sgd(self, base, n_c, n_l):
        """Algorithm 4's plan: R·T subsampled-Gaussian steps at TV η = 1/(κn)."""
        eps, dlt = float(self.epsilon), float(self.delta)
        rr = GaussianRandomizedResponse(eps, dlt)
        T, kappa, n0 = self._rounds_kappa_batch(n_l, rr.sigma)
        check_kappa_representable(kappa, n_c)
        R = int(base.n_steps)
        eta = kappa_dense_tv_bound(kappa, n_c)
        L = float(base.lipschitz)
        if self.accounting == "paper":
            n_min = str_curator_size_algorithm4(R, T, eps, kappa)
            if n_c < n_min or kappa * n_c <= 1:
                raise ValueError(
                    f"{n_c} curator rows are too few for KS Algorithm 4's tCDP accounting "
                    f"(accounting='paper') at epsilon={eps}, max_iter={T}, n_steps={R}, "
                    f"kappa={kappa:.4g}: the minimum is n = {n_min}. Add curator rows, lower "
                    "max_iter or n_steps, or use accounting='tight'."
                )
            z = math.sqrt(str_sgd_sigma2(eps, dlt, L, kappa, n_c)) / L
            total_eps, order = eps, None  # the paper's claim (KS App. A), not re-derived
        else:
            if base.noise_multiplier is None:
                z, total_eps, order = calibrated_noise_multiplier(eps, dlt, eta, R * T)
            else:
                z = float(base.noise_multiplier)
                total_eps, order = sgd_step_epsilon(z, eta, R * T, dlt)
            if total_eps > eps * (1 + 1e-9):
                n_min = str_curator_size_rdp(eps, dlt, R, T, kappa, noise_multiplier=z)
                raise ValueError(
                    f"{n_c} curator rows are too few for epsilon={eps}, delta={dlt} with "
                    f"noise_multiplier={z:.4g} over max_iter={T} rounds of n_steps={R} SGD "
                    f"steps (kappa={kappa:.4g}): the minimum is n = {n_min.n_curator}. Add "
                    "curator rows, lower max_iter or n_steps, raise noise_multiplier, or "
                    "leave noise_multiplier=None to calibrate it."
                )
        plan = {
            "algorithm": 4, "accounting": self.accounting, "max_iter": T, "kappa": kappa,
            "sgd_steps": R, "local_batch_size": n0, "eta": eta, "noise_multiplier": z,
            "sgd_sigma": z * L, "rdp_order": order, "total_epsilon": total_eps,
            "total_delta": dlt, "rr_sigma": rr.sigma,
            "threshold": 3.0 * self.alpha + self.approximation_error,
            "test_std": math.sqrt((0.25 + rr.sigma**2) / n0),
        }
        return plan, rr

    def _fit_private(self, X, y, curator, base):
        n_c = int(curator.sum())
        n_l = X.shape[0] - n_c
        sgd = isinstance(base, NoisySGDClassifier)
        if sgd:
            plan, rr = self._plan_private_sgd(base, n_c, n_l)
            keys = ("accounting", "max_iter", "kappa", "sgd_steps", "eta", "noise_multiplier",
                    "rdp_order")
        else:
            plan, rr = self._plan_private(n_c, n_l, X.shape[1])
            keys = ("accounting", "max_iter", "kappa", "subsample_size", "learner_epsilon",
                    "learner_delta", "round_epsilon", "round_delta")
            if hasattr(base, "_private_plan"):  # the round learner's refusals, before the charge
                learner = clone(base).set_params(**{
                    k: v for k, v in self._learner_params(
                        base, True, None, plan["learner_epsilon"],
                        plan["learner_delta"]).items() if k != "random_state"})
                try:
                    learner._private_plan(plan["subsample_size"], 0, X.shape[1],
                                          len(self.classes_))
                except ValueError as exc:
                    raise ValueError(
                        f"{type(self).__name__}'s base estimator would refuse every round's "
                        f"fit (on subsample_size={plan['subsample_size']} rows at the "
                        f"learner's epsilon={plan['learner_epsilon']:.4g}, set by "
                        f"base_epsilon): {exc}") from None
        params_event = {k: plan[k] for k in keys}
        central = PrivacyEvent("subsample-test-reweigh", "approx", plan["total_epsilon"],
                               plan["total_delta"], population="central", params=params_event)
        local = rr.event(count=1, population="local")
        self._charge([central, local])  # before any private row is read
        rng = self._make_rng()

        T, kappa, n0 = (plan[k] for k in ("max_iter", "kappa", "local_batch_size"))
        threshold = plan["threshold"]
        Xc, yc = X[curator], y[curator]
        Xl, yl = X[~curator], y[~curator]
        order = _noise.permutation(rng, n_l, tag="agent-rounds")  # data-independent
        log_w = np.full(n_c, math.log(kappa))  # Algorithm 2: w¹ = κ
        def round_(t, log_w):
            # Exact draws from the κ-dense law: integer weights (Π_κ of log_w on an integer
            # chain, _exact_subsample) and uniform integers.
            if sgd:  # Algorithm 4: R single draws from μᵗ, one per noisy SGD step
                idx = sample_kappa_dense(log_w, kappa, plan["sgd_steps"], rng)
                h = clone(base).set_params(accountant=None)
                h.classes_, h.n_features_in_ = self.classes_, Xc.shape[1]
                h._fit_indices(Xc, yc, idx, plan["sgd_sigma"], rng)
            else:
                idx = sample_kappa_dense(log_w, kappa, plan["subsample_size"], rng)
                params = self._learner_params(base, True, rng, plan["learner_epsilon"],
                                              plan["learner_delta"])
                h = self._fit_base(base, params, Xc[idx], yc[idx])
            batch = order[t * n0:(t + 1) * n0]
            # computed by agents (silently: a warning would tell one agent's row apart)
            losses = (predict_silently(h, Xl[batch]) != yl[batch]).astype(np.int8)
            return h, float(np.mean(rr(losses, rng)))

        return self._run_rounds(round_, log_w, Xc, yc, T, threshold, plan)

    def _run_rounds(self, round_, log_w, Xc, yc, T, threshold, plan):
        """The loop Algorithms 1, 2 and 4 share: test each round's hypothesis, stop at the
        threshold, else down-weight the curator rows it gets right (α/8 MW update)."""
        estimates, best, h, converged = [], (np.inf, None), None, False
        start = time.perf_counter()
        # fit() validated X (finite float64): the learners need not re-check every row of
        # it each round (at App. C's size, 0.5 GB of finiteness checks per round).
        with config_context(assume_finite=True):
            for t in range(T):
                h, a = round_(t, log_w)
                estimates.append(a)
                if a < best[0]:
                    best = (a, h)
                if a <= threshold:
                    converged = True
                self._report(t, T, a, threshold, start, converged)
                if converged:
                    break
                log_w = multiplicative_weights_update(log_w, predict_silently(h, Xc) == yc,
                                                      self.alpha)
        chosen, estimate = (best[1], best[0]) if self.agnostic else (h, estimates[-1])
        self._warn_if_no_better_than_constant(estimate, plan.get("test_std", 0.0))
        return self._set_result(chosen, estimates, converged, plan)

    def _warn_if_no_better_than_constant(self, estimate, test_std):
        """Warn when the chosen hypothesis's (DP) error estimate does not beat a coin.

        The best constant classifier errs at most 1/2 on any population; a hypothesis whose
        estimated target error is not two standard errors below 1/2 may be worse. The
        estimates are released outputs (``target_error_estimates_``), so this reads nothing
        private. With ``epsilon=np.inf`` they are the exact local errors.
        """
        if estimate + 2.0 * test_std >= 0.5:
            warnings.warn(
                f"The chosen hypothesis's estimated target error is {estimate:.3f} "
                f"(standard error {test_std:.3f}): no better than predicting a constant. "
                "STR did not find a useful target classifier; more local rows (a sharper "
                "test), more curator rows or a larger epsilon may help.",
                UserWarning,
                stacklevel=4,
            )

    def _report(self, t, T, a, threshold, start, converged):
        """Per-round progress, scikit-learn style: every round at verbose >= 2, about ten
        lines per fit at verbose=1. The estimate printed is a DP output of the round."""
        if not self.verbose:
            return
        every = 1 if self.verbose >= 2 else max(1, T // 10)
        if converged or t == 0 or (t + 1) % every == 0 or t + 1 == T:
            elapsed = time.perf_counter() - start
            left = elapsed / (t + 1) * (T - t - 1)
            status = "passed: stop" if converged else f"at most {left:.0f} s left"
            print(f"[SubsampleTestReweigh] round {t + 1}/{T}: target error estimate {a:.4f} "
                  f"(threshold {threshold:.4f}), {elapsed:.1f} s, {status}")

    # ------------------------------------------------------------------ prediction

    def _check_X(self, X):
        check_is_fitted(self, "hypothesis_")
        return validate_data(self, X, dtype=np.float64, reset=False)

    def predict(self, X):
        """Predict with the chosen hypothesis.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        X = self._check_X(X)
        return self.hypothesis_.predict(X)

    @available_if(_hypothesis_has("decision_function"))
    def decision_function(self, X):
        """The chosen hypothesis's decision function."""
        X = self._check_X(X)
        return self.hypothesis_.decision_function(X)

    @available_if(_hypothesis_has("predict_proba"))
    def predict_proba(self, X):
        """The chosen hypothesis's class probabilities."""
        X = self._check_X(X)
        return self.hypothesis_.predict_proba(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # Algorithms 1-2 use a 0/1 loss on two labels
        # Default (mask=None) runs DPLogisticRegression at epsilon=1 on ~100 rows: the noise
        # is of the order of the signal, so sklearn's accuracy thresholds are out of reach.
        tags.classifier_tags.poor_score = True
        return tags
