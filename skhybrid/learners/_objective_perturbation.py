"""Objective perturbation for L2-regularised logistic regression (Chaudhuri et al. 2011)."""

import math
from fractions import Fraction

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from scipy.stats import gamma

from ..accounting import PrivacyEvent
from ..mechanisms import LaplaceMechanism, _noise
from ..utils._rounding import float_at_least
from ..utils._rows import clip_scale, row_norms

__all__ = ["ObjectivePerturbation", "clip_rows"]

# Up to this many columns the exact Hessian is cheap: Newton; beyond, L-BFGS.
_NEWTON_MAX_DIM = 500

# Safety bound on the Newton steps of an exhaustive solve. Damped Newton on this smooth,
# strongly convex objective converges globally and quadratically near the minimiser, so
# an exhaustive solve ends at the tolerance or at a float64 stall long before it; the
# bound only keeps a pathological input from looping for ever.
_EXHAUSTIVE_MAX_ITER = 100_000

# Consecutive float64-flat Newton steps that fail to halve the gradient before the
# solver declares float64 exhausted (see ObjectivePerturbation._newton).
_STALL_STEPS = 20

# Bound c on the second derivative of the logistic loss ℓ(z) = log(1 + e^{-z}): ℓ'' ≤ 1/4.
LOGISTIC_CURVATURE = 0.25


def clip_rows(X, norm):
    """Scale every row of ``X`` with ℓ2 norm above ``norm`` back onto the ball of radius ``norm``."""
    return X * clip_scale(row_norms(X), norm)[:, None]


class ObjectivePerturbation:
    """One binary problem of objective perturbation, in normalised coordinates.

    Solves, for rows ``‖x̂ᵢ‖ ≤ 1`` and labels ``yᵢ ∈ {−1, +1}``,

        J_priv(u) = (1/n) Σᵢ ℓ(yᵢ uᵀx̂ᵢ) + ((Λ + Δ)/2) ‖u‖² + bᵀu / n,

    with ℓ the logistic loss, n the number of **all** rows (public and private), and b
    drawn with density ∝ exp(−ε′‖b‖/2) — Chaudhuri, Monteleoni & Sarwate (2011),
    Algorithm 2, with ε′ and Δ set as in its steps 1–2:

        ε′ = ε − log(1 + 2c/(nΛ) + c²/(n²Λ²));
        if ε′ ≤ 0: Δ = c / (n (e^{ε/4} − 1)) − Λ and ε′ = ε/2; else Δ = 0,

    with c = 1/4 the curvature bound of the logistic loss. The proof below holds for *any*
    Δ ≥ 0 with ε′ = ε − 2 log(1 + c/(n(Λ+Δ))) > 0, so both of CMS's choices are valid
    whenever they apply; we take the one with the larger ε′ (less noise): Δ = 0 when its
    ε′ is at least ε/2, else CMS's second choice (then Δ > 0 and ε′ = ε/2). CMS's own rule
    switches to the second choice only when the first is infeasible, which makes the
    noise *grow* with ε just above the switch (ε′ = 0.40 at ε = 0.8 but 0.19 at ε = 1 on
    breast cancer); this rule is monotone in ε.

    Privacy with public rows (replace-one of a private row, public rows fixed)
    ------------------------------------------------------------------------
    CMS Theorem 9 proves ε-DP for a data set in which every row may change. Fix the
    public rows P and let D, D′ differ in one private row (x, y) → (x′, y′). For a given
    output u the noise is determined uniquely by the first-order condition,

        b(u; D) = −Σᵢ ℓ′(yᵢuᵀx̂ᵢ) yᵢ x̂ᵢ − n(Λ + Δ) u,

    which is a bijection between b and u (J_priv is strongly convex). The density of the
    output is ν(b(u; D)) · |det ∇ᵤ b(u; D)|, so the privacy loss splits in two factors:

    * Noise: b(u; D) − b(u; D′) = ℓ′(·) y′x̂′ − ℓ′(·) y x̂ — every public-row term and the
      regulariser cancel, leaving ‖·‖ ≤ 2 because |ℓ′| ≤ 1 and ‖x̂‖ ≤ 1; hence
      ν(b)/ν(b′) ≤ exp(ε′ · 2 / 2) = e^{ε′}.
    * Jacobian: ∇ᵤ b = −(A + E) with A = Σ over the *unchanged* rows (public rows
      included) of ℓ″ x̂x̂ᵀ + n(Λ + Δ)I and E the rank-one term of the changed row. CMS bound
      the ratio |det(A + E)| / |det(A + E′)| by (1 + c/(n(Λ+Δ)))² using only that
      A ⪰ n(Λ + Δ)I. Public rows add positive semi-definite terms to A, so this still
      holds, and the ratio is at most exp(ε − ε′) by the choice of ε′ and Δ.

    The product is e^ε. Public rows therefore enter the objective for free; they only
    make the problem better conditioned. n counts all rows because the regulariser and
    the 1/n scaling are those of the objective actually solved.

    The exact minimiser, and how the approximate one is released
    ------------------------------------------------------------
    The argument above is about the exact minimiser u*, which no solver returns. With
    ``output_share = η > 0`` (what DPLogisticRegression uses) the fit is approximate
    minima perturbation (Iyengar, Near, Song, Thakkar, Thakurta & Wang 2019, Algorithm 1,
    here in its pure-DP form with Laplace output noise): objective perturbation runs at
    ε_op = (1 − η)ε, the solver's point û is released only if ``max|∇J_priv(û)| ≤ γ`` (the
    public gradient tolerance; otherwise the fit fails closed), and what is released is
    û plus Laplace noise at ε_out = ηε, on a lattice (:meth:`release`). Why that is
    ε-DP: J_priv is (Λ+Δ)-strongly convex, so ‖û − u*‖₂ ≤ ‖∇J_priv(û)‖₂/(Λ+Δ) ≤ √p γ/(Λ+Δ)
    for p coordinates. The release is a function of the pair (u*, e + L) with e = û − u*,
    which is a deterministic function of (D, u*) (the solver is deterministic and b is a
    function of (D, u*) by the first-order condition above). u* is ε_op-DP; given u*, the
    vector e moves by at most 2√p γ/(Λ+Δ) in ℓ2, so by at most 2pγ/(Λ+Δ) in ℓ1, between
    neighbours, and the Laplace mechanism with that ℓ1 sensitivity is ε_out-DP. Adaptive
    composition gives ε_op + ε_out = ε (Iyengar et al. 2019, Thm 1, whose Gaussian output
    noise we replace by Laplace noise to keep the fit pure).
    """

    name = "objective_perturbation"

    def __init__(self, epsilon, lam, n_samples, curvature=LOGISTIC_CURVATURE,
                 output_share=0.0):
        self.epsilon = epsilon
        self.lam = lam
        self.n = n_samples
        self.output_share = output_share
        c = curvature
        if math.isinf(epsilon):
            self.eps_op, self.eps_out = math.inf, math.inf
            self.eps_prime, self.extra_reg = math.inf, 0.0
            return
        # The budget of the output noise first; the objective gets the rest, exactly.
        self.eps_out = epsilon * output_share
        self.eps_op = epsilon - self.eps_out
        eps_op = self.eps_op
        ratio = c / (n_samples * lam)
        eps_prime = eps_op - math.log1p(2 * ratio + ratio**2)
        if eps_prime >= eps_op / 2:
            self.eps_prime, self.extra_reg = eps_prime, 0.0
        else:  # then lam < c/(n(e^{ε/4} − 1)), so the extra regulariser is positive
            self.extra_reg = c / (n_samples * math.expm1(eps_op / 4)) - lam
            self.eps_prime = eps_op / 2

    def event(self, count=1):
        return PrivacyEvent(
            mechanism=self.name,
            kind="pure",
            epsilon=self.epsilon,
            count=count,
            params={"lambda": self.lam, "n": self.n, "eps_prime": self.eps_prime,
                    "extra_reg": self.extra_reg, "output_share": self.output_share},
        )

    def output_sensitivity(self, dim, gradient_tolerance):
        """ℓ1 bound 2pγ/(Λ+Δ) on how far the released point's error can move between
        neighbours (see the class docstring), in exact arithmetic from the float
        parameters and rounded up."""
        return float_at_least(2 * int(dim) * Fraction(gradient_tolerance)
                              / (Fraction(self.lam) + Fraction(self.extra_reg)))

    def release(self, u, gradient_tolerance, rng):
        """û plus Laplace noise at ``eps_out`` on a lattice, for a point with
        ``max|∇J_priv(û)| ≤ gradient_tolerance`` (the caller checks it); ``u`` itself when
        ``output_share`` is 0 or the fit is non-private.
        """
        if not self.output_share or math.isinf(self.eps_out):
            return u
        return self.output_mechanism(u.size, gradient_tolerance)(u, rng)

    def output_mechanism(self, dim, gradient_tolerance):
        """The lattice Laplace mechanism of :meth:`release` (at ``eps_out``).

        Lattice steps of at least 2^-30 keep values up to 2^20 representable; the rounding
        then dominates the sensitivity, and the noise stays ~ p·2^-30/ε_out.
        """
        return LaplaceMechanism(self.eps_out, self.output_sensitivity(dim, gradient_tolerance),
                                min_step=2.0**-30)

    def noise_gradient_bound(self, dim, tail=1e-12):
        """A bound on ‖b‖/n, the size of the noise's term in ∇J_priv, that fails with
        probability ``tail``: ‖b‖ ~ Gamma(dim, 2/ε′) (see :meth:`draw_noise`).

        Next to a term of that size float64 locates the minimiser only to about
        ``2^-52 · ‖b‖/n`` in gradient norm, so a gradient tolerance below it is out of
        reach whatever the rows; the caller refuses such a fit before charging.
        """
        if math.isinf(self.eps_prime):
            return 0.0
        return float(gamma.isf(tail, dim, scale=2.0 / self.eps_prime)) / self.n

    def draw_noise(self, dim, rng):
        """b with density ∝ exp(−ε′‖b‖/2): ‖b‖ ~ Gamma(dim, 2/ε′), direction uniform."""
        if math.isinf(self.eps_prime):
            return np.zeros(dim)
        norm = _noise.gamma(rng, dim, 2.0 / self.eps_prime, tag=self.name)
        direction = _noise.gaussian(rng, 1.0, dim, tag=self.name + "-direction")
        return norm * direction / np.linalg.norm(direction)

    def solve(self, X_hat, y_pm, b, row_weight=None, u0=None, tol=1e-10, max_iter=1000,
              center=None, exhaustive=False):
        """Minimise J_priv (Newton up to 500 columns, else L-BFGS); returns
        (u, n_iter, max |∇J_priv(u)|).

        ``row_weight`` multiplies each row's loss. Private rows must have weight 1 (the
        proof bounds the changed row's gradient by 1); public rows may carry any weight
        ≥ 0, because their terms are fixed across neighbours and convex (see the class
        docstring: they cancel in b − b′ and only add PSD terms to A).

        ``exhaustive=True`` ignores ``max_iter``: the solver runs until the gradient is
        within ``tol`` or float64 arithmetic makes no further progress (L-BFGS hands over
        to Newton when it stops short). A private fit needs this: whether a capped solver
        reaches ``tol`` depends on the private rows, so a cap would make the fit's failure
        a release outside the guarantee.
        """
        n = self.n
        reg = self.lam + self.extra_reg
        weight = np.ones(len(y_pm)) if row_weight is None else row_weight
        # ``center`` (a public vector, e.g. a model fitted on public rows) moves the
        # regulariser to ((Λ+Δ)/2)‖u − center‖²: a linear term fixed across neighbours,
        # so b(u; D) − b(u; D′) and the Jacobian are unchanged and the proof holds as is.
        c = np.zeros(X_hat.shape[1]) if center is None else center

        def fun(u):
            z = y_pm * (X_hat @ u)
            d = u - c
            value = -(weight * log_expit(z)).sum() / n + 0.5 * reg * (d @ d) + (b @ u) / n
            grad = -(X_hat.T @ (weight * y_pm * expit(-z))) / n + reg * d + b / n
            return value, grad

        u0 = np.zeros(X_hat.shape[1]) if u0 is None else u0
        newton_cap = _EXHAUSTIVE_MAX_ITER if exhaustive else max_iter
        # What matters for the guarantee is how close to stationary the point is: the
        # largest entry of the exact gradient at the returned point.
        if X_hat.shape[1] <= _NEWTON_MAX_DIM:
            return self._newton(X_hat, y_pm, weight, reg, b, c, u0, tol, newton_cap)
        res = minimize(fun, u0, jac=True, method="L-BFGS-B",
                       options={"gtol": tol, "ftol": 0.0, "maxiter": max_iter})
        u, nit = res.x, int(res.nit)
        grad_norm = float(np.max(np.abs(fun(u)[1])))
        if exhaustive and grad_norm > tol:
            # L-BFGS stopped short (its cap or its line search): Newton from there.
            u, more, grad_norm = self._newton(X_hat, y_pm, weight, reg, b, c, u, tol,
                                              newton_cap)
            nit += more
        return u, nit, grad_norm

    def _newton(self, X_hat, y_pm, weight, reg, b, center, u, tol, max_iter):
        """Damped Newton with the exact Hessian (the objective is reg-strongly convex and
        smooth, so Newton with backtracking converges globally, quadratically near the
        minimiser: a few steps reach a 1e-10 gradient where L-BFGS needs hundreds).

        Cost per step: one pass over the rows for value, gradient and curvature (the
        margins z are computed once per point), and the Hessian Xᵀ diag(ℓ″) X in single
        precision on blocks of rows (twice as fast; it only chooses the direction, a
        descent direction of the exact objective while the factor is positive definite;
        double precision takes over when it is not, or when the solve stalls under it).
        Near the minimiser the Hessian barely moves, so once a step has cut the gradient
        below 1e-3 of its first value the last Cholesky factor is kept (a chord step: the
        direction is still a descent direction of the exact objective, and the Armijo
        line search is unchanged); a fresh Hessian is computed again whenever a kept
        factor fails to cut the gradient tenfold. Only the stopping rule decides what is
        returned: the exact gradient below ``tol``.
        """
        n = self.n
        wy = weight * y_pm

        def evaluate(v):
            z = y_pm * (X_hat @ v)
            d = v - center
            loss, ridge = -(weight @ log_expit(z)) / n, 0.5 * reg * (d @ d)
            value = loss + ridge + (b @ v) / n
            # The size of the terms summed (the loss and ridge terms are >= 0): float64
            # resolves the value only to ~2^-52 of it, which can be far above 2^-52|value|
            # when the noise term b·v/n cancels the others.
            scale = loss + ridge + (np.abs(b) @ np.abs(v)) / n
            q = expit(-z)
            grad = -(X_hat.T @ (wy * q)) / n + reg * d + b / n
            return value, grad, q, scale

        value, grad, q, scale = evaluate(u)
        g_first = g_norm = float(np.max(np.abs(grad)))
        factor = X_single = None
        # The Hessian starts in single precision. Whatever looks like float64 exhaustion
        # under a single-precision factor (a failed line search, a stall) switches to
        # double precision for the rest of the solve first: only a double-precision
        # Newton step may declare exhaustion, so a poorly conditioned problem costs time,
        # never a data-dependent failure.
        single = True
        # Float64 exhaustion: steps accepted only because the value is flat to float64
        # and the gradient wobbles below its last value. Newton from there halves the
        # gradient in a step or two; _STALL_STEPS flat steps without halving mean that
        # rounding, not the objective, decides the gradient.
        mark, flat_steps = g_norm, 0
        for it in range(1, max_iter + 1):
            if g_norm <= tol:
                return u, it - 1, g_norm
            if flat_steps > _STALL_STEPS:
                if not single:
                    return u, it - 1, g_norm
                single, factor, mark, flat_steps = False, None, g_norm, 0
            if factor is None:
                curv = weight * q * (1.0 - q) / n
                if single:
                    if X_single is None:
                        X_single = X_hat.astype(np.float32)
                    try:
                        factor = cho_factor(_hessian(X_single, curv, reg), lower=True,
                                            check_finite=False)
                    except np.linalg.LinAlgError:  # rounding broke positive definiteness
                        single = False
                if not single:
                    factor = cho_factor(_hessian(X_hat, curv, reg), lower=True,
                                        check_finite=False)
                fresh = True
            step = cho_solve(factor, grad, check_finite=False)
            t = 1.0
            flat = _value_resolution(scale)
            while True:  # Armijo backtracking on the exact objective
                cand = u - t * step
                c_value, c_grad, c_q, c_scale = evaluate(cand)
                c_norm = float(np.max(np.abs(c_grad)))
                descent = c_value <= value - 1e-4 * t * (grad @ step)
                # the value is flat to float64: the gradient decides (red team 20: with
                # the value's resolution taken from |value|, a full Newton step taking the
                # gradient from 4e-9 to 9e-16 was refused for a 1e-14 wobble of a value
                # summing terms of size 30, and the fit failed after its charge)
                flat_step = (abs(c_value - value) <= max(flat, _value_resolution(c_scale))
                             and c_norm < g_norm)
                # a step below float64's resolution of u is no step
                accepted = (descent or flat_step) and not np.array_equal(cand, u)
                if accepted or t < 1e-12:
                    break
                t *= 0.5
            if not accepted:  # no float64 progress left ...
                if fresh and not single:
                    return u, it, g_norm  # ... even with an exact Hessian: u is it
                if fresh:
                    single = False  # ... with a single-precision one: retry in double
                factor = None  # a kept factor: retry from here with a fresh Hessian
                continue
            # Keep the factor only close to the minimiser, and only while it works.
            keep = c_norm <= 1e-3 * g_first and (fresh or c_norm <= 0.1 * g_norm)
            if not keep:
                factor = None
            fresh = False
            if c_norm <= 0.5 * mark or value - c_value > flat:
                mark, flat_steps = c_norm, 0
            else:
                flat_steps += 1
            u, value, grad, q, g_norm, scale = cand, c_value, c_grad, c_q, c_norm, c_scale
        return u, max_iter, g_norm


def _value_resolution(scale):
    """How far float64 rounding can move the objective's value, for terms of total size
    ``scale``: a change this small is no evidence either way (the gradient decides)."""
    return 4.0 * np.finfo(float).eps * max(1.0, scale)


# Rows per block of the Hessian's rank-k update (keeps the scaled block in cache).
_HESSIAN_BLOCK = 4096


def _hessian(X, curv, reg):
    """Xᵀ diag(curv) X + reg·I in float64, as Σ over row blocks of (√curv·X_b)ᵀ(√curv·X_b)
    computed in the precision of ``X``."""
    d = X.shape[1]
    H = np.zeros((d, d))
    root = np.sqrt(curv).astype(X.dtype, copy=False)
    for start in range(0, X.shape[0], _HESSIAN_BLOCK):
        Xb = X[start:start + _HESSIAN_BLOCK] * root[start:start + _HESSIAN_BLOCK, None]
        H += Xb.T @ Xb
    H[np.diag_indices_from(H)] += reg
    return H
