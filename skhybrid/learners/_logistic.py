"""DPLogisticRegression: objective perturbation with free public rows."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import expit, log_expit, softmax
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._threads import single_blas_thread_if_small
from .._validation import EPSILON_RANGE, check_mask, labels_as_given, resolve_classes
from ..accounting import PrivacyAccountant, calibrate_pure_epsilon
from ..utils._rows import clip_scale, row_norms
from ..utils._sklearn_compat import (
    Interval,
    LinearClassifierMixin,
    Options,
    StrOptions,
    validate_data,
    validate_params,
)
from ._objective_perturbation import ObjectivePerturbation

__all__ = ["DPLogisticRegression"]

# Largest gradient norm a non-private fit accepts silently (rows are normalised to ‖x‖ ≤ 1).
_STATIONARITY_WARN = 1e-7

# Share of each problem's ε spent on the output noise of approximate minima perturbation
# (the rest goes to objective perturbation): the output noise's scale is
# 2p·tol/((Λ+Δ)·share·ε), negligible at the default tol, while the objective's noise grows
# by 1/(1 − share).
_OUTPUT_SHARE = 0.05


# Smallest tol of a private fit: float64 exhaustion (the only way the exhaustive solver
# misses tol, and then the fit fails after the charge) needs a tol near the gradient's
# rounding error, ~1e-16 times its largest term; a failure there depends on the private rows.
_MIN_PRIVATE_TOL = 1e-13

_FLOAT64_EPS = float(np.finfo(float).eps)


# z of the paired sign test that must favour the DP model on the public rows
# before it is released instead of the public-only model (see _public_model_wins).
_SELECTION_Z = 1.0
# ... and by at least this many more rows than the public model gets right: with a
# handful of public rows two lucky rows must not decide.
_SELECTION_MIN = 2


def _public_minimiser(X_hat, y_pm, C, norm, tol):
    """The same objective (same C) on public rows only: public data, no noise."""
    n_pub = max(1, X_hat.shape[0])
    problem = ObjectivePerturbation(math.inf, 1.0 / (C * n_pub * norm**2), n_pub)
    u, _, _ = problem.solve(X_hat, y_pm, np.zeros(X_hat.shape[1]), tol=tol, max_iter=200)
    return u


def _public_logistic(X_hat, y, C, norm, fit_intercept):
    """scikit-learn's LogisticRegression (multinomial, same C) on public rows alone, or the
    one public label when the rows show only one.

    ``X_hat`` holds normalised rows (the last column is the intercept feature when
    ``fit_intercept``); the model is fitted on the clipped rows ``X_hat * norm`` and
    returned as ``(classes, W)`` with ``W`` in the coordinates of ``X_hat``, one row per
    class (binary: one row, for the second class)."""
    X = X_hat * norm
    if fit_intercept:
        const, X = X[:, -1:], X[:, :-1]
    labels = np.unique(y)
    if len(labels) < 2:  # nothing to separate: a constant model
        W = np.zeros((1, X_hat.shape[1]))
        return labels, W
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=C, fit_intercept=fit_intercept, max_iter=1000).fit(X, y)
    theta = model.coef_
    if fit_intercept:  # the intercept feature has value const[0] in the clipped rows
        theta = np.hstack([theta, model.intercept_[:, None] / const[0, 0]])
    return model.classes_, theta * norm


def _normalised_rows(X, data_norm, norm, intercept_scaling):
    """Rows clipped to ℓ2 norm ``data_norm``, the constant ``intercept_scaling`` appended
    (unless None), all divided by ``norm``: one pass, one new array."""
    n, d = X.shape
    scale = clip_scale(row_norms(X), data_norm) / norm
    X_hat = np.empty((n, d + (intercept_scaling is not None)))
    np.multiply(X, scale[:, None], out=X_hat[:, :d])
    if intercept_scaling is not None:
        X_hat[:, d] = intercept_scaling / norm
    return X_hat


def _predict(labels, scores):
    """Labels from decision values: one column (binary), one per label, or none needed
    (a single label)."""
    if len(labels) == 1:
        return np.full(scores.shape[0], labels[0])
    if scores.shape[1] == 1:
        return labels[(scores[:, 0] > 0).astype(int)]
    return labels[np.argmax(scores, axis=1)]


#: Public rows whose median norm exceeds data_norm this many times draw a warning.
_CLIP_WARN_RATIO = 10.0


def _noise_push(mechanism, dim):
    """How far the noise alone may move the solution (from the public model, or from 0):
    along a direction the loss does not curve (separable or collinear features) only the
    regulariser holds it, ‖Δu‖ ≤ (‖b‖/n)/(Λ+Δ) (red team 23: at ε = 100, C = 1e6 the
    solution reached 1e8 against a public model of size 600). Parameters only."""
    return mechanism.noise_gradient_bound(dim) / (mechanism.lam + mechanism.extra_reg)


def _one_digit_up(x):
    """``x`` rounded up to one significant digit, as text (a bound to suggest)."""
    scale = 10.0 ** math.floor(math.log10(x))
    return f"{math.ceil(x / scale * (1 - 1e-12)) * scale:.1g}"


class DPLogisticRegression(PrivateEstimatorMixin, LinearClassifierMixin, BaseEstimator):
    """Differentially private logistic regression by objective perturbation.

    Minimises scikit-learn's L2-regularised logistic objective

        ½‖θ‖² + C Σᵢ log(1 + exp(−yᵢ θᵀx̃ᵢ)),   x̃ᵢ = [clip(xᵢ, data_norm), intercept_scaling],

    plus a random linear term (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2), which
    makes the minimiser ε-DP with respect to the private rows. Rows marked public in
    ``public_mask`` enter the objective at no privacy cost (proof in
    :class:`~skhybrid.learners._objective_perturbation.ObjectivePerturbation`).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε of the whole fit. ``np.inf`` solves the same objective without
        noise (the non-private baseline; equal to scikit-learn's ``LogisticRegression``
        with ``solver="liblinear"`` on rows inside the norm bound).
    delta : float, default=0.0
        Used only to compose the one-vs-rest problems of a multiclass fit more tightly
        (objective perturbation itself is pure ε-DP).
    C : float, default=1.0
        Inverse regularisation strength, as in scikit-learn. Objective perturbation needs
        strong convexity, so C must be finite; the intercept is regularised too.
    data_norm : float, default=1.0
        Public bound R on the ℓ2 norm of a row. Rows with a larger norm are scaled down
        to norm R (in both modes). Never computed from private rows. A ``UserWarning``
        says when the public rows' median norm is over ten times R (raw features: scale
        them first).
    fit_intercept : bool, default=True
        Fit an intercept, as a constant feature of value ``intercept_scaling`` (so the
        intercept is regularised, as in liblinear).
    intercept_scaling : float, default=1.0
        The value of the constant feature.
    public_weight : float, default=1.0
        Weight of each public row's loss. Objective perturbation's noise does not depend
        on the public rows, so up-weighting them (e.g. to n_private / n_public) lets them
        pull the model against the noise at no privacy cost; private rows always weigh 1.
        With ``public_rows="objective"`` and weight 1, a fit with public rows equals the
        all-private fit with the same noise, and only the charge differs.
    public_rows : {"auto", "objective"}, default="auto"
        How public rows pay. ``"objective"``: they only enter the perturbed objective
        (Chaudhuri, Monteleoni & Sarwate 2011 with public rows; see
        :class:`~skhybrid.learners._objective_perturbation.ObjectivePerturbation`).
        ``"auto"``: also (1) centre the regulariser at the same objective's minimiser on
        the public rows alone -- a public vector, so the privacy proof is unchanged -- and
        (2) when the public rows show every class, release scikit-learn's
        ``LogisticRegression`` (same ``C``) fitted on the public rows alone instead,
        unless the DP model predicts the public rows clearly better than that model does
        under cross-validation (a paired sign test at z = 1). Both are post-processing of
        the DP output and the public rows. Either way the charge is the same;
        ``public_model_selected_`` says which was released.
    classes : array-like or None, default=None
        The label set (a public domain). ``None``: the labels of the public rows when they
        show at least two, else the labels found in ``y`` with a
        :class:`~skhybrid.PrivacyLeakWarning` (``classes_``, the number of one-vs-rest
        problems and the charge would then depend on private labels). A label outside the
        set is refused before anything is charged, naming no value.
    tol : float, default=1e-10
        Gradient tolerance γ of the solver (damped Newton with the exact Hessian up to 500
        features, L-BFGS beyond), on the largest entry of the gradient. A private fit
        releases the solver's point only if it reaches ``tol``, plus Laplace noise sized by
        ``tol`` (approximate minima perturbation, Iyengar et al. 2019: objective
        perturbation's own guarantee covers the exact minimiser only); see
        :ref:`the user guide <ug_logistic_amp>`. The output noise's scale is
        ``2 p tol / ((Λ+Δ) 0.05 ε)`` for p coefficients, negligible at the default.
    max_iter : int, default=1000
        Iteration cap of a fit with no private row (``epsilon=np.inf`` or every row
        public), which warns (``ConvergenceWarning``) when it stops short. A private fit
        ignores it and runs its solver until ``tol``: whether a capped solver gets there
        depends on the private rows, so stopping at a cap would turn the failure into a
        release outside the guarantee. Damped Newton on this strongly convex objective
        reaches 1e-10 in a few dozen steps; the only way a private fit can still miss
        ``tol`` is float64 exhaustion (a ``tol`` near the rounding error of the gradient,
        about 1e-16 times its largest term), and then it raises ``RuntimeError`` and
        releases only that it failed (the charge stays). Whether that happens depends on
        the private rows, so a private fit refuses ``tol`` below 1e-13, before the charge.
    accountant : PrivacyAccountant or None, default=None
        Charged before the fit reads any private row.
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
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    public_model_selected_ : bool
        True when ``public_rows="auto"`` released the public-only model (a function of the
        public rows and of the DP model's predictions on them). Its ``coef_`` are then
        multinomial (one row per class) and ``predict_proba`` normalises their sigmoids,
        as for the one-vs-rest DP model.
    n_iter_ : ndarray of shape (n_problems,)
        Solver iterations, set only when no private row was fitted (``epsilon=np.inf``
        or every row public): on a private fit the count depends on private rows and is
        not released.
    privacy_spent_ : dict
        ``{"central": (ε, δ), "local": (0, 0)}`` spent by this fit.
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has feature names.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : The non-private estimator.

    Notes
    -----
    Multiclass problems are solved one-vs-rest; the K binary fits share ε through
    :func:`~skhybrid.accounting.calibrate_pure_epsilon` (basic composition when
    ``delta=0``, the tightest valid composition otherwise).

    References
    ----------
    K. Chaudhuri, C. Monteleoni, A. D. Sarwate. Differentially private empirical risk
    minimization. JMLR 12, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from skhybrid.learners import DPLogisticRegression
    >>> from skhybrid.accounting import PrivacyAccountant
    >>> X, y = make_classification(n_samples=2000, n_features=5, random_state=0)
    >>> public = np.arange(2000) < 200          # the first 200 rows are public
    >>> acc = PrivacyAccountant(epsilon=2.0)
    >>> clf = DPLogisticRegression(epsilon=1.0, data_norm=5.0, classes=[0, 1],
    ...                            accountant=acc)   # random_state=None: fresh noise
    >>> clf = clf.fit(X, y, public_mask=public)
    >>> acc.spent("central")
    (1.0, 0.0)
    """

    __metadata_request__fit = {"public_mask": True}

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "data_norm": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "public_rows": [StrOptions({"auto", "objective"})],
        "public_weight": [Interval(Real, 0, None, closed="left")],
        "classes": ["array-like", None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        C=1.0,
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=1.0,
        public_weight=1.0,
        public_rows="auto",
        classes=None,
        tol=1e-10,
        max_iter=1000,
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.C = C
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.public_weight = public_weight
        self.public_rows = public_rows
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def _check_fit_params(self):
        # sklearn's Interval(..., None) constraints already exclude inf for C and the bounds.
        validate_params(self)
        self._check_privacy_params()

    def fit(self, X, y, *, public_mask=None):
        """Fit the model; private rows are protected by ε-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, public and private.
        y : array-like of shape (n_samples,)
            Class labels.
        public_mask : array-like of bool of shape (n_samples,), default=None
            True for rows without a privacy requirement. ``None``: every row is private.

        Returns
        -------
        self : DPLogisticRegression
            The fitted estimator.
        """
        self._check_fit_params()
        x_index = getattr(X, "index", None)  # for aligning a pandas mask
        y_given = y
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False)
        public = check_mask(public_mask, X.shape[0], "public_mask", index=x_index)
        self.classes_, codes = resolve_classes(y, self.classes, estimator=type(self).__name__,
                                               trusted=public,
                                               public_labels=labels_as_given(y_given, public))
        # y by value, in classes_'s type: a private label's own type (a Decimal(1) among
        # ints made y an object array, which scikit-learn refuses) reaches nothing below.
        y = self.classes_[codes]
        n_problems = 1 if len(self.classes_) == 2 else len(self.classes_)
        has_private = bool((~public).any())
        # Everything that sets the noise comes from parameters and the public mask only.
        n = X.shape[0]
        # (the reachability check waits for the public model below, so that a refusal
        # names the tol the whole bound needs)
        eps_each, lam, norm = self._private_plan(n, int(public.sum()), X.shape[1],
                                                 len(self.classes_), check_reachable=False)
        self._warn_if_public_rows_clipped(X[public])
        # The public-only minimisers (public rows, before the charge): they centre the
        # regulariser under public_rows="auto", and under either setting their size stands
        # for the solution's in the reachability check (red teams 18 and 21).
        mechanism = ObjectivePerturbation(eps_each, lam, n, output_share=_OUTPUT_SHARE)
        X_public = _normalised_rows(X[public], self.data_norm, norm,
                                    self.intercept_scaling if self.fit_intercept else None)
        centers = self._public_centers(X_public, y[public], norm, has_private, n_problems)
        rounding = 0.0
        if has_private and not self.nonprivate:
            dim = X.shape[1] + bool(self.fit_intercept)
            rounding = self._check_reachable(mechanism, dim, int(public.sum())) if (
                centers is None) else self._check_reachable(
                mechanism, dim, int(public.sum()),
                center=max(np.max(np.abs(c)) for c in centers),
                center_norm=max(np.linalg.norm(c) for c in centers),
                public_margins=self._public_margins_rounding(
                    X_public, y[public], centers, dim, n, _noise_push(mechanism, dim)))
        if not has_private:
            events = []
        elif self.nonprivate:
            events = [nonprivate_event()]
        else:
            events = [mechanism.event(count=n_problems)]
        self._charge(events)

        rng = self._make_rng()
        X_hat = _normalised_rows(X, self.data_norm, norm,
                                 self.intercept_scaling if self.fit_intercept else None)
        row_weight = np.where(public, self.public_weight, 1.0)

        with single_blas_thread_if_small(X_hat.shape[1]):
            return self._solve_all(y, X_hat, public, norm, has_private, mechanism,
                                   row_weight, n_problems, rng, centers, rounding)

    def _public_centers(self, Xh, y_public, norm, has_private, n_problems):
        """The public-only minimiser per one-vs-rest problem (public data, free), or None
        for a fit with no public row or no private one; ``Xh``: the public rows,
        normalised."""
        if not (has_private and not self.nonprivate and y_public.size):
            return None
        targets = [self.classes_[1]] if n_problems == 1 else self.classes_
        with single_blas_thread_if_small(Xh.shape[1]):
            return [_public_minimiser(Xh, np.where(y_public == cls, 1.0, -1.0), self.C, norm,
                                      self.tol) for cls in targets]

    def _public_margins_rounding(self, Xh, y_public, centers, dim, n, push=0.0):
        """The public rows' share of the margins' rounding in the gradient, at the public
        minimisers (public data): Σ pw·σ'(mᵢ)·‖x̂ᵢ‖·√dim·(Σⱼ|x̂ᵢⱼcⱼ| + ‖x̂ᵢ‖·push) / n, the
        largest over the one-vs-rest problems, where ``push`` bounds how far the noise
        moves the solution from c. (A row far from the public model's boundary has
        σ'(mᵢ) ≈ 0: its margin's rounding barely moves the gradient.) ``Xh``: the public
        rows, normalised."""
        row_norm = np.linalg.norm(Xh, axis=1)
        targets = [self.classes_[1]] if len(centers) == 1 else self.classes_
        worst = 0.0
        for cls, c in zip(targets, centers):
            m = np.where(y_public == cls, 1.0, -1.0) * (Xh @ c)
            curvature = expit(m) * expit(-m)
            worst = max(worst, float(curvature * row_norm
                                     @ (np.abs(Xh) @ np.abs(c) + row_norm * push)))
        return self.public_weight * math.sqrt(dim) * worst / n

    def _private_plan(self, n, n_public, n_features, n_classes, check_reachable=True):
        """(ε per problem, λ, row norm) of a fit, with its refusals, before any charge.

        Reads parameters and the public sizes only (rows, public rows, features, classes),
        so a meta-estimator that charges for this learner's fits (STR's rounds) can make
        the same refusals before its own charge. ε is ``inf`` for a fit with no private
        row or ``epsilon=np.inf``. ``check_reachable=False`` leaves :meth:`_check_reachable`
        to the caller (``fit`` runs it with the public model's terms, so that a refusal
        names the ``tol`` the whole bound needs).
        """
        norm = math.sqrt(self.data_norm**2
                         + (self.intercept_scaling**2 if self.fit_intercept else 0))
        lam = 1.0 / (self.C * n * norm**2)
        if n_public == n or self.nonprivate:
            return math.inf, lam, norm
        if self.tol < _MIN_PRIVATE_TOL:
            raise ValueError(
                f"tol={self.tol!r} is below {_MIN_PRIVATE_TOL:g}, the smallest tolerance of a "
                "private fit: near float64's rounding error the solver may not reach it, and "
                "whether it does depends on the private rows. Use tol >= "
                f"{_MIN_PRIVATE_TOL:g} (the default is 1e-10). Nothing was charged."
            )
        n_problems = 1 if n_classes == 2 else n_classes
        eps_each = calibrate_pure_epsilon(self.epsilon, self.delta, n_problems)
        mechanism = ObjectivePerturbation(eps_each, lam, n, output_share=_OUTPUT_SHARE)
        if check_reachable:
            self._check_reachable(mechanism, n_features + bool(self.fit_intercept), n_public)
        return eps_each, lam, norm

    def _check_reachable(self, mechanism, dim, n_public, center=0.0, center_norm=0.0,
                         public_margins=0.0):
        """Refuse, before the charge, a fit whose ``tol`` float64 cannot certify; return
        the bound on the computed gradient's rounding error.

        The solver's gradient is a sum of terms as large as ‖b‖/n (the noise, which grows as
        1/ε) and ``public_weight`` · n_public/n (the public rows' share); float64 rounds it
        to about 2^-52 times that. The guarantee needs the *exact* gradient within ``tol``,
        so the solver stops once the computed one is within ``tol`` less this rounding
        (red team 22: stopping at ``tol`` released a point whose exact gradient was
        1.0023e-12 against ``tol=1e-12``), and float64 must resolve that target: a rounding
        above ``tol``/2 is refused. Past it, whether the solver still reaches its target
        depends on the private rows (measured: 4 to 14 fits in 20 fail at ε = 1e-8 on
        300–3,000 rows; 8 of 12 neighbours at ``public_weight=1e5``, ``tol=1e-13``). The
        noise bound fails with probability 1e-12 and has a margin of about 7 over the
        failures measured. The output noise's share ε·0.05 must also lie in the supported
        range of ε.

        ``center`` is the largest entry of the public minimisers, which centre the
        regulariser ((Λ+Δ)/2)‖u − c‖² under ``public_rows="auto"`` and stand for the
        solution's size under either setting: near a solution u* float64's grid has a
        spacing of 2^-52·max|u*| ≤ 2^-52(max|c| + ‖u* − c‖), and the term (Λ+Δ)(u − c) of the
        gradient moves by (Λ+Δ) times that, where (Λ+Δ)‖u* − c‖ is at most the gradient's
        other terms (strong convexity): the bound adds 2^-52(Λ+Δ)·max|c|, doubled for the
        rounding of u − c (measured: C = 1e6 at ε = 0.01 put 4.8e-13 there against
        tol = 1e-13, and one neighbour of two failed after the charge).

        The margins x̂ᵢ·u are rounded to about √dim·2^-52·Σⱼ|x̂ᵢⱼuⱼ| (the usual size of a
        dot product's rounding), which the loss's curvature σ'(mᵢ) turns into gradient
        error: ``public_margins`` is the public rows' share at the public minimisers
        (:meth:`_public_margins_rounding`), and a private row counts at the largest
        curvature, 1/4, and Σⱼ|x̂ᵢⱼuⱼ| ≤ ‖u‖ ≈ ``center_norm`` plus the noise's push
        (:func:`_noise_push`; without public rows the push alone) (red team 21: C = 1e6 with
        public_weight 1e3–1e5 failed after the charge, and released points whose exact
        gradient exceeded tol). Only parameters, n, the public mask and the public rows
        (their minimisers and margins) are read.
        """
        n, low = mechanism.n, EPSILON_RANGE[0]
        noise = mechanism.noise_gradient_bound(dim)
        largest = noise + self.public_weight * n_public / n + (n - n_public) / n
        centring = 2.0 * (mechanism.lam + mechanism.extra_reg) * center
        push = _noise_push(mechanism, dim)
        margins = public_margins + (0.25 * (n - n_public) / n * math.sqrt(dim)
                                    * (center_norm + push))
        rounding = _FLOAT64_EPS * (largest + centring + margins)
        # The solver aims at tol − rounding (so that the exact gradient is within tol),
        # which float64 must still resolve: rounding ≤ tol/2.
        if 2.0 * rounding <= self.tol and mechanism.eps_out >= low:
            try:  # and the output noise's lattice must be one the exact sampler draws on
                mechanism.output_mechanism(dim, self.tol).value_bound(dim)
            except ValueError as exc:
                raise ValueError(f"DPLogisticRegression at epsilon={self.epsilon!r}, "
                                 f"tol={self.tol!r}: {exc} Nothing was charged.") from None
            return rounding
        if mechanism.eps_out < low:
            # The output noise's share ε·0.05 is below the supported range: only ε helps.
            raise ValueError(
                f"DPLogisticRegression cannot release at epsilon={self.epsilon!r}: the "
                f"output noise's share of it is below {low:g}. Use epsilon >= about "
                f"{self.epsilon * low / mechanism.eps_out * 1.01:.2g}. Nothing was charged.")
        # tol >= 2·rounding is enough alone; each other remedy shrinks a term that alone
        # takes half of the allowed tol/2, and may need another beside it.
        terms = []
        if _FLOAT64_EPS * noise > self.tol / 4:  # (the noise bound scales as 1/ε)
            terms.append(f"epsilon >= about "
                         f"{self.epsilon * 4 * _FLOAT64_EPS * noise / self.tol * 1.01:.2g}")
        if _FLOAT64_EPS * self.public_weight * n_public / n > self.tol / 4:
            terms.append("a smaller public_weight")
        if _FLOAT64_EPS * (centring + margins) > self.tol / 4:
            terms.append(
                "a smaller C (the solution's coefficients, from the public rows' model and "
                "from how far the noise can push them against a weak regulariser, are so "
                "large that float64 cannot locate the solution near them)" if n_public else
                "a smaller C (how far the noise can push the solution against a weak "
                "regulariser is so large that float64 cannot locate it)")
        raise ValueError(
            f"DPLogisticRegression cannot certify tol={self.tol!r} in float64 at "
            f"epsilon={self.epsilon!r}, public_weight={self.public_weight!r} on {n} rows: its "
            "gradient sums terms so large that their rounding exceeds tol, and whether the "
            f"solver still reaches tol would depend on the private rows. Use tol >= "
            f"{_one_digit_up(2.0 * rounding)}"
            + ("; or shrink the largest terms (one or more of): " + "; ".join(terms)
               if terms else "") + ". Nothing was charged."
        )

    def _solve_all(self, y, X_hat, public, norm, has_private, mechanism, row_weight,
                   n_problems, rng, centers=None, rounding=0.0):
        """The one-vs-rest problems (BLAS on one thread: small dense products);
        ``centers``: :meth:`_public_centers`; ``rounding``: the bound on the float64
        gradient's error from :meth:`_check_reachable`."""
        private_release = has_private and not self.nonprivate
        use_public = private_release and self.public_rows == "auto" and public.any()
        coefs, n_iter = [], []
        target = self.tol - rounding if private_release else self.tol
        targets = [self.classes_[1]] if n_problems == 1 else self.classes_
        for k, cls in enumerate(targets):
            y_pm = np.where(y == cls, 1.0, -1.0)
            center = centers[k] if use_public else None
            b = mechanism.draw_noise(X_hat.shape[1], rng)
            # A private release needs the EXACT gradient within tol: the solver stops once
            # the computed one is within tol less its rounding (a public bound).
            u, nit, grad_norm = mechanism.solve(X_hat, y_pm, b, row_weight, tol=target,
                                                max_iter=self.max_iter, center=center,
                                                exhaustive=private_release)
            if private_release:
                if grad_norm > target:
                    # Approximate minima perturbation covers points whose gradient is
                    # within tol, and the exhaustive solver stops short only when float64
                    # arithmetic is exhausted. How far it got depends on the private rows,
                    # so saying it (or releasing the point) would be outside the
                    # guarantee. Fail closed; the charge stays (noise was drawn).
                    raise RuntimeError(
                        "DPLogisticRegression could not reach its gradient tolerance tol "
                        "on the perturbed objective in float64 arithmetic, which the "
                        "guarantee requires; nothing is released. Raise tol (the default "
                        "1e-10 is far above float64's rounding error)."
                    )
                u = mechanism.release(u, self.tol, rng)
            elif grad_norm > _STATIONARITY_WARN:
                warnings.warn(
                    f"The solver stopped with gradient norm {grad_norm:.2g} after {nit} "
                    "iterations; increase max_iter.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            if self.verbose:
                done = "solved" if private_release else f"{nit} iterations"
                print(f"[DPLogisticRegression] problem {k + 1}/{n_problems}: {done}")
            coefs.append(u)
            n_iter.append(nit)

        U = np.vstack(coefs)  # coefficients on the normalised rows X_hat
        self.public_model_selected_ = False
        if use_public and self._public_model_wins(X_hat[public], y[public], U, norm):
            # the public rows show every class (checked there): rows in classes_'s order
            _, U = _public_logistic(X_hat[public], y[public], self.C, norm,
                                    self.fit_intercept)
            self.public_model_selected_ = True
        theta = U / norm
        if self.fit_intercept:
            self.coef_ = theta[:, :-1]
            self.intercept_ = theta[:, -1] * self.intercept_scaling
        else:
            self.coef_ = theta
            self.intercept_ = np.zeros(theta.shape[0])
        if not private_release:  # iteration counts are data-dependent: public fits only
            self.n_iter_ = np.asarray(n_iter)
        return self

    def _public_model_wins(self, Xh, yp, U_dp, norm):
        """Post-processing on public rows only: release the public-only model unless the
        DP model predicts the public rows (``Xh``, normalised) clearly better.

        The public-only model (scikit-learn's LogisticRegression on the public rows) is
        scored by cross-validation on the public rows, the DP model on the same rows
        in-sample, which favours it slightly (public rows are in its objective); so the DP
        model is kept only when a paired sign test favours it at z = 1: with ``a`` rows
        that only the DP model gets right and ``b`` that only the public model gets right,
        ``a − b > max(√(a + b), 2)``. Few public rows therefore mean the public-only model,
        exact and free, unless the DP model is far better.
        """
        if not all(np.any(yp == c) for c in self.classes_):
            return False  # the public-only model could not predict every class
        dp_right = self._labels(Xh @ U_dp.T) == yp
        n_folds = min(5, len(yp))
        folds = np.arange(len(yp)) % n_folds
        pub_right = np.zeros(len(yp), dtype=bool)
        for f in range(n_folds):
            train, test = folds != f, folds == f
            labels, W = _public_logistic(Xh[train], yp[train], self.C, norm,
                                         self.fit_intercept)
            pub_right[test] = _predict(labels, Xh[test] @ W.T) == yp[test]
        a = int(np.sum(dp_right & ~pub_right))
        b = int(np.sum(pub_right & ~dp_right))
        return not a - b > max(_SELECTION_Z * math.sqrt(a + b), _SELECTION_MIN)

    def _labels(self, scores):
        """Labels from one-vs-rest scores, as ``predict`` turns decision values into them."""
        return _predict(self.classes_, scores)

    def _warn_if_public_rows_clipped(self, X_public):
        """Warn when the public rows' norms dwarf ``data_norm`` (public rows only: free).

        Every row is scaled down to ``data_norm``. Rows a few times longer only lose their
        length (a row normalisation), but raw features in the hundreds or thousands (e.g.
        breast_cancer against the default 1) leave the few largest features to set every
        row's direction, and the model can do worse than a constant. Private rows are never
        looked at here.
        """
        if X_public.shape[0] == 0:
            return
        ratio = float(np.median(np.linalg.norm(X_public, axis=1))) / self.data_norm
        if ratio > _CLIP_WARN_RATIO:
            warnings.warn(
                f"The public rows' median l2 norm is {ratio:.3g} times data_norm="
                f"{self.data_norm:g}, and every row is scaled down to data_norm: features on "
                "large scales then swamp the others and the model may do no better than a "
                "constant. Scale the features first (e.g. PublicFitTransformer("
                "StandardScaler()) in a Pipeline, with data_norm near sqrt(n_features)).",
                UserWarning, stacklevel=3)

    def predict_proba(self, X):
        """Estimate class probabilities (sigmoid, or normalised one-vs-rest for 3+ classes).

        For 3+ classes each class's one-vs-rest sigmoid is normalised over the classes (as
        scikit-learn's ``OneVsRestClassifier``), in log space. A row on which two or more
        sigmoids saturate at 1 (decision values past ~37, as a private fit can give rows
        far outside ``data_norm``) would tie there in double precision and disagree with
        ``predict``; such a row gets the softmax of its decision values instead, whose
        largest entry is ``predict``'s class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities in the order of ``classes_``; ``classes_[proba.argmax(1)]`` is
            ``predict(X)``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1 - p, p])
        proba = softmax(log_expit(scores), axis=1)  # (no 0/0 where every sigmoid underflows)
        tied = proba.argmax(axis=1) != scores.argmax(axis=1)
        proba[tied] = softmax(scores[tied], axis=1)
        return proba

    def predict_log_proba(self, X):
        """Estimate the logarithm of the class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            ``log(predict_proba(X))``.
        """
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With the default epsilon=1 and ~100-row test sets, the noise is of the order of
        # the signal: sklearn's accuracy thresholds are not reachable by a DP fit.
        tags.classifier_tags.poor_score = True
        return tags
