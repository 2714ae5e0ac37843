"""A guess of a hard-margin SVM's support: Newton's method on the squared-hinge penalty.

The Goldfarb–Idnani solver (:mod:`skhybrid.transfer._dual_active_set`) may start from any
dual-feasible active set, and it takes the fewer steps the closer that set is to the final
support. The quadratic-penalty problem

    min ½‖w‖² + (μ/2) Σᵢ (1 − rᵢv)₊²,   rᵢ = yᵢ[xᵢ, 1],  v = [w, b],

replaces the constraints rᵢv ≥ 1 by a penalty; the rows it leaves violated, weighted by
μ(1 − rᵢv), tend to the hard-margin support and its multipliers as μ grows (Nocedal &
Wright, *Numerical Optimization*, 2nd ed., §17.1). Its objective is piecewise quadratic,
so Newton's method with the generalised Hessian diag(1, …, 1, 0) + μ R_SᵀR_S on the
violated rows S, and a backtracking line search, stops after finitely many steps (Keerthi
& DeCoste, "A modified finite Newton method for fast solution of large scale linear SVMs",
JMLR 6, 2005). Each step is one dense Cholesky factorisation (BLAS 3) where a
Goldfarb–Idnani step is a few memory-bound O(p²) updates, so a few Newton steps buy many
active-set steps. The guess only chooses where the exact solver starts: it never changes
the answer.
"""

import numpy as np
from scipy.linalg import blas, lapack

__all__ = ["squared_hinge_support"]


def squared_hinge_support(R, v0, *, penalty, free_last=True, max_iter=20):
    """Rows violated at the squared-hinge penalty's minimiser, most violated first.

    Parameters
    ----------
    R : ndarray of shape (m, p)
        Constraint rows rᵢ (each wants rᵢv ≥ 1).
    v0 : ndarray of shape (p,)
        Starting point (e.g. the previous fit's [w, b]).
    penalty : float
        μ > 0.
    free_last : bool, default=True
        The last coordinate (the intercept) is not regularised.
    max_iter : int, default=20
        Cap on Newton steps: the guess is only a start, so a cap costs steps of the exact
        solver, never accuracy.

    Returns
    -------
    rows : ndarray of int
        Rows with rᵢv < 1 at the last iterate, by decreasing violation.
    n_iter : int
        Newton steps taken.
    """
    m, p = R.shape
    mu = float(penalty)
    reg = np.ones(p)
    if free_last:
        reg[-1] = 0.0
    # A tiny curvature on the free intercept keeps the Hessian definite when the violated
    # rows are all of one class (their ∑ rᵢ then fixes no intercept).
    reg_h = reg + (1e-12 * mu * max(1.0, float(np.einsum("ij,ij->", R, R)) / max(m, 1))
                   if free_last else 0.0) * (1.0 - reg)
    v = np.array(v0, dtype=float)
    f = R @ v
    # The Hessian in single precision (half the work; it only picks the direction, and the
    # line search is in double): double precision takes over where a single-precision
    # factor fails or gives no descent direction (a large penalty, badly scaled rows).
    single = True
    rows_w, syrk, potrf, potrs = R.astype(np.float32), blas.ssyrk, lapack.spotrf, lapack.spotrs
    # R_SᵀR_S (upper triangle), kept current as rows enter and leave S: rank-k updates
    # (BLAS syrk) on the rows that changed, a fresh product when more than half did.
    gram, in_s = None, np.zeros(m, dtype=bool)
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        slack = 1.0 - f
        s_now = slack > 0
        enter, leave = s_now & ~in_s, in_s & ~s_now
        if gram is None or enter.sum() + leave.sum() >= s_now.sum():
            gram = (syrk(1.0, rows_w[s_now], trans=1) if s_now.any()
                    else np.zeros((p, p), rows_w.dtype, order="F"))
        else:
            for changed, sign in ((enter, 1.0), (leave, -1.0)):
                if changed.any():
                    gram = syrk(sign, rows_w[changed], beta=1.0, c=gram, trans=1,
                                overwrite_c=True)
        in_s = s_now
        grad = reg * v - mu * (R[s_now].T @ slack[s_now])
        hess = mu * gram
        hess.flat[:: p + 1] += reg_h
        chol, info = potrf(hess.astype(rows_w.dtype, copy=False), lower=False,
                           overwrite_a=True)
        step = None
        if not info:
            step, info = potrs(chol, -grad.astype(rows_w.dtype), lower=False)
            step = None if info else step.astype(float)
        slope = float(grad @ step) if step is not None else 0.0
        r_step = R @ step if slope < 0 else None
        t = _armijo(v, step, r_step, slack, reg, mu, slope) if slope < 0 else None
        if t is None:
            if not single:
                break  # (a guess: stop at the last iterate)
            single, gram = False, None
            rows_w, syrk, potrf, potrs = R, blas.dsyrk, lapack.dpotrf, lapack.dpotrs
            n_iter -= 1
            continue
        v += t * step
        f += t * r_step
        if t == 1.0 and np.array_equal(f < 1.0, s_now):
            break  # the minimiser of this piece keeps its violated set: the global minimiser
    slack = 1.0 - f
    rows = np.flatnonzero(slack > 0)
    return rows[np.argsort(-slack[rows], kind="stable")], n_iter


def _armijo(v, step, r_step, slack, reg, mu, slope):
    """Backtracking (Armijo) step length on the piecewise quadratic φ(v + t·step) (``r_step``
    = R·step), or None when no step of at least 2^-40 decreases it enough."""
    s = slack[slack > 0]
    phi0 = 0.5 * float(v @ (reg * v)) + 0.5 * mu * float(s @ s)
    t = 1.0
    for _ in range(40):
        vt = v + t * step
        st = np.maximum(slack - t * r_step, 0.0)
        if 0.5 * float(vt @ (reg * vt)) + 0.5 * mu * float(st @ st) <= phi0 + 1e-4 * t * slope:
            return t
        t *= 0.5
    return None
