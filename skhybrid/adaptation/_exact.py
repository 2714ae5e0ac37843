"""Non-private Cortes–Mohri discrepancy minimisation: the ``"exact"`` baseline.

Stage 1 solves problem (5) of Bassily, Mohri & Suresh (AISTATS 2023, "BMS23"), the
two-stage algorithm of Cortes & Mohri (TCS 2014, "CM14"):

    min_{q in simplex}  ||M(q)||_2 + (lam / 2) ||q||_2^2,   M(q) = M0 - sum_i q_i x_i x_i^T,

by a numpy-only solver (smoothing + accelerated projected gradient, within about 1e-4 of
the optimum; the default) or exactly as a semidefinite program with cvxpy, an optional
dependency (``pip install "skhybrid[exact]"``); the tests cross-check the two. Stage 2 is
the q-weighted ridge regression (6) on the public rows, in closed form.

Nothing here is private: ``M0`` computed from raw private rows is released as is.
"""

import numbers

import numpy as np

from ._discrepancy import (
    _check_matrix,
    _check_symmetric,
    _check_weights,
    _spectral_softmax,
    discrepancy_matrix,
    spectral_norm,
)

__all__ = [
    "discrepancy_objective",
    "import_cvxpy",
    "minimize_discrepancy",
    "minimize_discrepancy_cvxpy",
    "minimize_discrepancy_smoothed",
    "project_simplex",
    "weighted_ridge",
]

_SDP_SOLVERS = ("CLARABEL", "SCS")


def project_simplex(v):
    """Euclidean projection of ``v`` onto the probability simplex.

    Sort-based algorithm of Duchi, Shalev-Shwartz, Singer & Chandra (ICML 2008), O(m log m).

    Parameters
    ----------
    v : array-like of shape (m,)

    Returns
    -------
    q : ndarray of shape (m,)
        ``argmin_{q >= 0, sum q = 1} ||q - v||_2``.
    """
    v = np.asarray(v, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"v must be a non-empty 1-D array, got shape {v.shape}.")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def discrepancy_objective(q, M0, X_src, lam=0.0):
    """``||M(q)||_2 + (lam/2) ||q||_2^2``, the objective of BMS23 problem (5)."""
    M = discrepancy_matrix(M0, X_src, q)
    q = np.asarray(q, dtype=float)
    return spectral_norm(M) + 0.5 * lam * float(q @ q)


def _check_problem(M0, X_src, lam):
    M0 = _check_symmetric(M0, "M0")
    X_src = _check_matrix(X_src, "X_src")
    if X_src.shape[0] == 0:
        raise ValueError("X_src has no rows; discrepancy minimisation needs source rows.")
    if X_src.shape[1] != M0.shape[0]:
        raise ValueError(
            f"X_src has {X_src.shape[1]} columns but M0 is {M0.shape[0]} x {M0.shape[0]}."
        )
    if not isinstance(lam, numbers.Real) or not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}.")
    return M0, X_src, float(lam)


def import_cvxpy(what="the exact SDP solver"):
    """Import cvxpy, the optional dependency of the exact solver, or say how to install it.

    Parameters
    ----------
    what : str
        What needs cvxpy, for the message.

    Returns
    -------
    module
        The ``cvxpy`` module.

    Raises
    ------
    ImportError
        If cvxpy is not installed; the message names ``pip install "skhybrid[exact]"``.
    """
    try:
        import cvxpy
    except ImportError as exc:
        raise ImportError(
            f"{what} needs cvxpy, an optional dependency of skhybrid. Install it with "
            '`pip install "skhybrid[exact]"` (or `pip install cvxpy`), or use the numpy '
            "solver (the default), which needs nothing extra."
        ) from exc
    return cvxpy


def _default_sdp_solver():
    cp = import_cvxpy()

    installed = cp.installed_solvers()
    for name in _SDP_SOLVERS:
        if name in installed:
            return name
    raise ValueError(
        "cvxpy has no SDP-capable solver installed (need CLARABEL or SCS); "
        "install one or use method='smoothed'."
    )


def minimize_discrepancy_cvxpy(M0, X_src, lam=1e-3, *, solver=None, solver_options=None):
    """Solve BMS23 problem (5) exactly as an SDP with cvxpy.

    Epigraph form: minimise ``t + (lam/2)||q||^2`` subject to ``-t I <= M(q) <= t I``
    (two d x d LMIs), ``q >= 0``, ``sum q = 1``. ``M(q)`` is built as ``vec(M0) - A q``
    with ``A[:, i] = vec(x_i x_i^T)`` so the problem size is d^2 x m, independent of n.

    Parameters
    ----------
    M0 : array-like of shape (d, d)
        Target second moment.
    X_src : array-like of shape (m, d)
        Source rows.
    lam : float, default=1e-3
        Ridge on q (BMS23 §7 uses 0.001).
    solver : str, default=None
        cvxpy solver name; default CLARABEL (interior point) if installed, else SCS.
    solver_options : dict, default=None
        Extra keyword arguments for ``Problem.solve``.

    Returns
    -------
    q : ndarray of shape (m,)
        Optimal weights, clipped at 0 and renormalised to sum to 1 (removes solver fuzz).

    Raises
    ------
    ImportError
        If cvxpy (``pip install "skhybrid[exact]"``) is not installed.
    """
    cp = import_cvxpy("minimize_discrepancy_cvxpy")

    M0, X_src, lam = _check_problem(M0, X_src, lam)
    m, d = X_src.shape
    solver = _default_sdp_solver() if solver is None else solver
    A = (X_src[:, :, None] * X_src[:, None, :]).reshape(m, d * d).T
    q = cp.Variable(m, nonneg=True)
    t = cp.Variable()
    Mq = cp.reshape(M0.reshape(-1) - A @ q, (d, d), order="C")
    Mq = 0.5 * (Mq + Mq.T)  # symmetric by construction; makes it explicit for cvxpy
    eye = np.eye(d)
    prob = cp.Problem(
        cp.Minimize(t + 0.5 * lam * cp.sum_squares(q)),
        [cp.sum(q) == 1, t * eye - Mq >> 0, t * eye + Mq >> 0],
    )
    prob.solve(solver=solver, **(solver_options or {}))
    if prob.status not in ("optimal", "optimal_inaccurate") or q.value is None:
        raise ValueError(
            f"cvxpy solver {solver} returned status {prob.status!r}; try solver='SCS' "
            "or method='smoothed'."
        )
    qv = np.maximum(np.asarray(q.value, dtype=float), 0.0)
    return qv / qv.sum()


def minimize_discrepancy_smoothed(
    M0,
    X_src,
    lam=1e-3,
    *,
    mu_final=None,
    n_stages=6,
    max_iter=500,
    tol=1e-10,
    gap_tol=0.1,
    q_init=None,
):
    """Numpy-only solver of BMS23 problem (5): smoothing + accelerated projected gradient.

    ``||M(q)||_2`` is replaced by its softmax smoothing ``F~`` (BMS23 §4.2; error at most
    ``log(2d)/mu``, Nesterov 2007's smoothing of ``lambda_max``), and
    ``F~(q) + (lam/2)||q||^2`` is minimised over the simplex by FISTA with Euclidean
    projection, backtracking on the step and adaptive restart (O'Donoghue & Candès 2015).
    ``mu`` is increased geometrically over ``n_stages`` warm-started stages up to
    ``mu_final``; the iterate with the smallest *exact* objective is returned. A stage
    stops once its Frank-Wolfe gap ``g.q - min_i g_i`` (an upper bound on the distance to
    the stage's optimum, the objective being convex; Jaggi, ICML 2013, Sec. 2) falls below
    ``gap_tol`` times the stage's smoothing error ``log(2d)/mu``, so the optimisation error
    stays a fraction of the smoothing error.

    Parameters
    ----------
    M0 : array-like of shape (d, d)
        Target second moment.
    X_src : array-like of shape (m, d)
        Source rows.
    lam : float, default=1e-3
        Ridge on q.
    mu_final : float, default=None
        Final smoothing; default ``1e4 * log(2d) / ||M(uniform)||_2`` so the smoothing
        error is 1e-4 of the starting discrepancy.
    n_stages : int, default=6
        Number of continuation stages (``mu`` grows by a constant factor; the first stage
        uses ``mu_final / 10**(n_stages-1)``).
    max_iter : int, default=500
        FISTA iterations per stage.
    tol : float, default=1e-10
        Stop a stage when the step changes q by less than ``tol`` in l1.
    gap_tol : float, default=0.1
        Stop a stage when its Frank-Wolfe gap is below ``gap_tol * log(2d) / mu``.
    q_init : array-like of shape (m,), default=None
        Starting point (default uniform).

    Returns
    -------
    q : ndarray of shape (m,)
    """
    M0, X_src, lam = _check_problem(M0, X_src, lam)
    m, d = X_src.shape
    q = np.full(m, 1.0 / m) if q_init is None else project_simplex(_check_weights(q_init, m))

    # Inputs are validated once above; the loop calls the unchecked kernels.
    def exact(qq):
        M = M0 - X_src.T @ (qq[:, None] * X_src)
        return float(np.max(np.abs(np.linalg.eigvalsh(M)))) + 0.5 * lam * float(qq @ qq)

    def smoothed(qq, mu, with_grad=True):
        M = M0 - X_src.T @ (qq[:, None] * X_src)
        value, U, g = _spectral_softmax(0.5 * (M + M.T), mu)
        value += 0.5 * lam * float(qq @ qq)
        if not with_grad:
            return value
        P = X_src @ U
        return value, lam * qq - (P * P) @ g

    if mu_final is None:
        scale = max(spectral_norm(discrepancy_matrix(M0, X_src, q)), 1e-12)
        mu_final = 1e4 * np.log(2 * d) / scale
    mus = mu_final / 10.0 ** np.arange(n_stages - 1, -1, -1)

    best_q, best_val = q.copy(), exact(q)
    step = 1.0
    for mu in mus:
        x_prev = q.copy()
        y, t = q.copy(), 1.0
        fx = smoothed(q, mu, with_grad=False)
        for _ in range(max_iter):
            fy, gy = smoothed(y, mu)
            # Backtracking: accept the step once the quadratic upper model holds.
            while True:
                x_new = project_simplex(y - step * gy)
                diff = x_new - y
                f_new, g_new = smoothed(x_new, mu)
                if f_new <= fy + gy @ diff + (0.5 / step) * (diff @ diff) + 1e-15:
                    break
                step *= 0.5
            moved = np.abs(x_new - x_prev).sum()
            if f_new > fx:  # adaptive restart: drop momentum when the value goes up
                y, t = x_prev.copy(), 1.0
                step *= 2.0
                if moved < tol:
                    break
                continue
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            y = x_new + ((t - 1.0) / t_new) * (x_new - x_prev)
            x_prev, fx, t = x_new, f_new, t_new
            step *= 1.25  # let the step grow again after backtracking
            # Frank-Wolfe gap: the stage's objective is convex, so it exceeds its minimum
            # over the simplex by at most g.q - min_i g_i (Jaggi 2013, Sec. 2).
            if moved < tol or g_new @ x_new - g_new.min() <= gap_tol * np.log(2 * d) / mu:
                break
        q = x_prev
        val = exact(q)
        if val < best_val:
            best_q, best_val = q.copy(), val
    return best_q


def minimize_discrepancy(M0, X_src, lam=1e-3, *, method="smoothed", **kwargs):
    """Cortes–Mohri stage 1 (BMS23 problem (5)): weights q minimising the discrepancy.

    Parameters
    ----------
    M0 : array-like of shape (d, d)
        Target second moment (non-private unless it was privatised upstream).
    X_src : array-like of shape (m, d)
        Source rows.
    lam : float, default=1e-3
        Ridge on q.
    method : {"smoothed", "cvxpy", "dual"}, default="smoothed"
        The numpy solver :func:`minimize_discrepancy_smoothed`, the exact SDP via
        :func:`minimize_discrepancy_cvxpy` (needs ``pip install "skhybrid[exact]"``), or
        Newton's method on the d x d dual
        (:func:`~skhybrid.adaptation._dual_solver.minimize_discrepancy_dual`, needs
        ``lam > 0``; its cost per step does not grow with the number of rows beyond a few
        passes over them).
    **kwargs
        Passed to the chosen solver.

    Returns
    -------
    q : ndarray of shape (m,)
    """
    if method == "cvxpy":
        return minimize_discrepancy_cvxpy(M0, X_src, lam, **kwargs)
    if method == "smoothed":
        return minimize_discrepancy_smoothed(M0, X_src, lam, **kwargs)
    if method == "dual":
        from ._dual_solver import minimize_discrepancy_dual  # imports this module

        return minimize_discrepancy_dual(M0, X_src, lam, **kwargs)
    raise ValueError(f"method must be 'smoothed', 'cvxpy' or 'dual', got {method!r}.")


def weighted_ridge(X, y, sample_weight, alpha, *, fit_intercept=False):
    """Closed-form q-weighted ridge regression, stage 2 of CM14 / BMS23 (6).

    ``w = argmin_w sum_i q_i (w . x_i + b - y_i)^2 + alpha ||w||_2^2``; the intercept ``b``
    (only with ``fit_intercept=True``) is not penalised and is obtained by centring with the
    q-weighted means. The paper's hypotheses have no intercept (``h(x) = w . x``).

    Parameters
    ----------
    X : array-like of shape (m, d)
        Public source rows.
    y : array-like of shape (m,)
        Public labels.
    sample_weight : array-like of shape (m,)
        Non-negative weights q (need not sum to 1; alpha is relative to their scale).
    alpha : float
        Ridge strength, ``alpha >= 0`` (must be > 0 if the weighted Gram matrix is
        singular, e.g. when q has fewer than d non-zero entries).
    fit_intercept : bool, default=False
        Whether to fit an unpenalised intercept.

    Returns
    -------
    coef : ndarray of shape (d,)
    intercept : float
    """
    X = _check_matrix(X, "X")
    m, d = X.shape
    y = np.asarray(y, dtype=float)
    if y.shape != (m,) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a finite array of shape ({m},).")
    q = _check_weights(sample_weight, m)
    if np.any(q < 0) or q.sum() <= 0:
        raise ValueError("sample_weight must be non-negative with a positive sum.")
    if not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}.")
    if fit_intercept:
        x_mean = (q @ X) / q.sum()
        y_mean = float(q @ y) / q.sum()
        Xc, yc = X - x_mean, y - y_mean
    else:
        Xc, yc = X, y
    A = Xc.T @ (q[:, None] * Xc) + alpha * np.eye(d)
    b = Xc.T @ (q * yc)
    try:
        coef = np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        raise ValueError(
            "The weighted Gram matrix is singular; pass alpha > 0 (ridge strength)."
        ) from None
    intercept = float(y_mean - x_mean @ coef) if fit_intercept else 0.0
    return coef, intercept
