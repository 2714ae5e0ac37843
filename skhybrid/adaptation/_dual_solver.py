"""Discrepancy minimisation on the d x d dual: Newton steps whose size ignores m.

Problem (5) of Bassily, Mohri & Suresh (AISTATS 2023, "BMS23"), the first stage of Cortes &
Mohri (TCS 2014):

    P(q) = ||M0 - sum_i q_i x_i x_i^T||_2 + (lam / 2) ||q||_2^2,    q in the simplex.

It has one unknown per public row, but the rows enter only through the d x d matrices
``A_i = x_i x_i^T``. Writing the spectral norm as ``max <Z, R>`` over the nuclear-norm ball
``||Z||_* <= 1`` and exchanging min and max (both sets are convex and compact) gives the
dual

    D(Z) = <Z, M0> - phi(s(Z)),   s_i(Z) = x_i^T Z x_i,
    phi(s) = max_{q in simplex} <s, q> - (lam / 2) ||q||^2,

a concave problem over symmetric d x d matrices: ``p = d (d + 1) / 2`` unknowns whatever m.
For ``lam > 0`` the inner maximiser is unique, ``q(Z) = (s(Z) - theta)_+ / lam`` with the
scalar theta fixed by ``sum q = 1`` (the Euclidean projection of ``s / lam`` onto the
simplex), and ``grad D(Z) = R(Z) = M0 - sum_i q_i(Z) A_i``.

Exact certificate. Every iterate Z is dual feasible and ``q(Z)`` primal feasible, so weak
duality bounds the suboptimality of ``q(Z)`` by a computable number,

    P(q(Z)) - P* <= P(q(Z)) - D(Z) = ||R||_2 - <Z, R> =: gap,    R = R(Z),

and, P being lam-strongly convex, ``||q(Z) - q*||_2 <= sqrt(2 gap / lam)``. The solver
stops on this gap; nothing else in it needs to be exact.

Newton's method on the dual. The constraint ``||Z||_* <= 1`` is lifted to
``Z = Z1 - Z2``, ``Z1, Z2 >= 0``, ``tr Z1 + tr Z2 <= 1`` and kept by a logarithmic barrier
(parameter ``2d + 1``) whose weight tau falls along the central path. D is piecewise
quadratic with the generalised Hessian ``-(1/lam) sum_{i in J} (a_i - a_J)(a_i - a_J)^T``
over the support J of q(Z) (``a_i = svec(A_i)``, ``a_J`` their mean over J); the p x p
matrix is kept up to date by adding and removing the rows that enter or leave J. When the
target moment lies inside the hull of the ``A_i`` (zero discrepancy at the optimum, the
usual case) the support is large and a handful of steps suffice. When it lies outside,
few rows carry weight, the Hessian has rank ``|J| - 1 < p`` and the piecewise model is
poor; if the plain iteration has not met the certificate after ``_PLAIN_STEPS`` steps, it
restarts with a Levenberg-Marquardt term that prices the directions in which rows
outside J would enter. The caller decides what to do when neither meets the certificate
(the estimator falls back to the SDP).

Cost per step: one to a few passes over the m rows (a chunked ``X @ Z``, ``O(m d^2)``) and
``O(m)`` for the scalar thresholds, plus ``O(k p^2)`` for the k rows entering or leaving the
Hessian and ``O(p^3)`` for the 2p x 2p solve. The number of steps does not grow with m in
the measurements (benchmarks/bench_adaptation_scale.py); no bound on it is claimed. Memory is
``O(m)`` beyond one copy of X.
"""

import math
import warnings

import numpy as np
from scipy import linalg
from sklearn.exceptions import ConvergenceWarning

from ._exact import _check_problem

__all__ = ["minimize_discrepancy_dual", "simplex_threshold"]

_CHUNK = 32768
_PLAIN_STEPS = 150  # undamped attempt; the damped one gets the rest of max_iter


# --------------------------------------------------------------------------- helpers


def simplex_threshold(s, lam):
    """The theta with ``sum_i max(s_i - theta, 0) = lam``, so ``(s - theta)_+ / lam`` sums to 1.

    Michelot's (1986) iteration, i.e. Newton's method on the convex, decreasing,
    piecewise-linear ``f(theta) = sum_i (s_i - theta)_+ - lam`` started left of its root:
    ``theta <- (sum_{s_i > theta} s_i - lam) / #{s_i > theta}`` is the root of the linear
    piece at theta, which lies below f, so theta increases to the root and stops exactly
    once the set ``{s_i > theta}`` no longer changes. Each step works on the entries still
    above theta only.

    Parameters
    ----------
    s : ndarray of shape (m,)
    lam : float
        ``lam > 0``.

    Returns
    -------
    theta : float
    """
    # Both starting values are <= the root: f(s_max - lam) >= 0 and, since
    # (s - t)_+ >= s - t, f((sum s - lam) / m) >= 0.
    theta = max(float(s.max()) - lam, (float(s.sum()) - lam) / s.size)
    v = s[s > theta]
    while True:
        theta = (float(v.sum()) - lam) / v.size
        keep = v > theta
        if keep.all():
            return theta
        v = v[keep]


def _svec_basis(d):
    """Upper-triangle indices and weights of the isometry svec: <Z, W>_F = svec(Z).svec(W)."""
    j, k = np.triu_indices(d)
    c = np.where(j == k, 1.0, math.sqrt(2.0))
    return j, k, c


def _logdet_hessian(W, j, k, c):
    """Hessian of ``-log det Z`` in svec coordinates, ``W = Z^{-1}``.

    ``K[a, b] = tr(W E_a W E_b) = (c_a c_b / 2) (W_jl W_km + W_jm W_kl)`` for the basis
    matrices ``E_a = c_a (e_j e_k^T + e_k e_j^T) / 2`` (a = (j, k), b = (l, m)).
    """
    return 0.5 * np.outer(c, c) * (W[np.ix_(j, j)] * W[np.ix_(k, k)]
                                   + W[np.ix_(j, k)] * W[np.ix_(k, j)])


class _Problem:
    """The rows, the svec basis and the chunked passes over the rows."""

    def __init__(self, M0, X, lam):
        self.M0 = M0
        self.X = np.ascontiguousarray(X)
        self.m, self.d = X.shape
        self.lam = lam
        self.j, self.k, self.c = _svec_basis(self.d)
        self.p = self.j.size
        self.e = (self.j == self.k).astype(float)  # svec(I)
        self.m0 = self.svec(M0)
        self.n_passes = 0
        self.r_hat2 = r_hat2 = float(np.max(np.einsum("ij,ij->i", self.X, self.X)))
        # Rounding level of the computed gap: below it the certificate is noise.
        self.floor = 1e4 * np.finfo(float).eps * (
            float(np.max(np.abs(linalg.eigvalsh(M0)))) + r_hat2)

    def svec(self, Z):
        return Z[self.j, self.k] * self.c

    def smat(self, z):
        Z = np.zeros((self.d, self.d))
        Z[self.j, self.k] = z / self.c
        return Z + np.triu(Z, 1).T

    def _chunks(self, n):
        for start in range(0, n, _CHUNK):
            yield slice(start, min(start + _CHUNK, n))

    def quadratic_forms(self, z):
        """``s_i = x_i^T Z x_i`` for every row (one pass)."""
        self.n_passes += 1
        Z = self.smat(z)
        s = np.empty(self.m)
        for sl in self._chunks(self.m):
            Xb = self.X[sl]
            s[sl] = np.einsum("ij,ij->i", Xb @ Z, Xb)
        return s

    def moment(self, w, idx=None):
        """``sum_i w_i x_i x_i^T`` over the rows idx (all rows when None)."""
        S = np.zeros((self.d, self.d))
        n = self.m if idx is None else idx.size
        for sl in self._chunks(n):
            Xb = self.X[sl] if idx is None else self.X[idx[sl]]
            S += Xb.T @ (w[sl, None] * Xb)
        return 0.5 * (S + S.T)

    def gram(self, idx, w=None):
        """``(sum w_i a_i a_i^T, sum w_i a_i)`` over the rows idx, ``a_i = svec(x_i x_i^T)``."""
        p = self.p
        G = np.zeros((p, p))
        g = np.zeros(p)
        for sl in self._chunks(idx.size):
            XbT = np.ascontiguousarray(self.X[idx[sl]].T)
            F = np.empty((p, XbT.shape[1]))
            for a in range(p):  # a loop over p columns, not over rows
                np.multiply(XbT[self.j[a]], XbT[self.k[a]], out=F[a])
            Fw = F if w is None else F * w[sl]
            G += F @ Fw.T
            g += Fw.sum(axis=1)
        cc = np.outer(self.c, self.c)
        return G * cc, g * self.c

    def certificate(self, z, s, lam=None):
        """q(Z) of the exact problem, R(Z), the duality gap and the objective P(q(Z))."""
        lam = self.lam if lam is None else lam
        theta = simplex_threshold(s, lam)
        idx = np.flatnonzero(s > theta)
        qJ = (s[idx] - theta) / lam
        R = self.M0 - self.moment(qJ, idx)
        normR = float(np.max(np.abs(linalg.eigvalsh(R))))
        gap = normR - float(z @ self.svec(R))
        objective = normR + 0.5 * lam * float(qJ @ qJ)
        return {"theta": theta, "idx": idx, "qJ": qJ, "R": R, "normR": normR,
                "gap": gap, "objective": objective}


class _Lifted:
    """The barrier ``log det Z1 + log det Z2 + log(1 - tr Z1 - tr Z2)``, ``Z1 = Z + Z2``."""

    def __init__(self, problem):
        self.pb = problem

    def value(self, z, z2):
        """``(value, L1, L2, s0)`` or None outside the domain."""
        pb = self.pb
        s0 = 1.0 - float(pb.e @ z) - 2.0 * float(pb.e @ z2)
        if s0 <= 0:
            return None
        try:
            L1 = linalg.cholesky(pb.smat(z + z2), lower=True)
            L2 = linalg.cholesky(pb.smat(z2), lower=True)
        except linalg.LinAlgError:
            return None
        val = 2.0 * (np.log(np.diag(L1)).sum() + np.log(np.diag(L2)).sum()) + math.log(s0)
        return val, L1, L2, s0

    def derivatives(self, bar, tau):
        """Gradient and Hessian of ``-tau * barrier`` in (z, z2)."""
        pb = self.pb
        _, L1, L2, s0 = bar
        eye = np.eye(pb.d)
        W1 = linalg.cho_solve((L1, True), eye)
        W2 = linalg.cho_solve((L2, True), eye)
        w1, w2 = pb.svec(W1), pb.svec(W2)
        K1 = _logdet_hessian(W1, pb.j, pb.k, pb.c)
        K2 = _logdet_hessian(W2, pb.j, pb.k, pb.c)
        e = pb.e
        Ee = np.outer(e, e) / s0**2
        grad = tau * np.concatenate([-w1 + e / s0, -(w1 + w2) + 2.0 * e / s0])
        hess = tau * np.block([[K1 + Ee, K1 + 2.0 * Ee], [K1 + 2.0 * Ee, K1 + K2 + 4.0 * Ee]])
        return grad, hess

    def max_step(self, bar, dz, dz2):
        """Largest t keeping ``(z + t dz, z2 + t dz2)`` in the domain."""
        pb = self.pb
        _, L1, L2, s0 = bar
        t = math.inf
        for L, dZ in ((L1, pb.smat(dz + dz2)), (L2, pb.smat(dz2))):
            Li = linalg.solve_triangular(L, np.eye(pb.d), lower=True)
            lo = float(linalg.eigvalsh(Li @ dZ @ Li.T).min())
            if lo < 0:
                t = min(t, -1.0 / lo)
        ds0 = -float(pb.e @ dz) - 2.0 * float(pb.e @ dz2)
        if ds0 < 0:
            t = min(t, -s0 / ds0)
        return t


def _newton_direction(grad, hess):
    """Solve ``hess step = -grad`` after a symmetric diagonal scaling (block scales differ)."""
    dsc = 1.0 / np.sqrt(np.maximum(np.diag(hess), 1e-300))
    hs = hess * dsc[:, None] * dsc[None, :]
    try:
        return -dsc * linalg.cho_solve(linalg.cho_factor(hs, lower=True), dsc * grad)
    except linalg.LinAlgError:
        hs[np.diag_indices_from(hs)] += 1e-12
        return -dsc * linalg.lstsq(hs, dsc * grad)[0]


# --------------------------------------------------------------------------- solver


def minimize_discrepancy_dual(M0, X_src, lam=1e-3, *, tol=1e-6, max_iter=400,
                              return_info=False):
    """Solve BMS23 problem (5) by Newton's method on its d x d dual.

    Minimises ``||M0 - sum_i q_i x_i x_i^T||_2 + (lam/2) ||q||_2^2`` over the simplex, the
    problem :func:`~skhybrid.adaptation._exact.minimize_discrepancy_cvxpy` solves as an SDP
    with one variable per row. Here the unknown is the dual matrix Z (``d (d+1)/2``
    numbers); the rows enter through a few passes per step. The derivation, the
    certificate and the cost are in :mod:`skhybrid.adaptation._dual_solver`.

    Parameters
    ----------
    M0 : array-like of shape (d, d)
        Target second moment (symmetric).
    X_src : array-like of shape (m, d)
        Source rows.
    lam : float, default=1e-3
        Ridge on q; must be > 0 (with ``lam = 0`` the weights are not unique; use the SDP).
    tol : float, default=1e-6
        Stop once the duality gap, an upper bound on ``P(q) - P*``, is at most
        ``tol * P(q)``, or at most ``1e4 * eps * (||M0||_2 + max_i ||x_i||^2)`` (the
        rounding level of the computed gap), whichever is larger.
    max_iter : int, default=400
        Newton steps (both phases together).
    return_info : bool, default=False
        Also return a dict with ``gap``, ``objective`` (``P(q)``), ``weights_error_bound``
        (``sqrt(2 gap / lam)``, a bound on ``||q - q*||_2``), ``n_iter``, ``n_passes``
        (passes over the rows), ``phase`` (1 plain, 2 damped: where it stopped),
        ``converged``.

    Returns
    -------
    q : ndarray of shape (m,)
        Weights in the simplex.
    info : dict
        Only with ``return_info=True``.
    """
    M0, X_src, lam = _check_problem(M0, X_src, lam)
    if lam <= 0:
        raise ValueError(
            "lam must be > 0 for the dual solver (with lam = 0 the optimal weights are not "
            "unique); pass lam > 0 or use minimize_discrepancy(..., method='cvxpy')."
        )
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}.")
    if not (isinstance(max_iter, int) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}.")
    pb = _Problem(M0, X_src, lam)
    run = _Run(pb, tol)
    run.semismooth(min(_PLAIN_STEPS, max_iter), damped=False)
    if not run.converged and run.n_iter < max_iter:
        run.phase = 2
        run.semismooth(max_iter - run.n_iter, damped=True)
    gap, objective, idx, qJ = run.best
    if not run.converged:
        warnings.warn(
            f"minimize_discrepancy_dual stopped after max_iter={max_iter} Newton steps with "
            f"duality gap {gap:.3g} (target {run.target(objective):.3g}); increase "
            "max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    q = np.zeros(pb.m)
    q[idx] = qJ
    q /= q.sum()  # removes the rounding of theta (relative 1e-16)
    if not return_info:
        return q
    return q, {
        "gap": float(gap),
        "objective": float(objective),
        "weights_error_bound": math.sqrt(2.0 * max(gap, 0.0) / lam),
        "n_iter": run.n_iter,
        "n_passes": pb.n_passes,
        "phase": run.phase,
        "converged": run.converged,
    }


class _Run:
    """State of one solve: the best certified iterate and the stopping rule."""

    def __init__(self, pb, tol):
        self.pb = pb
        self.tol = tol
        self.lifted = _Lifted(pb)
        self.best = None
        self.converged = False
        self.n_iter = 0
        self.phase = 1

    def target(self, objective):
        return max(self.tol * objective, self.pb.floor)

    def record(self, cert):
        """Keep the iterate with the smallest gap; True once it meets the target."""
        if self.best is None or cert["gap"] < self.best[0]:
            self.best = (cert["gap"], cert["objective"], cert["idx"], cert["qJ"])
        self.converged = cert["gap"] <= self.target(cert["objective"])
        return self.converged

    def _start(self):
        pb = self.pb
        z = np.zeros(pb.p)
        z2 = pb.e / (4.0 * pb.d)  # Z1 = Z2 = I / (4d): tr Z1 + tr Z2 = 1/2
        return z, z2, self.lifted.value(z, z2)

    def _line_search(self, z, z2, bar, dz, dz2, F0, slope, tau, evaluate):
        """Largest feasible step (capped at 1), then Armijo backtracking on F."""
        t = min(1.0, 0.99 * self.lifted.max_step(bar, dz, dz2))
        # Below the rounding level of F the Armijo test is noise: take the step (the
        # certificate, not F, decides when to stop).
        resolvable = slope > 64.0 * np.finfo(float).eps * (abs(F0) + 1.0)
        while True:
            z_new, z2_new = z + t * dz, z2 + t * dz2
            bar_new = self.lifted.value(z_new, z2_new)
            if bar_new is not None:
                val, extra = evaluate(z_new)
                F_new = val - tau * bar_new[0]
                if not resolvable or F_new <= F0 - 1e-4 * t * slope or t < 1e-10:
                    return t, z_new, z2_new, bar_new, F_new, extra
            t *= 0.5

    def semismooth(self, n_steps, damped):
        """Newton on ``F = -D(z) - tau * barrier`` with D's generalised Hessian.

        ``damped=True`` adds a Levenberg-Marquardt term ``(mu / lam) C`` to the z-block,
        with C the covariance of the ``a_i`` (over at most 20,000 evenly spaced rows):
        when the support J is small, D's Hessian has rank ``|J| - 1 < p`` and the undamped
        step runs far along directions where rows outside J would enter; the damping
        prices those directions like one more row. mu shrinks after a full step and grows
        after a cut one. Neither the value nor the gradient changes, so neither does the
        solution or the certificate.
        """
        pb, lam = self.pb, self.pb.lam
        z, z2, bar = self._start()
        nu = 2.0 * pb.d + 1.0

        def evaluate(zz):
            s = pb.quadratic_forms(zz)
            theta = simplex_threshold(s, lam)
            u = s - theta
            u = u[u > 0]
            return 0.5 * float(u @ u) / lam + theta - float(zz @ pb.m0), s

        F_data, s = evaluate(z)
        cert = pb.certificate(z, s)
        tau = max(cert["normR"], pb.floor) / nu
        support = _SupportGram(pb)
        if damped:
            sub = np.unique(np.linspace(0, pb.m - 1, min(pb.m, 20000)).astype(np.intp))
            Gs, gs = pb.gram(sub)
            C = (Gs / sub.size - np.outer(gs, gs) / sub.size**2) / lam
            mu = 1.0
        for _ in range(n_steps):
            if self.record(cert):
                return
            self.n_iter += 1
            mask = np.zeros(pb.m, dtype=bool)
            mask[cert["idx"]] = True
            G, g = support.update(mask)
            grad, hess = self.lifted.derivatives(bar, tau)
            grad[:pb.p] -= pb.svec(cert["R"])
            hess[:pb.p, :pb.p] += (G - np.outer(g, g) / cert["idx"].size) / lam
            if damped:
                hess[:pb.p, :pb.p] += mu * C
            step = _newton_direction(grad, hess)
            slope = -float(grad @ step)
            t, z, z2, bar, F_new, s = self._line_search(
                z, z2, bar, step[:pb.p], step[pb.p:], F_data - tau * bar[0], slope, tau,
                evaluate)
            F_data = F_new + tau * bar[0]
            if damped:
                mu = max(mu / 8.0, 1e-12) if t == 1.0 else min(mu * 8.0, 1e12)
            new = pb.certificate(z, s)
            # Move along the path when the step stayed on one piece of D and left the
            # iterate nearly centred (Newton decrement of F / tau at most 1): tau falls
            # tenfold, or to a tenth of the gap per unit of barrier parameter.
            if slope <= tau and t >= 0.5 and np.array_equal(new["idx"], cert["idx"]):
                tau = max(min(0.1 * tau, new["gap"] / (10.0 * nu)), 1e-300)
            cert = new
        self.record(cert)


class _SupportGram:
    """``sum_{i in J} a_i a_i^T`` and ``sum_{i in J} a_i``, updated as J changes."""

    def __init__(self, pb):
        self.pb = pb
        self.mask = None
        self.G = self.g = None

    def update(self, mask):
        if self.mask is not None:
            added = np.flatnonzero(mask & ~self.mask)
            removed = np.flatnonzero(self.mask & ~mask)
            if added.size + removed.size < int(mask.sum()):
                if added.size:
                    Ga, ga = self.pb.gram(added)
                    self.G = self.G + Ga
                    self.g = self.g + ga
                if removed.size:
                    Gr, gr = self.pb.gram(removed)
                    self.G = self.G - Gr
                    self.g = self.g - gr
                self.mask = mask
                return self.G, self.g
        self.G, self.g = self.pb.gram(np.flatnonzero(mask))
        self.mask = mask
        return self.G, self.g
