"""Noisy projected SGD (Kohen & Sheffet, Appendix A, Algorithm 3) and its RDP accounting."""

import math
import time
from fractions import Fraction
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

from .._base import PrivateEstimatorMixin, nonprivate_event
from .._validation import resolve_classes
from ..accounting import PrivacyAccountant, PrivacyEvent
from ..accounting._rdp import calibrate_subsampled_gaussian_mu, subsampled_gaussian_epsilon
from ..mechanisms import _noise
from ..utils._rows import clip_scale, row_norms
from ..utils._sklearn_compat import (
    Interval,
    LinearClassifierMixin,
    Options,
    StrOptions,
    validate_data,
    validate_params,
)
from ._exact_subsample import kappa_dense_tv_bound

__all__ = ["NoisySGDClassifier", "clipped_gradients", "noisy_projected_sgd", "sgd_step_epsilon"]


def _augment(X, fit_intercept, intercept_scaling):
    if not fit_intercept:
        return np.ascontiguousarray(X, dtype=float)
    return np.hstack([X, np.full((X.shape[0], 1), float(intercept_scaling))])


def _margins(Xa, theta):
    """``Xa @ theta`` silently: a row beyond ~1e154 can overflow the product (numpy warns,
    and mixed signs give inf − inf = NaN); such rows are recomputed from their direction,
    x·θ = max|x| · (x/max|x|)·θ, which is finite or ±inf, never NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = Xa @ theta
        bad = ~np.isfinite(out)
        if bad.any():
            out[bad] = _direction_dot(Xa[bad], theta)
    return out


def _direction_dot(X, theta):
    top = np.abs(X).max(axis=-1)
    with np.errstate(over="ignore"):
        return top * ((X / top[..., None]) @ theta)


def clipped_gradients(theta, Xa, ya, lipschitz, loss="hinge"):
    """Per-row loss gradients at ``theta``, each clipped to ℓ2 norm ``lipschitz``.

    Hinge: ∇ max(0, 1 − y⟨θ, x⟩) = −y·x·[y⟨θ, x⟩ < 1]; logistic: −y·x·σ(−y⟨θ, x⟩).
    Clipping g ↦ g·min(1, L/‖g‖) makes every released gradient lie in the ball of radius
    L whatever the data, so two rows' gradients differ by at most Δ = 2L (replace-one).

    Parameters
    ----------
    theta : ndarray of shape (p,)
    Xa : ndarray of shape (m, p)
        Rows (with the intercept column when fitted).
    ya : ndarray of shape (m,)
        Labels in {−1, +1}.
    lipschitz : float
        Clipping norm L.
    loss : {"hinge", "logistic"}

    Returns
    -------
    grads : ndarray of shape (m, p)
    """
    margins = ya * _margins(Xa, theta)
    if loss == "hinge":
        coef = -ya * (margins < 1.0)
    elif loss == "logistic":
        coef = -ya / (1.0 + np.exp(np.clip(margins, -500, 500)))
    else:
        raise ValueError(f"loss must be 'hinge' or 'logistic'; got {loss!r}.")
    with np.errstate(over="ignore"):
        norms = np.abs(coef) * row_norms(Xa)
    return (coef * clip_scale(norms, lipschitz))[:, None] * Xa


def noisy_projected_sgd(Xa, ya, indices, *, lipschitz, radius, sigma, rng,
                        loss="hinge", learning_rate="hazan", verbose=0):
    """KS Algorithm 3: R steps of noisy projected SGD on draws from μ; returns h̄.

    For r = 1..R: take the r-th draw (x_r, y_r) ~ μ, v ~ N(0, σ²I), set
    h^{r+1} = Π(h^r − η_r(clip_L(∇L(h^r; x_r, y_r)) + v)) with Π the projection onto the
    ball of radius ``radius`` (diameter D = 2·radius), and return h̄ = (1/R)Σ_{r≤R} h^r
    (h¹ = 0).

    Step sizes: ``"paper"`` η_r = D/(σ√r) as printed in Algorithm 3; ``"hazan"``
    η_r = D/(G√r) with G² = L² + σ²p the second-moment bound of the proof of KS Thm A.1
    (Hazan 2016, Thm 3.1) — equal to the printed one up to √p when σ²p ≫ L², and
    defined for σ = 0.

    Parameters
    ----------
    Xa : ndarray of shape (n, p)
    ya : ndarray of shape (n,), values in {−1, +1}
    indices : ndarray of shape (R,), dtype int
        The R row draws from μ, one per step, drawn by the caller with an exact sampler
        (uniform integers for :class:`NoisySGDClassifier`,
        :func:`~skhybrid.transfer._exact_subsample.sample_kappa_dense` for STR's
        Algorithm 4): the sampling law is what the accounting's η is about.
    lipschitz : float
        Clipping norm L.
    radius : float
        Radius of the hypothesis ball.
    sigma : float
        Noise standard deviation (0: non-private SGD).
    rng : numpy.random.Generator
        Source of every random draw.
    loss : {"hinge", "logistic"}
    learning_rate : {"hazan", "paper"}
    verbose : int, default=0
        Print progress about ten times (every step's noisy iterate is covered by the
        accounting, so printing the running average's norm releases nothing new).

    Returns
    -------
    theta_bar : ndarray of shape (p,)

    Notes
    -----
    The noise (tag ``"sgd-noise"``, one draw of shape (R, p)) goes through
    :mod:`skhybrid.mechanisms._noise`, after the caller's index draws. The update loop is
    inherently sequential (one example per step); gradients are computed by
    :func:`clipped_gradients`' formula on scalars to keep a step at a few µs.
    """
    n, p = Xa.shape
    idx = np.asarray(indices)
    R = idx.size
    noise = (_noise.gaussian(rng, sigma, size=(R, p), tag="sgd-noise") if sigma > 0
             else np.zeros((R, p)))
    D = 2.0 * radius
    if learning_rate == "paper":
        if not sigma > 0:
            raise ValueError("learning_rate='paper' (D/(sigma*sqrt(r))) needs sigma > 0; use "
                             "learning_rate='hazan'.")
        G = sigma
    else:
        G = math.sqrt(lipschitz**2 + sigma**2 * p)
    steps = D / (G * np.sqrt(np.arange(1, R + 1)))
    # Per-draw scalars: the clipped gradient is coef·x with coef = −y·min(1, L/‖x‖)·[active].
    clip = clip_scale(row_norms(Xa), lipschitz)
    Xr, yr, cr = Xa[idx], ya[idx], clip[idx]
    theta = np.zeros(p)
    total = np.zeros(p)
    r2 = radius * radius
    logistic = loss == "logistic"
    every = max(1, R // 10) if verbose else R + 1
    start = time.perf_counter()
    with np.errstate(over="ignore", invalid="ignore"):  # huge rows: see _margins
        for r in range(R):
            if r and r % every == 0:
                elapsed = time.perf_counter() - start
                print(f"[noisy SGD] step {r}/{R}: |average| {np.linalg.norm(total / r):.4g}, "
                      f"{elapsed:.1f} s, about {elapsed / r * (R - r):.1f} s left")
            total += theta
            x = Xr[r]
            m = float(x @ theta)
            if not math.isfinite(m):  # a row beyond ~1e154 (see _margins)
                m = float(_direction_dot(x, theta))
            m *= yr[r]
            if logistic:
                c = -yr[r] * cr[r] / (1.0 + math.exp(min(m, 500.0)))
            else:
                c = -yr[r] * cr[r] if m < 1.0 else 0.0
            theta = theta - steps[r] * (c * x + noise[r])
            sq = float(theta @ theta)
            if sq > r2:
                theta *= radius / math.sqrt(sq)
    return total / R


def sgd_step_epsilon(noise_multiplier, eta, n_steps, delta):
    """(ε, δ) of ``n_steps`` noisy steps, each on one draw from a μ moving by TV ≤ η.

    Each step adds N(0, σ²I), σ = ``noise_multiplier``·L, to a gradient clipped to norm
    L; its replace-one sensitivity is Δ = 2L, so μ_G = Δ/σ = 2/``noise_multiplier``.
    The per-step RDP is :func:`skhybrid.accounting._rdp.subsampled_gaussian_rdp`, the
    steps compose by adding RDP (Mironov 2017, Prop. 1) and the result is converted by
    Balle et al. (2020, Thm 21).

    Returns
    -------
    epsilon : float
    best_order : float
    """
    mu = 2.0 / noise_multiplier
    if Fraction(mu) * Fraction(noise_multiplier) < 2:  # rounded down: take the next float
        mu = math.nextafter(mu, math.inf)  # (ε grows with μ: never below the true 2/z)
    return subsampled_gaussian_epsilon(eta, mu, int(n_steps), delta)


def calibrated_noise_multiplier(epsilon, delta, eta, n_steps):
    """(noise multiplier, ε, best order) of the least noise for which ``n_steps`` steps
    at TV ``eta`` are (ε, δ)-DP (:func:`sgd_step_epsilon` is the accounting).

    The multiplier is 2/μ for the calibrated μ = Δ/σ, rounded up to the next float when
    2/(2/μ) rounds above μ (about one μ in seven); then 2/multiplier ≤ μ and, ε being
    increasing in μ, the ε at μ that the calibration has just computed (and cached) is
    charged for a step whose privacy loss is at most that.

    A finite ``epsilon`` always gets noise: when even μ = 1e3 (the top of the
    calibration's range) is private, the multiplier is that of μ = 1e3 and the ε charged
    is the one of μ = 1e3, below ``epsilon``. No noise (μ = ∞) is not the limit of that:
    each step would publish the clipped gradient of a sampled row. Only
    ``epsilon=np.inf`` (the non-private baseline, not calibrated here) runs without noise.
    """
    mu = calibrate_subsampled_gaussian_mu(epsilon, delta, eta, n_steps)
    z = 2.0 / mu
    while 2.0 / z > mu:
        z = math.nextafter(z, math.inf)
    eps, order = subsampled_gaussian_epsilon(eta, mu, int(n_steps), delta)
    return z, eps, order


class NoisySGDClassifier(PrivateEstimatorMixin, LinearClassifierMixin, BaseEstimator):
    """Binary linear classifier by noisy projected SGD (Kohen & Sheffet, Algorithm 3).

    Runs ``n_steps`` SGD steps, each on ONE row drawn uniformly at random (with
    replacement), with the gradient clipped to norm ``lipschitz`` and N(0, σ²I) noise
    added, projects onto the ball of radius ``radius`` and returns the average iterate.
    Inside :class:`~skhybrid.transfer.SubsampleTestReweigh` the draws come from the
    κ-dense distribution μᵗ instead (KS Algorithm 4).

    Parameters
    ----------
    epsilon : float, default=1.0
        (ε, δ)-DP of the fit. ``np.inf``: non-private SGD (σ = 0).
    delta : float, default=1e-6
        Must be > 0 when ``epsilon`` is finite.
    n_steps : int, default=2000
        R, SGD steps (= draws).
    loss : {"hinge", "logistic"}, default="hinge"
    lipschitz : float, default=1.0
        Clipping norm L of each gradient (with the intercept column). Replace-one
        sensitivity of a step is 2L.
    radius : float, default=10.0
        Radius of the hypothesis ball (diameter D = 2·radius).
    fit_intercept : bool, default=True
        Whether to learn an intercept (as a constant feature of value
        ``intercept_scaling``, clipped with the rest of the row).
    intercept_scaling : float, default=1.0
        Value of the constant column appended to X.
    noise_multiplier : float or None, default=None
        The ratio σ/L. ``None``: the smallest σ whose RDP accounting meets (ε, δ) over ``n_steps``
        draws with η = 1/n (n, the number of rows, is public), never below 2/1e3 for a
        finite ε (then the ε charged is that of 2/1e3, below ``epsilon``). KS Fact A.2
        uses σ² = 20L² (``noise_multiplier = sqrt(20)``).
    learning_rate : {"hazan", "paper"}, default="hazan"
        See :func:`noisy_projected_sgd`.
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
        Print progress messages (``0``: silent).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    noise_multiplier_ : float
        σ/L used (> 0 for any finite ``epsilon``; 0 only with ``epsilon=np.inf``).
    n_iter_ : int
        R.
    privacy_spent_ : dict
    privacy_events_ : list of PrivacyEvent
        The privacy events of this fit (charged to ``accountant`` when one is given);
        ``privacy_spent_`` composes them.
    n_features_in_ : int

    Notes
    -----
    *Privacy.* With uniform sampling, neighbouring datasets' example distributions are
    within TV η = 1/n, and each step's release (the noisy gradient; the iterate is its
    post-processing given the history) satisfies the RDP bound of
    :func:`skhybrid.accounting._rdp.subsampled_gaussian_rdp` with μ_G = 2L/σ. The R steps
    compose adaptively (RDP adds) and convert to (ε, δ) (Balle et al. 2020, Thm 21);
    the fit is charged as one ``"approx"`` event carrying the RDP details in ``params``.

    References
    ----------
    Y. Kohen and O. Sheffet. Transfer learning in differential privacy's hybrid-model.
    ICML 2022, Appendix A. E. Hazan. Introduction to Online Convex Optimization, 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.transfer import _sgd
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = _sgd.NoisySGDClassifier(epsilon=1.0, delta=1e-5, n_steps=2000,
    ...                               classes=[0, 1], random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.8)
    True
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither"), Options(Real, {np.inf})],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"hinge", "logistic"})],
        "lipschitz": [Interval(Real, 0, None, closed="neither")],
        "radius": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "noise_multiplier": [Interval(Real, 0, None, closed="neither"), None],
        "learning_rate": [StrOptions({"hazan", "paper"})],
        "accountant": [PrivacyAccountant, None],
        "classes": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(self, epsilon=1.0, delta=1e-6, *, n_steps=2000, loss="hinge", lipschitz=1.0,
                 radius=10.0, fit_intercept=True, intercept_scaling=1.0, noise_multiplier=None,
                 learning_rate="hazan", classes=None, accountant=None, random_state=None, verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.n_steps = n_steps
        self.loss = loss
        self.lipschitz = lipschitz
        self.radius = radius
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.noise_multiplier = noise_multiplier
        self.learning_rate = learning_rate
        self.classes = classes
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def _plan(self, eta, n_steps, epsilon, delta):
        """(noise multiplier, ε spent, best order) for ``n_steps`` draws at TV ``eta``."""
        if self.noise_multiplier is None:
            return calibrated_noise_multiplier(epsilon, delta, eta, n_steps)
        z = float(self.noise_multiplier)
        eps, order = sgd_step_epsilon(z, eta, n_steps, delta)
        return z, eps, order

    def fit(self, X, y):
        """Fit by noisy projected SGD on uniform draws from the rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (all private).
        y : array-like of shape (n_samples,)
            Two classes.

        Returns
        -------
        self : NoisySGDClassifier
            The fitted estimator.
        """
        validate_params(self)
        self._check_privacy_params(delta_required=True)
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_, codes = resolve_classes(y, self.classes, estimator=type(self).__name__,
                                              binary=True)
        # y by value, in classes_'s type: a private label's own type (a Decimal(1) among
        # ints made y an object array, which scikit-learn refuses) reaches nothing below.
        y = self.classes_[codes]
        n = X.shape[0]
        if self.nonprivate:
            z, events = 0.0, [nonprivate_event(source=type(self).__name__)]
        else:
            # η: the exact uniform draws below move by TV 1/n between neighbours; as a
            # float, never below it
            eta = kappa_dense_tv_bound(1.0, n)
            z, eps, order = self._plan(eta, self.n_steps, self.epsilon, self.delta)
            if eps > self.epsilon * (1 + 1e-9):
                raise ValueError(
                    f"noise_multiplier={self.noise_multiplier} gives epsilon={eps:.4g} > "
                    f"epsilon={self.epsilon} over n_steps={self.n_steps} draws from "
                    f"{n} rows; raise noise_multiplier, lower n_steps, or pass "
                    "noise_multiplier=None to calibrate it."
                )
            events = [PrivacyEvent(
                "noisy-sgd", "approx", eps, self.delta, population="central",
                params={"noise_multiplier": z, "eta": eta, "steps": self.n_steps,
                        "rdp_order": order, "sensitivity": 2.0 * self.lipschitz,
                        "accounting": "rdp-subsampled-gaussian"})]
        self._charge(events)
        if self.verbose:
            print(f"[NoisySGDClassifier] {self.n_steps} steps, noise multiplier {z:.4g}, "
                  f"privacy spent {self.privacy_spent_['central']}")
        rng = self._make_rng()
        # η = 1/n: each step's row is a uniform integer below n, exactly.
        idx = _noise.integers(rng, n, size=self.n_steps, tag="sgd-subsample")
        self._fit_indices(X, y, idx, z * self.lipschitz, rng)
        return self

    def _fit_indices(self, X, y, indices, sigma, rng):
        """Run Algorithm 3 on the given row draws; no charge (the caller accounts)."""
        ya = np.where(y == self.classes_[1], 1.0, -1.0)
        Xa = _augment(X, self.fit_intercept, self.intercept_scaling)
        theta = noisy_projected_sgd(Xa, ya, indices,
                                    lipschitz=self.lipschitz, radius=self.radius, sigma=sigma,
                                    rng=rng, loss=self.loss, learning_rate=self.learning_rate,
                                    verbose=self.verbose)
        p = X.shape[1]
        self.coef_ = theta[None, :p].copy()
        self.intercept_ = (np.array([theta[p] * self.intercept_scaling]) if self.fit_intercept
                           else np.zeros(1))
        self.noise_multiplier_ = sigma / self.lipschitz
        self.n_iter_ = int(self.n_steps)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # 2000 noisy single-example steps on ~100 rows at epsilon=1: eta = 1/n is large, so
        # the calibrated noise is of the order of the signal.
        tags.classifier_tags.poor_score = True
        return tags
