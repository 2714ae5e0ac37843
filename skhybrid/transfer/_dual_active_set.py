"""Goldfarb–Idnani dual active-set method for min ½‖v‖² s.t. Z v ≥ 1.

Goldfarb & Idnani (1983), "A numerically stable dual method for solving strictly convex
quadratic programs", Math. Programming 27:1–33, specialised to the identity Hessian. The
method keeps the optimum of the problem restricted to an *active set* A of constraints
(all met with equality, multipliers u ≥ 0) and repeatedly picks a violated constraint:
a full step makes it active, a partial step first drops an active constraint whose
multiplier reaches zero. Every step raises the objective, so no active set repeats and
the method is finite; when no constraint is violated, v is the exact optimum. Any
violated constraint may be picked, so *which* rows are scanned changes the path, never
the answer.

With G = I the factorisation is Z_Aᵀ = J[:, :q] R for an orthogonal J and an upper
triangular R. Adding a constraint is one Householder reflection of J's last p − q columns;
dropping one is LAPACK-backed Givens re-triangularisation (:func:`scipy.linalg.qr_delete`).
A step costs O(p²). The entering row is the most violated of a *candidate pool* of rows
(one O(|pool| p) product); its next few most violated rows form a *shortlist* that picks
the following entering rows at O(shortlist · p) each, until none of them is violated by at
least half as much as the pool's worst was. Rows outside the pool are checked only when
the pool is satisfied; if some are violated, the rows of smallest slack among them join
it (the violated ones first, then the nearly violated ones). The method may start from any
active set whose equality-constrained optimum has non-negative multipliers (a *warm
start*, e.g. from the support vectors of a previous, related problem): the given rows,
then the pool rows most violated at their optimum, enter the factor, and the row of most
negative multiplier is dropped until none is negative.
"""

import math

import numpy as np
from scipy.linalg import blas, lapack, qr, qr_delete

__all__ = ["min_norm_dual_active_set"]

# scipy.linalg.qr_delete itself, without the wrapper that maps it over stacked ("batched")
# arrays (scipy >= 1.17): ~5 us per call alone, but ~36 us per drop inside the solver's
# loop (warm App. C fits 0.61 s instead of 0.66 s, ~1,400 drops each).
_qr_delete = getattr(qr_delete, "__wrapped__", qr_delete)


#: ‖J₂ᵀn‖² ≤ this · ‖n‖²: the entering row lies in the span of the active rows.
_DEPENDENT_SQ = 1e-22


class _Factor:
    """Z_Aᵀ = J[:, :q] R[:q, :q] for the q active constraints (J orthogonal).

    Both are Fortran arrays (J p × p, R p × (p + 1) with a spare column), so column
    blocks are contiguous and the LAPACK calls below need no copies; the Householder
    update is BLAS ``dger`` in place on J₂ (numpy's ``np.outer`` allocated a p × (p − q)
    temporary per added constraint).
    """

    def __init__(self, p):
        self.J = np.eye(p, order="F")
        self.R = np.zeros((p, p + 1), order="F")  # (column p: spare, see drop)
        self.q = 0

    def directions(self, d):
        """For d = Jᵀn: the primal direction z = J₂d₂ = J₂J₂ᵀn and the dual direction
        r = R⁻¹d₁."""
        q = self.q
        z = self.J[:, q:] @ d[q:]
        if q == 0:
            return z, d[:0]
        r, info = lapack.dtrtrs(self.R[:, :q], d[:q])  # R[:q, :q] via lda = p
        if info:
            raise np.linalg.LinAlgError("singular active-set factor")
        return z, r

    def add(self, d):
        """Append the constraint n, given d = Jᵀn (kept current across drops)."""
        q = self.q
        x = d[q:]
        sigma = math.sqrt(float(x @ x))
        gamma = -sigma if x[0] >= 0 else sigma
        v = x.copy()
        v[0] -= gamma
        vv = 2.0 * sigma * (sigma + abs(float(x[0])))  # ‖x − γe₁‖², γ = −sign(x₀)σ
        if vv > 0:  # Householder reflection (I − 2vvᵀ/vᵀv) x = γ e₁ applied to J₂ in place
            J2 = self.J[:, q:]  # a Fortran-contiguous view: dger updates it in place
            blas.dger(-2.0 / vv, J2 @ v, v, a=J2, overwrite_a=True)
        self.R[:q, q] = d[:q]
        self.R[q, q] = gamma
        self.q = q + 1

    def drop(self, k, d):
        """Remove active constraint k and rotate d = Jᵀn along, in place.

        Givens rotations change only J's columns k..q-1 (and d's entries k..q-1). d's
        first q entries ride in R's spare column q through :func:`scipy.linalg.qr_delete`,
        which applies every rotation to the rest of R's rows: no product with J afterwards.
        (Below row q that column is zero, so qr_delete's last sweep step rotates nothing.)
        """
        q = self.q
        R = self.R
        R[:q, q] = d[:q]  # rows q.. of the spare column q are zero
        J, Rn = _qr_delete(self.J, R[:, :q + 1], k, which="col", overwrite_qr=True,
                           check_finite=False)
        self.J = np.asfortranarray(J)
        if not np.may_share_memory(Rn, R):  # (scipy updates R in place; a copy is kept safe)
            R[:, :q] = Rn
        d[k:q] = R[k:q, q - 1]
        R[:, q - 1:q + 1] = 0.0
        self.q = q - 1


def _warm_factor(Z, start, u, max_rounds=20):
    """Factor of a dual-feasible starting active set drawn from the rows ``start``.

    Any active set A whose equality-constrained optimum v = Z_Aᵀu (Z_A v = 1) has u ≥ 0 is
    a valid Goldfarb–Idnani starting point. Rows whose QR pivot is tiny (repeated or
    nearly dependent rows) are removed and the rest refactored; then the row with the
    most negative multiplier is dropped from the factor (one Givens sweep) and the
    multipliers recomputed, until every multiplier is ≥ 0 (at worst the empty set). One
    row at a time keeps more of ``start`` than removing every negative multiplier at once
    would. Writes u and returns the factor and the active rows.
    """
    p = Z.shape[1]
    fac = _Factor(p)
    rows = np.asarray([] if start is None else start, dtype=np.intp)
    # distinct rows in the given order (the first p): rows given last are the cheapest to
    # drop again (a drop rotates the columns after the dropped one)
    rows = rows[np.sort(np.unique(rows, return_index=True)[1])][:p]
    A = Z[rows].T if rows.size else None
    for _ in range(max_rounds):
        if rows.size == 0:
            break
        # Householder QR without forming Q; the full p × p Q is formed only once the
        # rows are independent.
        (reflectors, tau), R = qr(A, mode="raw", check_finite=False)
        diag = np.abs(np.diag(R))
        ok = diag > 1e-8 * diag.max()  # a well-conditioned R (no repeated rows)
        if ok.all():
            q = rows.size
            fac.J = _full_q(reflectors, tau)
            fac.R[:q, :q] = R[:q]
            fac.q = q
            active = [int(i) for i in rows]
            _prune(fac, active, u)
            return fac, active
        rows, A = rows[ok], A[:, ok]
    return fac, []


def _prune(fac, active, u):
    """Drop the active row of most negative multiplier, one at a time, until every
    multiplier of the equality-constrained optimum (RᵀR u = 1 on the factor) is ≥ 0.

    Writes u and shortens ``active`` in place (at worst to the empty set).
    """
    p = fac.J.shape[0]
    ones, scratch = np.ones(p), np.zeros(p)
    q = fac.q
    while q:
        Rq = fac.R[:, :q]  # R[:q, :q] via lda = p
        y, info = lapack.dtrtrs(Rq, ones[:q], trans=1)  # Z_A Z_Aᵀ u = RᵀR u = 1
        w, info2 = lapack.dtrtrs(Rq, y)
        if info or info2:
            raise np.linalg.LinAlgError("singular active-set factor")
        k = int(w.argmin())
        if w[k] >= 0:
            u[:q] = w
            return
        fac.drop(k, scratch)
        del active[k]
        q -= 1


def _vertex(fac):
    """The optimum of the factor's equality-constrained problem: v = Z_Aᵀu = J₁R⁻ᵀ1.

    Not Z_Aᵀu with u from the normal equations RᵀRu = 1: their error grows with the
    square of Z_A's condition number (~10⁶ on KS App. C rows, whose intercept column is
    c ≈ 2·10⁴), and left violations of ~10⁻⁴ that cost hundreds of steps to undo.
    """
    q = fac.q
    if q == 0:
        return np.zeros(fac.J.shape[0])
    y, info = lapack.dtrtrs(fac.R[:, :q], np.ones(q), trans=1)
    if info:
        raise np.linalg.LinAlgError("singular active-set factor")
    return fac.J[:, :q] @ y


def _full_q(reflectors, tau):
    """The full orthogonal Q (Fortran order) of a Householder QR in LAPACK's raw form."""
    m, k = reflectors.shape
    a = np.zeros((m, m), order="F")
    a[:, :k] = reflectors
    work, info = lapack.dorgqr(a, tau, lwork=-1)[1:]
    q, _, info = lapack.dorgqr(a, tau, lwork=int(work[0]), overwrite_a=True)
    if info:
        raise np.linalg.LinAlgError("dorgqr failed")
    return np.asfortranarray(q)


def min_norm_dual_active_set(Z, *, pool, start=None, tol=1e-9, growth=None, max_scans=200,
                             max_steps=None, shortlist=64, refill=1, verbose=0):
    """Solve min ½‖v‖² s.t. Z v ≥ 1 exactly (Goldfarb–Idnani with G = I).

    Parameters
    ----------
    Z : ndarray of shape (m, p) or array-like operator
        Constraint rows. Any object with ``shape``, ``Z[rows]`` (an int array of rows)
        and ``Z @ v`` will do: only the pool's rows are ever formed.
    pool : array-like of int
        Rows whose violations are tracked at every step (e.g. the smallest margins under a
        previous solution).
    start : array-like of int or None, default=None
        Rows to start from (e.g. a previous solution's support vectors that are rows of
        ``Z``): a linearly independent subset whose equality-constrained multipliers are
        all ≥ 0 becomes the first active set. ``None``: the empty
        set (v = 0). Changes the path, never the answer.
    tol : float, default=1e-9
        A row is satisfied when ⟨zᵢ, v⟩ ≥ 1 − tol.
    growth : int or None, default=None
        When the pool is satisfied and some other row is violated, this many other rows
        of smallest slack join it: the most violated first, then nearly violated ones
        (``None``: p).
    max_scans : int, default=200
        Cap on scans of all rows.
    max_steps : int or None, default=None
        Cap on add/drop steps (``None``: 50·(m + p)).
    shortlist : int, default=64
        After each product with the whole pool, its ``shortlist`` most violated rows are
        kept (a contiguous copy) and pick the next entering rows: the most violated of
        them enters while it is violated by at least half the pool's worst violation at
        that product; then the pool is multiplied again. ``0``: every entering row is the
        pool's most violated (one pool product per entering row). Changes the path, never
        the answer.
    refill : int, default=1
        Rounds that complete a warm start (``start`` given) to p rows with the pool's rows
        most violated at its optimum, then drop negative multipliers again (one row at a
        time): a larger dual-feasible start, fewer steps. Changes the path, never the
        answer.
    verbose : int, default=0
        Print a line at every full scan.

    Returns
    -------
    v : ndarray of shape (p,)
    active : ndarray of int
        Rows of the final active set.
    u : ndarray
        Their multipliers (≥ 0): v = Z[active]ᵀ u.
    n_steps : int
        Add and drop steps taken.
    n_scans : int
        Scans of all rows (the last one found no violation).

    Raises
    ------
    ValueError
        If the constraints are infeasible (a violated row lies in the span of the active
        rows and no multiplier can decrease), or ``max_scans`` or ``max_steps`` is reached.
    """
    m, p = Z.shape
    growth = growth or p
    max_steps = max_steps or 50 * (m + p)
    u = np.zeros(p + 1)  # multipliers of the active set, then of the entering row
    fac, active = _warm_factor(Z, start, u)
    v = _vertex(fac)
    pool = np.unique(np.asarray(pool, dtype=np.intp))
    in_pool = np.zeros(m, bool)
    in_pool[pool] = True
    # The pool's rows live in a buffer that grows geometrically (appends stay O(p) per row).
    # A single-precision copy picks the entering row (half the memory traffic); the pick
    # is checked in double precision, and the pool is checked exactly before any scan.
    buf = np.empty((min(m, 2 * pool.size + growth), p))
    buf[:pool.size] = Z[pool]
    with np.errstate(over="ignore"):  # a row beyond float32's range only spoils the pick
        buf32 = buf.astype(np.float32)
    Zp, Zp32 = buf[:pool.size], buf32[:pool.size]
    for _ in range(refill if active else 0):
        # Complete a warm start: the pool rows most violated at its optimum join the
        # factor (Householder adds; rows in the span of the active ones are skipped) and
        # negative multipliers are pruned again. Any dual-feasible set is a valid start.
        q = fac.q
        if q >= p:
            break
        with np.errstate(over="ignore", invalid="ignore"):
            order = np.argsort(Zp32 @ v.astype(np.float32), kind="stable")
        for j in order[~np.isin(pool[order], active)][:p - q]:
            n = Zp[j]
            d = fac.J.T @ n
            if float(d[q:] @ d[q:]) > 1e-16 * float(n @ n):
                fac.add(d)
                active.append(int(pool[j]))
                q += 1
        _prune(fac, active, u)
        v = _vertex(fac)
    steps = scans = 0
    short = Z_short = None  # pool positions of the shortlist, and a copy of their rows
    worst = 0.0  # the pool's worst slack at its last product
    ratios = np.empty(p)
    while True:
        j = -1
        if short is not None:
            slack_short = Z_short @ v
            i = int(slack_short.argmin())
            if slack_short[i] - 1.0 < 0.5 * worst:
                j = int(short[i])
        if j < 0:
            # One product with the pool; its worst row enters.
            with np.errstate(over="ignore", invalid="ignore"):
                slack32 = Zp32 @ v.astype(np.float32)
            j = int(slack32.argmin())
            worst = float(Zp[j] @ v) - 1.0
            if worst >= -tol:
                slack = Zp @ v - 1.0
                j = int(slack.argmin())
                worst = float(slack[j])
            if worst < -tol and 0 < shortlist < slack32.size // 2:
                short = np.argpartition(slack32, shortlist)[:shortlist]
                Z_short = Zp[short]
            else:
                short = Z_short = None
        if worst >= -tol:
            # Pool satisfied: scan every row; the most violated outsiders join the pool.
            short = Z_short = None
            scans += 1
            full = Z @ v - 1.0
            new = np.flatnonzero((full < -tol) & ~in_pool)
            if verbose:
                print(f"[dual active set] {steps} steps, {len(active)} active, "
                      f"{new.size} violated rows outside a pool of {pool.size}")
            if new.size == 0:
                return (v, np.asarray(active, dtype=np.intp), u[:len(active)].copy(),
                        steps, scans)
            if scans >= max_scans:
                raise ValueError(f"the dual active-set method did not finish in "
                                 f"{max_scans} scans")
            # The `growth` smallest slacks outside the pool join it: the violated rows
            # first, then the nearly violated ones, which the next steps' moves of v
            # would otherwise make violated and bring in at one more scan each.
            outside = np.flatnonzero(~in_pool)
            if outside.size > growth:
                outside = outside[np.argpartition(full[outside], growth - 1)[:growth]]
            new = outside[np.argsort(full[outside], kind="stable")]
            in_pool[new] = True
            size = pool.size + new.size
            if size > buf.shape[0]:
                buf = np.concatenate([buf, np.empty((min(m, 2 * size) - buf.shape[0], p))])
                buf32 = np.concatenate([buf32, np.empty((buf.shape[0] - buf32.shape[0], p),
                                                        np.float32)])
            buf[pool.size:size] = Z[new]
            with np.errstate(over="ignore"):
                buf32[pool.size:size] = buf[pool.size:size]
            Zp, Zp32 = buf[:size], buf32[:size]
            pool = np.concatenate([pool, new])
            continue
        n = Zp[j]
        q = fac.q
        u[q] = 0.0
        d = fac.J.T @ n
        nn = float(n @ n)
        slack_n = float(n @ v) - 1.0  # kept current as v moves: ⟨n, v⟩ − 1 += t⟨n, z⟩
        while True:
            steps += 1
            if steps > max_steps:
                raise ValueError(f"the dual active-set method did not finish in "
                                 f"{max_steps} steps")
            z, r = fac.directions(d)
            # Partial step length: the first active multiplier driven to zero.
            t1, k = np.inf, -1
            if q:
                rq = ratios[:q]
                rq.fill(np.inf)
                np.divide(u[:q], r, out=rq, where=r > 0)
                k = int(rq.argmin())
                t1 = float(rq[k])
            # Full step length: the entering constraint becomes tight. (⟨z, n⟩ = ‖J₂ᵀn‖².)
            # n counts as in the span of the active rows when ‖J₂ᵀn‖ ≤ 1e-11‖n‖: J is
            # orthogonal, so rounding puts ~1e-15‖n‖ there, while features on scales 1e-3
            # to 1e3 (raw breast_cancer) leave genuine components of ~1e-7‖n‖, which a
            # 1e-7 cut-off took for dependence ("infeasible" on separable data).
            d2 = d[q:]
            zn = float(d2 @ d2)
            t2 = -slack_n / zn if zn > _DEPENDENT_SQ * nn else np.inf
            if not (t1 < np.inf or t2 < np.inf):
                raise ValueError("the constraints are infeasible")
            t = min(t1, t2)
            if t2 < np.inf:
                blas.daxpy(z, v, a=t)  # v += t z, in place
                slack_n += t * zn
            if q:
                blas.daxpy(r, u[:q], a=-t)  # u[:q] -= t r, in place
            u[q] += t
            if t2 <= t1:
                fac.add(d)
                active.append(int(pool[j]))
                break
            fac.drop(k, d)
            del active[k]
            u[k:q] = u[k + 1:q + 1]  # (numpy copies overlapping slices safely)
            q -= 1
