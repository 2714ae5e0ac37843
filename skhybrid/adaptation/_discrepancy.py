"""Weighted discrepancy, its softmax smoothing and the constants of Corollary 1.

Reference: R. Bassily, M. Mohri and A. T. Suresh, "Principled Approaches for Private
Adaptation from a Public Source", AISTATS 2023 (below "BMS23").

Notation (BMS23 §2, §4): public source rows ``X_src`` = (x_1, ..., x_m) with weights q in the
simplex, private target rows (x~_1, ..., x~_n), ``M0 = (1/n) sum_j x~_j x~_j^T`` and

    M(q) = M0 - sum_i q_i x_i x_i^T              (Lemma 1; dis = 4 Lambda^2 ||M(q)||_2)
    F~(q) = (1/mu) log Tr exp(mu diag(M(q), -M(q)))
          = (1/mu) log sum_j (exp(mu lam_j) + exp(-mu lam_j))      (§4.2, Corollary 1)

over the eigenvalues lam_j of the symmetric d x d matrix M(q). One symmetric
eigendecomposition gives the value and both gradients; the 2d x 2d block matrix and the
matrix exponential are never formed.

Note: BMS23 writes "F~ is a uniform approximation of dis(P, q)" (Corollary 1.1) while
Lemma 1 has dis = 4 Lambda^2 ||M(q)||_2; F~ approximates ||M(q)||_2, and the factor
4 Lambda^2 appears explicitly in the single-stage objective L_T (§5). We follow §5.
"""

import numbers
from fractions import Fraction

import numpy as np
from scipy import linalg

from ..utils._rounding import float_at_least, float_sqrt_at_least
from ..utils._rows import clip_scale, row_norms

__all__ = [
    "adaptation_objective",
    "clip_rows",
    "discrepancy_gradient_sensitivity",
    "discrepancy_lipschitz",
    "discrepancy_matrix",
    "discrepancy_smoothness",
    "regularized_smoothed_discrepancy",
    "second_moment",
    "single_stage_constants",
    "smoothed_discrepancy",
    "smoothed_discrepancy_grad",
    "smoothed_discrepancy_matrix_grad",
    "smoothing_error_bound",
    "spectral_norm",
]


# --------------------------------------------------------------------------- validation


def _check_positive(value, name, *, allow_inf=False):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise ValueError(f"{name} must be a positive real number, got {value!r}.")
    if not (value > 0) or (not allow_inf and not np.isfinite(value)):
        raise ValueError(
            f"{name} must be a positive finite number, got {value!r}; pass {name} > 0."
        )
    return float(value)


def _check_matrix(X, name):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_rows, d), got ndim={X.ndim}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or inf; remove or impute those entries first.")
    return X


def _check_symmetric(M, name="M"):
    M = np.asarray(M, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {M.shape}.")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} contains NaN or inf.")
    # max |M - M^T| rather than np.allclose: this check sits on the per-iteration path.
    if M.size and np.max(np.abs(M - M.T)) > 1e-10 * max(1.0, float(np.max(np.abs(M)))):
        raise ValueError(f"{name} must be symmetric; pass (M + M.T) / 2.")
    return M


def _check_weights(q, m):
    q = np.asarray(q, dtype=float)
    if q.shape != (m,):
        raise ValueError(f"q must have shape ({m},) (one weight per source row), got {q.shape}.")
    if not np.all(np.isfinite(q)):
        raise ValueError("q contains NaN or inf.")
    return q


# --------------------------------------------------------------------------- moments


def clip_rows(X, r):
    """Project every row of ``X`` onto the Euclidean ball of radius ``r``.

    Rows with ``||x||_2 <= r`` are returned unchanged; longer rows are rescaled to norm
    ``r``. This enforces the data-independent bound X ⊂ B_2^d(r) that every sensitivity in
    BMS23 (§2, Theorem 2) assumes for the private rows.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Rows to clip.
    r : float
        Clipping radius, ``r > 0``.

    Returns
    -------
    X_clipped : ndarray of shape (n, d)
        A new array; ``X`` is not modified.
    """
    X = _check_matrix(X, "X")
    r = _check_positive(r, "r")
    return X * clip_scale(row_norms(X), r)[:, None]


def second_moment(X, weights=None):
    """Weighted second-moment matrix ``sum_i w_i x_i x_i^T``.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Rows.
    weights : array-like of shape (n,), default=None
        Row weights. ``None`` means the empirical mean ``(1/n) sum_i x_i x_i^T``, i.e.
        ``M0`` of BMS23 Lemma 1 when ``X`` is the target sample.

    Returns
    -------
    M : ndarray of shape (d, d)
        Symmetric matrix.
    """
    X = _check_matrix(X, "X")
    n = X.shape[0]
    if weights is None:
        if n == 0:
            raise ValueError("X has no rows; the mean second moment needs at least one row.")
        weights = np.full(n, 1.0 / n)
    else:
        weights = _check_weights(weights, n)
    M = X.T @ (weights[:, None] * X)
    return 0.5 * (M + M.T)


def discrepancy_matrix(M0, X_src, q):
    """``M(q) = M0 - sum_i q_i x_i x_i^T`` (BMS23 Lemma 1).

    Parameters
    ----------
    M0 : array-like of shape (d, d)
        Target second moment, see :func:`second_moment`.
    X_src : array-like of shape (m, d)
        Public source rows.
    q : array-like of shape (m,)
        Source weights (a point of the simplex in the paper; not enforced here).

    Returns
    -------
    M : ndarray of shape (d, d)
    """
    M0 = _check_symmetric(M0, "M0")
    X_src = _check_matrix(X_src, "X_src")
    if X_src.shape[1] != M0.shape[0]:
        raise ValueError(
            f"X_src has {X_src.shape[1]} columns but M0 is {M0.shape[0]} x {M0.shape[0]}."
        )
    return M0 - second_moment(X_src, q)


def spectral_norm(M):
    """``||M||_2 = max_j |lam_j(M)|`` of a symmetric matrix (eigenvalues only)."""
    M = _check_symmetric(M)
    return float(np.max(np.abs(linalg.eigh(M, eigvals_only=True))))


# --------------------------------------------------------------------------- smoothing


def _spectral_softmax(M, mu):
    """Value of F~ at ``M``, eigenvectors ``U`` and spectral gradient weights ``g``.

    ``dF~/dlam_j = (e^{mu lam_j} - e^{-mu lam_j}) / Z`` with ``Z = sum_k (e^{mu lam_k} +
    e^{-mu lam_k})``. Both the log-sum-exp and the ratios are computed after shifting all
    2d exponents by their maximum ``a = mu ||M||_2``, so every exponential is <= 1.
    """
    lam, U = linalg.eigh(M, check_finite=False)
    a = mu * np.max(np.abs(lam))
    ep = np.exp(mu * lam - a)
    em = np.exp(-mu * lam - a)
    s = np.sum(ep) + np.sum(em)  # >= 1: the largest of the 2d terms equals exp(0)
    value = (a + np.log(s)) / mu
    g = (ep - em) / s
    return value, U, g


def smoothed_discrepancy(M, mu):
    """Softmax-smoothed spectral norm ``F~ = (1/mu) log Tr exp(mu diag(M, -M))``.

    BMS23 §4.2 and Corollary 1: ``||M||_2 <= F~ <= ||M||_2 + log(2d)/mu``, convex in M.
    Computed from one ``scipy.linalg.eigh`` as a log-sum-exp over the 2d numbers
    ``±mu lam_j``, so it does not overflow for large ``mu ||M||_2``.

    Parameters
    ----------
    M : array-like of shape (d, d)
        Symmetric matrix, typically ``M(q)`` of :func:`discrepancy_matrix`.
    mu : float
        Smoothing parameter, ``mu > 0``; larger is closer to ``||M||_2``.

    Returns
    -------
    value : float
    """
    M = _check_symmetric(M)
    mu = _check_positive(mu, "mu")
    return float(_spectral_softmax(M, mu)[0])


def smoothed_discrepancy_matrix_grad(M, mu):
    """Value of ``F~`` and its gradient with respect to the symmetric matrix ``M``.

    ``dF~/dM = G = U diag(g) U^T`` with ``g_j = (e^{mu lam_j} - e^{-mu lam_j}) / Z``
    (spectral-function gradient; the block form of BMS23 Corollary 1's proof gives the
    same ``G = (E_11 - E_22) / Tr E`` with ``E = exp(mu diag(M, -M))``). ``||G||_(1) <= 1``.

    Parameters
    ----------
    M : array-like of shape (d, d)
        Symmetric matrix.
    mu : float
        Smoothing parameter, ``mu > 0``.

    Returns
    -------
    value : float
    G : ndarray of shape (d, d)
        Symmetric gradient (also the gradient with respect to ``M0``).
    """
    M = _check_symmetric(M)
    mu = _check_positive(mu, "mu")
    value, U, g = _spectral_softmax(M, mu)
    return float(value), (U * g) @ U.T


def smoothed_discrepancy_grad(M, X_src, mu):
    """Value of ``F~(q)`` and its gradient with respect to the source weights q.

    With ``M = M(q)`` (affine in q, ``dM/dq_i = -x_i x_i^T``), BMS23 eq. (4) and Corollary 1
    give ``dF~/dq_i = -x_i^T G x_i = -sum_j g_j (u_j . x_i)^2``, evaluated for all i at once
    as ``-((X_src U)**2) @ g``: O(m d^2 + d^3) per call, one eigendecomposition.

    Parameters
    ----------
    M : array-like of shape (d, d)
        ``M(q)`` at the current weights.
    X_src : array-like of shape (m, d)
        Public source rows.
    mu : float
        Smoothing parameter, ``mu > 0``.

    Returns
    -------
    value : float
    grad_q : ndarray of shape (m,)
        ``||grad_q||_inf <= max_i ||x_i||^2`` (Corollary 1.4).
    """
    M = _check_symmetric(M)
    X_src = _check_matrix(X_src, "X_src")
    if X_src.shape[1] != M.shape[0]:
        raise ValueError(f"X_src has {X_src.shape[1]} columns but M is {M.shape[0]} x {M.shape[0]}.")
    mu = _check_positive(mu, "mu")
    value, U, g = _spectral_softmax(M, mu)
    P = X_src @ U
    return float(value), -((P * P) @ g)


def regularized_smoothed_discrepancy(q, M0, X_src, mu, lam):
    """First-stage objective ``F~_T(q) + (lam/2) ||q||_2^2`` and its gradient in q.

    This is ``F~_T^lambda`` of BMS23 §6 (Algorithm 2 step 4, Algorithm 3 step 9), the
    smoothed version of problem (5).

    Parameters
    ----------
    q : array-like of shape (m,)
        Source weights.
    M0 : array-like of shape (d, d)
        Target second moment.
    X_src : array-like of shape (m, d)
        Public source rows.
    mu : float
        Smoothing parameter, ``mu > 0``.
    lam : float
        Ridge on q, ``lam >= 0``.

    Returns
    -------
    value : float
    grad : ndarray of shape (m,)
    """
    X_src = _check_matrix(X_src, "X_src")
    q = _check_weights(q, X_src.shape[0])
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}.")
    M = discrepancy_matrix(M0, X_src, q)
    value, grad = smoothed_discrepancy_grad(M, X_src, mu)
    return value + 0.5 * lam * float(q @ q), grad + lam * q


def adaptation_objective(q, w, M0, X_src, y_src, mu, coef_norm):
    """Single-stage objective ``L_T(q, w)`` of BMS23 §5 and its gradients in both blocks.

    ``L_T(q, w) = sum_i q_i (w . x_i - y_i)^2 + 4 Lambda^2 F~_T(q)``, the smoothed first
    two terms of the learning bound (1), minimised over the simplex x B_2^d(Lambda) by
    Algorithm 1.

    Parameters
    ----------
    q : array-like of shape (m,)
        Source weights.
    w : array-like of shape (d,)
        Linear hypothesis.
    M0 : array-like of shape (d, d)
        Target second moment.
    X_src : array-like of shape (m, d)
        Public source rows.
    y_src : array-like of shape (m,)
        Public source labels.
    mu : float
        Smoothing parameter, ``mu > 0``.
    coef_norm : float
        Lambda, the norm bound on w (scales the discrepancy term by ``4 Lambda^2``).

    Returns
    -------
    value : float
    grad_q : ndarray of shape (m,)
        ``(w . x_i - y_i)^2 + 4 Lambda^2 dF~/dq_i``; only the second term reads private data.
    grad_w : ndarray of shape (d,)
        ``2 sum_i q_i (w . x_i - y_i) x_i``; public data only.
    """
    X_src = _check_matrix(X_src, "X_src")
    m, d = X_src.shape
    q = _check_weights(q, m)
    w = np.asarray(w, dtype=float)
    y_src = np.asarray(y_src, dtype=float)
    if w.shape != (d,):
        raise ValueError(f"w must have shape ({d},), got {w.shape}.")
    if y_src.shape != (m,) or not np.all(np.isfinite(y_src)):
        raise ValueError(f"y_src must be a finite array of shape ({m},).")
    coef_norm = _check_positive(coef_norm, "coef_norm")
    resid = X_src @ w - y_src
    losses = resid * resid
    F, gF = smoothed_discrepancy_grad(discrepancy_matrix(M0, X_src, q), X_src, mu)
    c = 4.0 * coef_norm**2
    value = float(q @ losses) + c * F
    return value, losses + c * gF, 2.0 * (X_src.T @ (q * resid))


# --------------------------------------------------------------------------- constants


def smoothing_error_bound(mu, d):
    """Uniform gap ``0 <= F~(q) - ||M(q)||_2 <= log(2 d) / mu`` (BMS23 Corollary 1.1).

    The paper states ``log(2 min{m + n, d}) / mu``; since ``rank M(q) <= d`` and the
    block matrix has 2d eigenvalues, ``log(2d)/mu`` is the bound for ``m + n >= d``.
    """
    mu = _check_positive(mu, "mu")
    if not isinstance(d, numbers.Integral) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}.")
    return float(np.log(2 * d) / mu)


def discrepancy_gradient_sensitivity(r, r_hat, mu, n, *, norm="inf", m=None, bound="paper"):
    """Replace-one sensitivity of ``grad_q F~_T`` when the target rows lie in B_2^d(r).

    ``bound="paper"`` is BMS23 Theorem 2 / Corollary 1.3: ``2 mu r^2 r_hat^2 / n`` in
    ``||.||_inf``, where ``r_hat = max_i ||x_i||`` over the public rows.

    ``bound="tight"`` is ``min(mu r^2 / n, 2) r_hat^2``. Proof: replacing x~ by x~' changes
    M0 by ``D = (x~ x~^T - x~' x~'^T) / n``. Both rank-one terms are PSD with norm <= r^2,
    so ``-r^2 I <= n D <= r^2 I`` and ``||D||_2 <= r^2 / n`` (the paper's triangle
    inequality gives 2 r^2 / n). The rest of the paper's proof is unchanged: by Hölder and
    the mu-smoothness of f for the spectral norm ([Nes07], BMS23 Lemma 2),
    ``|x_i^T (G - G') x_i| <= ||G - G'||_(1) ||x_i||^2 <= mu ||D||_2 r_hat^2``. Independently,
    ``||G||_(1) <= 1`` for every M (the spectral weights g_j satisfy sum_j |g_j| <= 1), so
    each coordinate ``-x_i^T G x_i`` lies in ``[-r_hat^2, r_hat^2]`` and moves by at most
    ``2 r_hat^2``; this cap binds when ``mu r^2 > 2 n``. The first term is attained in the
    limit ``mu r^2 / n -> 0`` (d = 1, M(q) = 0, a row of norm r replaced by 0; see tests).

    ``norm="2"`` returns the l2 sensitivity needed by a Gaussian mechanism (Algorithm 3):
    every coordinate moves by at most the l_inf bound, so ``sqrt(m)`` times it.

    Parameters
    ----------
    r : float
        Norm bound (clipping radius) of the private target rows.
    r_hat : float
        Largest norm of a public source row.
    mu : float
        Smoothing parameter.
    n : int
        Number of private target rows (public under replace-one neighbours).
    norm : {"inf", "2"}, default="inf"
        Norm in which the change of the gradient is measured.
    m : int, default=None
        Number of source rows; required for ``norm="2"``.
    bound : {"paper", "tight"}, default="paper"
        Constant as printed in BMS23, or the tighter one proved above (at least a factor
        2 smaller).

    Returns
    -------
    sensitivity : float
    """
    r = _check_positive(r, "r")
    r_hat = _check_positive(r_hat, "r_hat")
    mu = _check_positive(mu, "mu")
    if not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    # In exact arithmetic from the float parameters, then rounded up: the float formula's
    # four or five roundings can land below the bound (one unit in the last place below a
    # power of two costs a selection lattice its last step of room).
    r2, r_hat2 = Fraction(r) ** 2, Fraction(r_hat) ** 2
    if bound == "paper":
        s = 2 * Fraction(mu) * r2 * r_hat2 / int(n)
    elif bound == "tight":
        s = min(Fraction(mu) * r2 / int(n), Fraction(2)) * r_hat2
    else:
        raise ValueError(f"bound must be 'paper' or 'tight', got {bound!r}.")
    if norm == "inf":
        return float_at_least(s)
    if norm == "2":
        if not isinstance(m, numbers.Integral) or m < 1:
            raise ValueError("m (the number of source rows) must be a positive integer for norm='2'.")
        return float_sqrt_at_least(s * s * m)  # s·√m, rounded up
    raise ValueError(f"norm must be 'inf' or '2', got {norm!r}.")


def discrepancy_smoothness(r_hat, mu):
    """Smoothness of ``F~`` for ``||.||_1``: ``mu r_hat^4`` (BMS23 Theorem 1, Corollary 1.2).

    ``||grad F~(q) - grad F~(q')||_inf <= mu r_hat^4 ||q - q'||_1``.
    """
    return _check_positive(mu, "mu") * _check_positive(r_hat, "r_hat") ** 4


def discrepancy_lipschitz(r_hat):
    """Lipschitz constant of ``F~`` for ``||.||_1``: ``||grad F~||_inf <= r_hat^2``.

    BMS23 Theorem 3 / Corollary 1.4. Holds for every q (the proof never uses q in the
    simplex): ``|x_i^T G x_i| <= ||G||_2 ||x_i||^2`` and ``||G||_2 <= ||G||_(1) <= 1``.
    """
    return _check_positive(r_hat, "r_hat") ** 2


def single_stage_constants(r, r_hat, coef_norm, label_bound, mu, n, *, bound="paper"):
    """Constants of BMS23 §5 ("Instantiating Algorithm 1 with L_T") for ``L_T(q, w)``.

    Assumes ``||w|| <= Lambda``, public rows of norm <= r_hat, private rows of norm <= r
    and labels in ``[-Y, Y]`` (§5; §2 says "an interval of diameter Y", which we do not use).

    Parameters
    ----------
    r, r_hat : float
        Private-row and public-row norm bounds.
    coef_norm : float
        Lambda.
    label_bound : float
        Y.
    mu : float
        Smoothing parameter.
    n : int
        Number of private rows.
    bound : {"paper", "tight"}, default="paper"
        Passed to :func:`discrepancy_gradient_sensitivity` for ``tau_q``.

    Returns
    -------
    constants : dict
        ``tau_q`` : l_inf sensitivity of ``grad_q L_T`` = 4 Lambda^2 x (Corollary 1.3), i.e.
        ``8 Lambda^2 mu r^2 r_hat^2 / n`` as printed; ``tau_w`` = 0 (no private data in
        ``grad_w``); ``gamma_q = (Lambda r_hat + Y)^2 + 4 Lambda^2 r_hat^2``;
        ``gamma_w = 2 (Lambda r_hat + Y) r_hat``; ``mu_q = 4 Lambda^2 mu r_hat^4``;
        ``mu_w = 2 r_hat^2``; ``gamma_qw = 2 r_hat (Lambda r_hat + Y)``;
        ``D_q = 2``; ``D_w = 2 Lambda``.

    Notes
    -----
    The paper prints ``mu_w = r_hat^2`` ("the squared loss is ||x||^2-smooth"), but the
    Hessian of ``sum_i q_i (w . x_i - y_i)^2`` is ``2 sum_i q_i x_i x_i^T``, whose norm
    reaches ``2 r_hat^2`` at a vertex q = e_i. We return the correct ``2 r_hat^2``; it only
    enters the convergence analysis (Theorem 4), not the privacy calibration.
    """
    L = _check_positive(coef_norm, "coef_norm")
    Y = _check_positive(label_bound, "label_bound")
    r_hat = _check_positive(r_hat, "r_hat")
    a = L * r_hat + Y
    return {
        "tau_q": 4.0 * L**2 * discrepancy_gradient_sensitivity(r, r_hat, mu, n, bound=bound),
        "tau_w": 0.0,
        "gamma_q": a**2 + 4.0 * L**2 * r_hat**2,
        "gamma_w": 2.0 * a * r_hat,
        "mu_q": 4.0 * L**2 * discrepancy_smoothness(r_hat, mu),
        "mu_w": 2.0 * r_hat**2,
        "gamma_qw": 2.0 * r_hat * a,
        "D_q": 2.0,
        "D_w": 2.0 * L,
    }
