"""An exact hard-margin linear SVM for linearly separable data.

KS Appendix C runs STR with a "near-hard-margin" SVM (C = 10³⁰) on ≈48k × 500 subsamples.
On separable data that *is* the hard-margin SVM

    min ½‖w‖²   subject to   yᵢ(⟨w, xᵢ⟩ + b) ≥ 1 for every i,

whose solution is fixed by a support set of about d + 1 points. Generic soft-margin solvers
(liblinear with a huge C) take minutes per fit and do not converge. Two exact solvers:

* ``"active-set"`` (default): the Goldfarb–Idnani dual method
  (:mod:`skhybrid.transfer._dual_active_set`) adds violated constraints one at a time at
  O(d²) per step. The unregularised intercept is handled by a feature column of constant
  ``c`` (b = c·v_b, penalty ½(b/c)², negligible), after which the KKT system on the found
  support is re-solved with b unpenalised and the optimality conditions are checked on
  every row; should they fail, the interior-point solver below finishes from that support.
* ``"interior-point"``: a small QP on a working set is solved to machine precision (a dense
  primal-dual interior-point method), the most violated points are added, and the loop
  stops when every margin is ≥ 1 − tol.

Both return the unique optimum; warm starting (choosing the first candidate rows from the
previous hyperplane) changes the work done, never the answer.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.linalg import LinAlgWarning, lu_factor, lu_solve
from sklearn.base import BaseEstimator

from .._threads import single_blas_thread, single_blas_thread_if_small
from .._validation import check_binary_targets
from ..utils._sklearn_compat import (
    Interval,
    LinearClassifierMixin,
    StrOptions,
    check_sample_weight,
    validate_data,
    validate_params,
)
from ._dual_active_set import min_norm_dual_active_set
from ._squared_hinge import squared_hinge_support

__all__ = ["HardMarginLinearSVC", "NotSeparableError"]

#: κ in the squared-hinge guess's penalty μ = κ / mean ‖rᵢ‖² (warm fits): larger guesses
#: fewer wrong rows but takes more Newton steps. KS App. C, d = 500: κ = 3·10⁴, ~15 steps.
_GUESS_KAPPA = 3e4


class NotSeparableError(ValueError):
    """The training data are not linearly separable: no hard-margin SVM exists.

    A ``ValueError``: the fit cannot return a model. A soft-margin learner (or STR's
    subsampling of a separable subset) is the way out.
    """


# What both solvers' refusals add after their reason.
_NOT_SEPARABLE_ADVICE = (
    ", or too ill-conditioned for double precision (features on very different scales: "
    "standardise X, e.g. with StandardScaler, and retry): HardMarginLinearSVC cannot fit "
    "them. Use a soft-margin learner such as sklearn.svm.LinearSVC, or check the labels.")


def _solve_working_set(Z, fit_intercept, max_iter=100):
    """Exact hard-margin QP on the rows of ``Z = yᵢ·[xᵢ, 1]``: min ½‖w‖² s.t. Z v ≥ 1.

    A primal-dual interior-point method (Mehrotra predictor-corrector) with slacks
    ``s = Z v − 1 ≥ 0`` and multipliers λ ≥ 0. Each Newton step solves the normal
    equations ``(P + Zᵀ diag(λ/s) Z) Δv = r`` of size ``n_features + 1`` with a dense
    Cholesky (BLAS), so a working set of m rows costs O(m d²) per step; P = diag(1, …, 1, 0)
    leaves the intercept unregularised. Stops at relative residuals ≲ 1e-9 and a relative gap ≤ 1e-12.
    Returns ``(v, λ)``; raises :class:`NotSeparableError` when the multipliers diverge
    (the QP is infeasible, i.e. the rows are not separable).
    """
    m, p = Z.shape
    d = p - 1 if fit_intercept else p
    pdiag = np.r_[np.ones(d), np.zeros(p - d)]
    v = np.zeros(p)
    fallback = None
    s = np.ones(m)
    lam = np.ones(m)
    for _ in range(max_iter):
        Zv = Z @ v
        r_p = Zv - s - 1.0                      # primal residual
        r_d = pdiag * v - Z.T @ lam             # dual residual
        mu = float(s @ lam) / m
        scale = 1.0 + float(np.linalg.norm(v))
        # Residuals relative to the problem's scale (‖w‖ and the largest multiplier); the
        # normal equations' conditioning floors the dual residual near 1e-10 of that scale.
        if (np.linalg.norm(r_p) <= 1e-10 * (1 + np.sqrt(m))
                and np.linalg.norm(r_d) <= 1e-9 * scale * (1 + lam.max())
                and mu <= 1e-12 * scale ** 2):
            return v, lam
        if (np.linalg.norm(r_p) <= 1e-10 * (1 + np.sqrt(m)) and mu <= 1e-12 * scale ** 2
                and np.linalg.norm(r_d) <= 1e-6 * scale * (1 + lam.max())):
            fallback = (v, lam)  # converged up to the normal equations' rounding floor
        if lam.max() > 1e13 * scale ** 2:
            break
        D = lam / s
        H = (Z.T * D) @ Z
        H[np.diag_indices(p)] += pdiag + 1e-14 * (1.0 + np.trace(H) / p)
        try:
            L = np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            break

        def newton(r_c, r_d=r_d, r_p=r_p, D=D, L=L, s=s, lam=lam):
            rhs = -r_d - Z.T @ (D * r_p + r_c / s)
            dv = np.linalg.solve(L.T, np.linalg.solve(L, rhs))
            dlam = -D * (r_p + Z @ dv) - r_c / s
            ds = (-r_c - s * dlam) / lam
            return dv, ds, dlam

        def step(x, dx):
            neg = dx < 0
            return min(1.0, float(np.min(-x[neg] / dx[neg]))) if neg.any() else 1.0

        # predictor (affine scaling), then Mehrotra's centring + corrector
        dv, ds, dlam = newton(s * lam)
        a = min(step(s, ds), step(lam, dlam))
        mu_aff = float((s + a * ds) @ (lam + a * dlam)) / m
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        dv, ds, dlam = newton(s * lam + ds * dlam - sigma * mu)
        a = 0.995 * min(step(s, ds), step(lam, dlam))
        v, s, lam = v + a * dv, s + a * ds, lam + a * dlam
    if fallback is not None:
        return fallback
    raise NotSeparableError(
        "The training data are not linearly separable (the hard-margin QP on a subset of the "
        f"rows has no solution){_NOT_SEPARABLE_ADVICE}"
    )


def _polish(Z, v, lam, fit_intercept):
    """Re-solve the KKT system on the active constraints to remove the IPM's last digits.

    With the active set A (λ clearly positive) fixed, the optimum solves the equality QP
    min ½‖w‖² s.t. Z_A v = 1, i.e. [[P, Z_Aᵀ], [Z_A, 0]] [v; −λ_A] = [0; 1] (if it is
    singular — a degenerate support — the IPM point is kept). The polished point is kept only if it is still feasible with λ_A ≥ 0.
    """
    m, p = Z.shape
    d = p - 1 if fit_intercept else p
    act = np.flatnonzero(lam > 1e-6 * lam.max())
    Za = Z[act]
    try:
        if act.size == p:
            # a vertex (p active rows, as on App. C data): Z_A v = 1 fixes v, and
            # Z_Aᵀλ = Pv the multipliers; one LU instead of the 2p × 2p system
            with warnings.catch_warnings():  # singular: non-finite, caught below
                warnings.simplefilter("ignore", LinAlgWarning)
                lu = lu_factor(Za, check_finite=False)
            v_new = lu_solve(lu, np.ones(p), check_finite=False)
            pv = v_new.copy()
            pv[d:] = 0.0
            lam_a = lu_solve(lu, pv, trans=1, check_finite=False)
            sol = np.r_[v_new, lam_a]
        else:
            K = np.zeros((p + act.size, p + act.size))
            K[np.arange(d), np.arange(d)] = 1.0
            K[:p, p:] = Za.T
            K[p:, :p] = Za
            rhs = np.r_[np.zeros(p), np.ones(act.size)]
            sol = np.linalg.solve(K, rhs)
            sol[p:] *= -1.0
    except (np.linalg.LinAlgError, ValueError):
        return v, lam
    if not np.all(np.isfinite(sol)):
        return v, lam
    v_new, lam_a = sol[:p], sol[p:]
    if np.all(lam_a >= 0) and np.all(Z @ v_new >= 1.0 - 1e-9):
        lam_new = np.zeros(m)
        lam_new[act] = lam_a
        return v_new, lam_new
    return v, lam


def _first_pool(margins, s, pool_size):
    """The first working set / pool: the rows of smallest margin, most violated first,
    with both classes represented."""
    n = margins.size
    W = np.argpartition(margins, pool_size - 1)[:pool_size] if pool_size < n else np.arange(n)
    W = W[np.argsort(margins[W], kind="stable")]
    for cls in (1.0, -1.0):
        if not np.any(s[W] == cls):
            idx = np.flatnonzero(s == cls)
            W = np.r_[W, idx[np.argmin(margins[idx])]]
    return W


class _SignedRows:
    """The constraint rows Z = diag(s)·[X, c·1] (or diag(s)·X) without forming Z.

    The active-set solver forms only the rows it asks for (``Z[rows]``) and takes products
    ``Z @ v`` with all of them, so no n × (d + 1) copy of the data is made.
    """

    def __init__(self, X, s, c=None):
        self.X, self.s, self.c = X, s, c
        self.shape = (X.shape[0], X.shape[1] + (c is not None))

    def __getitem__(self, rows):
        Xi, si = self.X[rows], self.s[rows]
        if self.c is None:
            return si[:, None] * Xi
        out = np.empty((Xi.shape[0], self.shape[1]))
        np.multiply(Xi, si[:, None], out=out[:, :-1])
        out[:, -1] = self.c * si
        return out

    def __matmul__(self, v):
        d = self.X.shape[1]
        f = self.X @ v[:d]
        if self.c is not None:
            f += self.c * v[d]
        return self.s * f


class HardMarginLinearSVC(LinearClassifierMixin, BaseEstimator):
    """Exact hard-margin linear SVM for linearly separable data (not private).

    Not differentially private: a non-private base learner for
    :class:`SubsampleTestReweigh` at ``epsilon=np.inf`` (KS App. C) and a baseline. Its
    ``support_`` names training rows and its hyperplane is fixed by a few of them; do not
    release a fit on private rows.

    Solves min ½‖w‖² s.t. yᵢ(⟨w, xᵢ⟩ + b) ≥ 1 exactly — the limit C → ∞ of
    ``SVC(kernel="linear", C=C)`` on separable data, the base learner of Kohen & Sheffet
    Appendix C. The default solver is the Goldfarb–Idnani dual active-set method: it adds
    violated constraints one at a time, tracking a pool of candidate rows (first the
    ``working_set_size`` smallest margins under a starting hyperplane; when the pool is
    satisfied and another row is violated, the ``batch_size`` other rows of smallest
    margin join it) and stops when every margin is ≥ 1 − ``tol``.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Fit an unregularised intercept b (as ``SVC``; unlike liblinear's regularised one).
    tol : float, default=1e-6
        A fit is accepted when every margin yᵢ(⟨w, xᵢ⟩ + b) is ≥ 1 − tol.
    max_iter : int, default=200
        Cap on rounds (scans of all rows); a :class:`NotSeparableError` is raised if
        reached.
    working_set_size : int or None, default=None
        Size of the first pool / working set (the points of smallest margin under the
        starting hyperplane). ``None``: ``4 * (n_features + 1)`` for the active-set
        solver, ``2 * (n_features + 1)`` for the interior-point solver.
    batch_size : int or None, default=None
        Points added per round: the active-set solver adds the points of smallest margin
        outside its pool (violated first, then nearly violated), the interior-point
        solver the most violated ones. ``None``: ``(n_features + 1) // 2`` for the
        active-set solver, ``n_features + 1`` for the interior-point solver.
    warm_start : bool, default=False
        Start from the previous fit's hyperplane (the first pool is the new data's points
        of smallest margin under it) instead of the difference of class means. The
        active-set solver also starts from a guess of the support rather than from an
        empty active set: the pool's rows that Newton's method on the squared-hinge
        penalty, run from that hyperplane, leaves violated (with a pool of fewer than
        ``2 * (n_features + 1)`` rows: the previous support vectors found among the new
        rows, completed to ``n_features + 1`` rows by the pool's most violated ones).
        The solver keeps the guessed rows whose multipliers come out non-negative and
        completes them once by the rows most violated at their optimum.
        Changes only the work done: the solution is the same unique optimum (should
        float64 lose the warm path, as on features whose scales span 12 orders of
        magnitude, the fit starts again from the class means before raising).
    solver : {"active-set", "interior-point"}, default="active-set"
        ``"active-set"``: Goldfarb–Idnani, O(d²) per added or dropped constraint (on KS
        App. C data at 48,022 rows × 500 features, one BLAS thread: about 15(d + 1)
        steps, ≈2 s, from the class means; warm-started in STR's loop, 13–16 Newton
        steps for the guess and 0.8–1.3(d + 1) active-set steps, ≈0.25 s).
        ``"interior-point"``: working-set rounds, each a dense primal-dual interior-point
        QP from scratch (≈35 s on the same data). Both return the unique optimum.
    verbose : int, default=0
        Print progress messages (``0``: silent).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    classes_ : ndarray of shape (2,)
    support_ : ndarray of int
        Indices of the support vectors (points with a positive dual multiplier).
    dual_coef_ : ndarray of shape (1, n_support)
        yᵢαᵢ for the support vectors, as in ``SVC``.
    n_iter_ : int
        Rounds run (scans of all rows).
    n_features_in_ : int

    Notes
    -----
    *Sample weights.* The hard-margin solution depends only on which points carry a
    positive weight: rows with ``sample_weight == 0`` are dropped, positive weights are
    ignored. (In STR's ``reweighting="sample_weight"`` mode this learner therefore returns
    the source-only fit every round — :ref:`notes_transfer` — use subsampling instead.)

    *Non-separable data* raise :class:`NotSeparableError` (a ``ValueError``): there is no
    hard-margin SVM to return.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.transfer import HardMarginLinearSVC
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [3.0, 1.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> clf = HardMarginLinearSVC().fit(X, y)
    >>> np.round(clf.coef_, 6)
    array([[ 1., -1.]])
    >>> clf.predict([[0.5, 0.0], [2.5, 0.0]])
    array([0, 1])
    """

    # The fit depends only on the set of distinct rows (repeated rows are the same
    # constraint): SubsampleTestReweigh hands it each drawn row once. Read from this
    # class only (not inherited): a subclass that changes fit must declare it again.
    _fit_depends_on_distinct_rows_only = True
    # Nor does a fit keep a view of its X (SubsampleTestReweigh may then refill one buffer
    # with each round's rows).
    _fit_keeps_no_view_of_X = True

    _parameter_constraints = {
        "fit_intercept": ["boolean"],
        "tol": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "working_set_size": [Interval(Integral, 1, None, closed="left"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "warm_start": ["boolean"],
        "solver": [StrOptions({"active-set", "interior-point"})],
        "verbose": ["verbose"],
    }

    def __init__(self, *, fit_intercept=True, tol=1e-6, max_iter=200, working_set_size=None,
                 batch_size=None, warm_start=False, solver="active-set", verbose=0):
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.working_set_size = working_set_size
        self.batch_size = batch_size
        self.warm_start = warm_start
        self.verbose = verbose

    def _is_warm(self, n_features):
        return (self.warm_start and hasattr(self, "coef_")
                and self.coef_.shape[1] == n_features)

    def _start(self, X, s, cold=False):
        """Starting hyperplane: the previous fit (warm) or the difference of class means."""
        if not cold and self._is_warm(X.shape[1]):
            return self.coef_.ravel(), float(self.intercept_[0])
        pos, neg = X[s > 0], X[s < 0]
        w = pos.mean(axis=0) - neg.mean(axis=0)
        b = -0.5 * float(w @ (pos.mean(axis=0) + neg.mean(axis=0))) if self.fit_intercept else 0.0
        return w, b

    def fit(self, X, y, sample_weight=None):
        """Fit the hard-margin SVM.

        BLAS runs on one thread with the active-set solver, and up to 256 features with
        the interior-point solver (see :mod:`skhybrid._threads`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows.
        y : array-like of shape (n_samples,)
            Two classes.
        sample_weight : array-like of shape (n_samples,), default=None
            Only zero vs positive matters (see Notes).

        Returns
        -------
        self : HardMarginLinearSVC
            The fitted estimator.

        Raises
        ------
        NotSeparableError
            If the data are not linearly separable.
        """
        if self.solver == "active-set":
            # A loop of thousands of p x p products and LAPACK updates on one factor of a
            # few MB: BLAS threads only hand work off (and numpy's and scipy's separate
            # OpenBLAS pools contend), so one thread at any width (App. C, d = 500, two
            # threads per pool: 3-18x slower in CPU time).
            threads = single_blas_thread()
        else:
            shape = getattr(X, "shape", ())  # before validation: no numpy call on X
            threads = single_blas_thread_if_small(shape[1] if len(shape) == 2 else 0)
        with threads:
            return self._fit(X, y, sample_weight)

    def _fit(self, X, y, sample_weight):
        validate_params(self)
        X, y = validate_data(self, X, y, dtype=np.float64, reset=True)
        classes, _ = check_binary_targets(y, type(self).__name__)
        sw = check_sample_weight(sample_weight, X, dtype=np.float64)
        if np.any(sw < 0):
            raise ValueError("sample_weight must be non-negative for HardMarginLinearSVC.")
        keep = np.flatnonzero(sw > 0)
        Xk = X if keep.size == X.shape[0] else X[keep]  # (no copy of a large X if unweighted)
        s = np.where(y[keep] == classes[1], 1.0, -1.0)
        if s.size == 0 or s.min() == s.max():
            raise ValueError("sample_weight leaves a single class with positive weight; "
                             "HardMarginLinearSVC needs both classes.")
        n, d = Xk.shape
        active_set = self.solver == "active-set"
        # Defaults measured on KS App. C data (d = 500): a larger first pool and smaller
        # batches take fewer Goldfarb–Idnani steps; the interior-point rounds keep theirs.
        pool_size = min(n, self.working_set_size or (4 if active_set else 2) * (d + 1))
        batch = self.batch_size or (max(1, (d + 1) // 2) if active_set else d + 1)

        warm = self._is_warm(d)
        try:
            W, z, v, rounds = self._solve(Xk, s, pool_size, batch, warm)
        except NotSeparableError:
            if not warm:
                raise
            # On badly scaled features (column scales 1e-6 to 1e6) float64 can lose a warm
            # path that the cold one survives (red team 23): the cold fit decides.
            W, z, v, rounds = self._solve(Xk, s, pool_size, batch, False)
        w, b = (v[:-1], float(v[-1])) if self.fit_intercept else (v, 0.0)
        on = z > 1e-9 * max(1.0, z.max())
        self.coef_ = w.reshape(1, -1).copy()
        self.intercept_ = np.array([b], dtype=float)
        self.classes_ = classes
        self.support_ = keep[W[on]]
        self.dual_coef_ = (s[W[on]] * z[on]).reshape(1, -1)
        self.n_iter_ = rounds
        return self

    def _solve(self, Xk, s, pool_size, batch, warm):
        """(support candidates, multipliers, v, rounds) from the previous fit (``warm``)
        or from the class means."""
        d = Xk.shape[1]
        w, b = self._start(Xk, s, cold=not warm)
        margins = s * (Xk @ w + b)
        start = None
        W = _first_pool(margins, s, pool_size)
        rounds, z = 0, None
        if self.solver == "active-set":
            if warm and W.size >= 2 * (d + 1):
                # The first active set is guessed by Newton's method on the squared-hinge
                # penalty over the pool, from the previous hyperplane; the solver keeps the
                # rows whose multipliers come out non-negative and refills once. (KS App. C,
                # d = 500: ~13-16 Newton steps find ~480 of the 501 final support rows, and
                # Goldfarb-Idnani takes 400-700 steps instead of ~2,400 from the previous
                # support.) A Newton step costs O(d³), so a pool of fewer than 2(d + 1)
                # rows starts from the previous support instead.
                start = W[self._support_guess(Xk[W], s[W], w, b)]
            elif warm:
                # The previous fit's support vectors that are rows of this data (margin 1
                # under the previous hyperplane), completed to d + 1 rows by the pool's
                # most violated ones.
                start = np.flatnonzero(np.abs(margins - 1.0) <= 1e-8)
                extra = W[~np.isin(W, start)][:max(0, d + self.fit_intercept - start.size)]
                start = np.r_[start, extra]
            W, z, v, rounds = self._active_set(Xk, s, W, batch, start)
        if z is None:  # interior point, or finishing an active-set run that failed its check
            W, z, v, more = self._interior_point(Xk, s, W, batch)
            rounds += more
        return W, z, v, rounds

    def _support_guess(self, X, s, w, b):
        """Rows of (X, s) violated at the squared-hinge penalty's minimiser, most violated
        first, from the hyperplane (w, b) (:func:`squared_hinge_support`)."""
        R = s[:, None] * (np.hstack([X, np.ones((X.shape[0], 1))]) if self.fit_intercept
                          else X)
        # μ = κ / mean ‖rᵢ‖²: scale-free (rows × a, v × 1/a); κ measured on KS App. C data.
        mean_sq = float(np.einsum("ij,ij->", R, R)) / R.shape[0]
        rows, _ = squared_hinge_support(
            R, np.r_[w, b] if self.fit_intercept else np.asarray(w, dtype=float),
            penalty=_GUESS_KAPPA / max(mean_sq, np.finfo(float).tiny),
            free_last=self.fit_intercept)
        return rows

    def _rows(self, X, s, idx):
        """Constraint rows yᵢ·[xᵢ, 1] (or yᵢ·xᵢ) of the points ``idx``."""
        Xi = X[idx]
        return s[idx, None] * (np.hstack([Xi, np.ones((len(idx), 1))])
                               if self.fit_intercept else Xi)

    def _active_set(self, X, s, pool, batch, start=None):
        """Goldfarb–Idnani on all rows; returns (support, multipliers, v, scans).

        Returns ``(pool ∪ support, None, None, scans)`` when the re-solved KKT point fails
        the optimality check, for the interior-point solver to finish from there.
        """
        n, d = X.shape
        c = None
        if self.fit_intercept:
            # b = c·v_b: the intercept's penalty ½(b/c)² is ~1e-6 of ½‖w‖² or less, and the
            # KKT re-solve below removes it exactly. (c only scales: an rms row norm over
            # at most ~1000 evenly spaced rows is enough.)
            Xs = X[::max(1, n // 1000)]
            c = 1e3 * max(1.0, float(np.sqrt(np.einsum("ij,ij->", Xs, Xs) / Xs.shape[0])))
        Z = _SignedRows(X, s, c)
        try:
            v, act, u, steps, scans = min_norm_dual_active_set(
                Z, pool=pool, start=start, tol=self.tol, growth=batch,
                max_scans=self.max_iter)
        except ValueError as exc:
            reason = ("the hard-margin constraints are infeasible"
                      if str(exc) == "the constraints are infeasible"
                      else f"the active-set solver stopped: {exc}")
            raise NotSeparableError(
                f"The training data are not linearly separable ({reason}){_NOT_SEPARABLE_ADVICE}"
            ) from exc
        if self.verbose:
            print(f"[HardMarginLinearSVC] active set: {steps} steps, {scans} scans, "
                  f"{act.size} support vectors, |w| = {np.linalg.norm(v[:d]):.4g}")
        if not self.fit_intercept:
            # KKT stationarity, v = Σ uᵢzᵢ: the solver keeps it by updates, which float64
            # loses on badly scaled features (red team 23: column scales 1e-5 to 1e6 left a
            # residual of 8-19 % of ‖v‖ and a non-optimal fit).
            v_p, u_p = v, u
            optimal = (np.linalg.norm(u @ self._rows(X, s, act) - v)
                       <= 1e-8 * max(1.0, float(u.sum())))
        else:
            v[-1] *= c
            Za = self._rows(X, s, act)
            v_p, u_p = _polish(Za, v, u, True)
            # KKT of the unpenalised problem: feasibility, u ≥ 0, w = Σ uᵢyᵢxᵢ, Σ uᵢyᵢ = 0.
            scale = max(1.0, float(u_p.sum()))
            optimal = (np.all(u_p >= 0) and np.all(s * (X @ v_p[:-1] + v_p[-1]) >= 1.0 - self.tol)
                       and np.linalg.norm(u_p @ Za[:, :d] - v_p[:d]) <= 1e-8 * scale
                       and abs(float(u_p @ Za[:, d])) <= 1e-10 * scale)
        if optimal:
            return act, u_p, v_p, scans
        if self.verbose:
            print("[HardMarginLinearSVC] KKT check failed after the active-set solve; "
                  "finishing with the interior-point solver")
        return np.union1d(pool, act), None, None, scans

    def _interior_point(self, X, s, W, batch):
        """Working-set rounds, each an exact interior-point QP; returns (W, λ_W, v, rounds)."""
        for it in range(1, self.max_iter + 1):
            Zw = self._rows(X, s, W)
            v, z = _solve_working_set(Zw, self.fit_intercept)
            w, b = (v[:-1], v[-1]) if self.fit_intercept else (v, 0.0)
            margins = s * (X @ w + b)
            viol = np.flatnonzero(margins < 1.0 - self.tol)
            if self.verbose:
                print(f"[HardMarginLinearSVC] round {it}: working set {W.size}, "
                      f"{viol.size} violated margins, |w| = {np.linalg.norm(w):.4g}")
            if viol.size == 0:
                v_p, z_p = _polish(Zw, v, z, self.fit_intercept)
                w_p, b_p = (v_p[:-1], v_p[-1]) if self.fit_intercept else (v_p, 0.0)
                if np.all(s * (X @ w_p + b_p) >= 1.0 - self.tol):
                    v, z = v_p, z_p
                return W, z, v, it
            # Keep the support (active constraints) and add the worst violators: the
            # relaxation's optimum then strictly increases, so the loop terminates.
            active = W[z > 1e-9 * max(1.0, z.max())]
            worst = viol[np.argsort(margins[viol], kind="stable")[:batch]]
            W = np.union1d(active, worst)
        raise NotSeparableError(
            f"HardMarginLinearSVC did not reach all margins >= 1 - tol within max_iter="
            f"{self.max_iter} working-set rounds; raise max_iter, or the data may not be "
            "linearly separable."
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
