"""Candidate halfspace families for PPM halfspace learning, built from public rows only.

A halfspace is a pair ``(w, b)`` meaning the closed set ``{x : w·x <= b}``; this is the
paper's ``h_w = {x : Σ w_i x_i >= w_0}`` with ``(w, b) = (-w_{1:d}, -w_0)``. A candidate
hypothesis is an intersection of halfspaces (a polytope, intersected with the affine
hull ``Aff`` of the public points): rows inside are predicted as the *public* class,
rows outside as the *private* class (label-determined model, Bassily, Moran & Nandi
2020, §3; Algorithm 2, Step 8). The empty intersection is the paper's "empty
hypothesis" that predicts the private class everywhere.

Why every family here keeps Lemma 4.1
-------------------------------------
Lemma 4.1 (privacy of ``A_LearnHalf``) rests on two facts: (a) the finite class ``G``
and ``Aff`` are computed from the public rows alone, and (b) the score
``q(S, g) = -(number of errors of g on all rows)`` changes by at most 1 when one
private row is replaced (that row contributes 0 or 1 error to every ``g``; no other
term moves). Then the exponential mechanism (McSherry & Talwar 2007, Thm 6) over ``G``
with sensitivity 1 is ε-DP with respect to the private rows, for every fixed public
part. Every function below takes only public feature rows and data-independent
parameters/randomness, and so does the membership tolerance
(:func:`membership_tolerance`); hence (a) holds for each family, and (b) does not
depend on which finite class is scored. Changing public rows changes only the class.
"""

import math
from itertools import combinations

import numpy as np
from scipy.spatial import ConvexHull

__all__ = [
    "affine_hull",
    "affine_hull_halfspaces",
    "direction_net_halfspaces",
    "exact_family_size",
    "hull_facets",
    "intersections_exact",
    "membership_tolerance",
    "supporting_halfspaces_exact",
]


def _check_public(X_pub, allow_empty=False):
    X_pub = np.asarray(X_pub, dtype=float)
    if X_pub.ndim != 2:
        raise ValueError(
            f"X_pub must be a 2-d array of public rows (n_public, n_features); "
            f"got shape {X_pub.shape}."
        )
    if X_pub.shape[1] == 0:
        raise ValueError("X_pub must have at least one feature column.")
    if not np.isfinite(X_pub).all():
        raise ValueError("X_pub must not contain NaN or infinite values; impute or drop them.")
    if X_pub.shape[0] == 0 and not allow_empty:
        raise ValueError(
            "X_pub has no rows: with no public rows the only candidate is the empty "
            "intersection (predict the private class everywhere)."
        )
    return X_pub


def membership_tolerance(X_pub):
    """Absolute slack used when testing ``w·x <= b`` (closed halfspaces).

    Supporting hyperplanes pass *through* public points, and the Helly argument of
    §4 needs those points inside (closed sets), so a membership test must forgive
    round-off. The slack is ``1e-9 · max(1, max_i ||x_i - mean||)`` over the public
    rows only: it must never depend on private rows, or the candidate class would.

    Parameters
    ----------
    X_pub : array-like of shape (n_public, n_features)

    Returns
    -------
    tol : float
    """
    X_pub = _check_public(X_pub, allow_empty=True)
    if X_pub.shape[0] == 0:
        return 1e-9
    radius = np.linalg.norm(X_pub - X_pub.mean(axis=0), axis=1).max()
    return 1e-9 * max(1.0, float(radius), float(np.abs(X_pub).max()))


def affine_hull(X_pub, *, rtol=1e-10):
    """Affine hull ``Aff`` of the public points (Algorithm 1, Step 7).

    Parameters
    ----------
    X_pub : array-like of shape (n_public, n_features)
        Public feature rows.
    rtol : float, default=1e-10
        Singular values of the centred rows below ``rtol · max(1, s_max)`` are treated
        as zero (points numerically on a lower-dimensional flat).

    Returns
    -------
    origin : ndarray of shape (n_features,)
        A point of ``Aff`` (the mean of the public rows).
    basis : ndarray of shape (n_features, k)
        Orthonormal basis of ``Aff - origin``; ``k`` is the affine dimension
        (``k = n_features`` for points in general position, ``0`` for one point).
    """
    X_pub = _check_public(X_pub)
    origin = X_pub.mean(axis=0)
    centred = X_pub - origin
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    cutoff = rtol * max(1.0, s[0] if s.size else 0.0, float(np.abs(X_pub).max()))
    k = int(np.sum(s > cutoff))
    return origin, vt[:k].T.copy()


def affine_hull_halfspaces(origin, basis):
    """Halfspaces whose intersection is ``Aff`` (empty arrays when ``Aff = R^d``).

    ``Aff = {x : A^T (x - origin) = 0}`` with ``A`` an orthonormal basis of the
    orthogonal complement of ``basis``; each of the ``d - k`` equalities becomes two
    opposite halfspaces, so ``2 (d - k)`` rows in all (two when ``Aff`` is a
    hyperplane). Algorithm 2 intersects every non-empty candidate with ``Aff``.

    Parameters
    ----------
    origin : ndarray of shape (n_features,)
    basis : ndarray of shape (n_features, k)

    Returns
    -------
    W : ndarray of shape (2 (d - k), n_features)
    B : ndarray of shape (2 (d - k),)
    """
    origin = np.asarray(origin, dtype=float)
    basis = np.asarray(basis, dtype=float).reshape(origin.size, -1)
    d, k = basis.shape
    if k == d:
        return np.empty((0, d)), np.empty(0)
    # Left singular vectors beyond the first k span the orthogonal complement.
    u, _, _ = np.linalg.svd(basis if k else np.zeros((d, 1)), full_matrices=True)
    A = u[:, k:].T
    W = np.vstack([A, -A])
    return W, W @ origin


def _coordinates(X_pub):
    """Coordinates in which the families are built: ``(origin, basis, Z)``.

    Full-dimensional public data keeps the user's coordinates (``basis = I``,
    ``origin = 0``), so the deterministic rules below refer to the user's axes; a
    lower-dimensional ``Aff`` uses :func:`affine_hull`'s orthonormal basis.
    """
    d = X_pub.shape[1]
    origin, basis = affine_hull(X_pub)
    if basis.shape[1] == d:
        origin, basis = np.zeros(d), np.eye(d)
    return origin, basis, (X_pub - origin) @ basis


def _lift(Wk, Bk, origin, basis):
    """Map halfspaces ``{z : w·z <= b}`` in hull coordinates to ``R^d``.

    With ``x = origin + basis z`` (so ``z = basis^T (x - origin)`` on ``Aff``), the lifted
    halfspace ``{x : (basis w)·x <= b + (basis w)·origin}`` meets ``Aff`` exactly in the
    image of the ``k``-dimensional one.
    """
    W = Wk @ basis.T
    return W, Bk + W @ origin


def _canonical_normals(points):
    """One unit normal per subset, chosen by a fixed rule (no randomness).

    ``points`` has shape (n_subsets, m, k). The normal lies in the orthogonal
    complement ``N`` of the span of the differences ``p_i - p_0`` (rank decided with a
    relative tolerance). With ``P`` the orthogonal projector onto ``N`` — unique,
    whatever SVD basis is returned — the normal is ``P e_i / ||P e_i||`` for the
    smallest ``i`` maximising ``P_ii = ||P e_i||²``. When the subset has ``k``
    affinely independent points, ``N`` is a line and this is *the* normal; with fewer
    points, or a degenerate (affinely dependent) subset, it is the projected
    coordinate axis closest to ``N``. Since ``trace P = dim N >= 1``,
    ``max_i P_ii >= 1/k``, so the rule is well conditioned. The sign is fixed so
    that the first entry with ``|w_i| > 1e-12`` is positive; the opposite halfspace
    is added as well, so the sign only fixes the order of the output.
    """
    n_sub, m, k = points.shape
    eye = np.eye(k)
    if m == 1:
        P = np.broadcast_to(eye, (n_sub, k, k))
    else:
        diffs = points[:, 1:, :] - points[:, :1, :]
        _, s, vt = np.linalg.svd(diffs, full_matrices=False)
        scale = np.maximum(1.0, np.abs(points).max(axis=(1, 2)))
        keep = (s > 1e-10 * scale[:, None]).astype(float)
        P = eye - np.einsum("si,sij,sil->sjl", keep, vt, vt)
    axis = np.argmax(np.diagonal(P, axis1=1, axis2=2), axis=1)
    normals = P[np.arange(n_sub), :, axis]
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    first = np.argmax(np.abs(normals) > 1e-12, axis=1)
    sign = np.sign(normals[np.arange(n_sub), first])
    return normals * sign[:, None]


def supporting_halfspaces_exact(X_pub):
    """Faithful Algorithm 1 (``A_ConstrHalf``): the family ``C_pub`` of Bassily, Moran & Nandi.

    For every subset of at most ``k`` public points (``k`` = dimension of ``Aff``; ``k = d``
    for points in general position, as in the paper) one hyperplane through the subset
    is chosen by a deterministic rule (see Notes) and both of its closed halfspaces are
    added. Subsets are enumerated by size, then in ``itertools.combinations`` order,
    and each yields ``(w, b)`` followed by ``(-w, -b)``.

    Parameters
    ----------
    X_pub : array-like of shape (n_public, n_features)
        Public feature rows (labels are not used, as in Algorithm 1).

    Returns
    -------
    W : ndarray of shape (h, n_features)
        Unit normals (within ``Aff``'s directions), ``h = 2 Σ_{m=1}^{k} C(n_public, m)``.
    B : ndarray of shape (h,)
        Offsets: halfspace ``g`` is ``{x : W[g]·x <= B[g]}``.

    Notes
    -----
    - Coordinates: full-dimensional public data is used as is. Otherwise the rows
      are expressed in an orthonormal basis of ``Aff`` (:func:`affine_hull`);
      halfspaces are built there and lifted to ``R^d``. The
      paper's ``g ∩ Aff`` (Algorithm 2, Step 8) is then "inside every member and inside
      :func:`affine_hull_halfspaces`". When ``k < d``, subsets of more than ``k``
      points are skipped: one whose affine span is ``Aff`` is supported in ``R^d`` only
      by hyperplanes containing ``Aff``, whose halfspaces meet ``Aff`` in all of ``Aff``;
      and the proof of Corollary 4.4 only needs the facets of public hulls, which
      ``k`` points support. Helly's theorem inside ``Aff`` (Lemma 4.3 in dimension
      ``k``) shows intersections of at most ``k`` members suffice.
    - Degenerate subsets (fewer than ``k`` points, repeated or affinely dependent
      points) get the normal of :func:`_canonical_normals`: the coordinate axis (of
      the coordinates above) whose projection onto the subset's normal space is
      longest. The empty subset is not
      used: every halfspace it "supports" is either ``R^d`` or has ``w = 0``.
    - Duplicates (e.g. two pairs on one line) are kept, so ``h`` is exactly the count
      above; duplicates only reweight the exponential mechanism's base measure and
      affect neither Lemma 4.1 nor Corollary 4.4.
    - One public point (``k = 0``) or none: ``C_pub`` is empty, so ``G`` is the empty
      hypothesis alone (§4: "if there are no public examples ... C_pub = ∅").
    """
    X_pub = _check_public(X_pub, allow_empty=True)
    d = X_pub.shape[1]
    if X_pub.shape[0] == 0:
        return np.empty((0, d)), np.empty(0)
    origin, basis, Z = _coordinates(X_pub)
    k = basis.shape[1]
    if k == 0:
        return np.empty((0, d)), np.empty(0)
    n_pub = Z.shape[0]
    W_parts, B_parts = [], []
    for m in range(1, min(k, n_pub) + 1):
        idx = np.fromiter(
            (i for c in combinations(range(n_pub), m) for i in c),
            dtype=np.intp,
            count=math.comb(n_pub, m) * m,
        ).reshape(-1, m)
        pts = Z[idx]
        normals = _canonical_normals(pts)
        offsets = np.einsum("sj,sj->s", normals, pts[:, 0, :])
        # Interleave (w, b), (-w, -b) per subset.
        Wk = np.stack([normals, -normals], axis=1).reshape(-1, k)
        Bk = np.stack([offsets, -offsets], axis=1).reshape(-1)
        W_parts.append(Wk)
        B_parts.append(Bk)
    W, B = _lift(np.vstack(W_parts), np.concatenate(B_parts), origin, basis)
    return W, B


def exact_family_size(n_public, k, max_size=None):
    """Sizes of the exact family: ``(|C_pub|, |G|)``.

    ``|C_pub| = 2 Σ_{m=1}^{k} C(n_public, m)`` (subsets of at most ``k`` points, two
    opposite halfspaces each) and ``|G| = 1 + Σ_{m=1}^{max_size} C(|C_pub|, m)`` (the
    empty hypothesis plus intersections of at most ``max_size`` distinct members;
    Algorithm 2, Step 8, with ``max_size = k = d`` in the paper).

    Parameters
    ----------
    n_public : int
    k : int
        Dimension of the public affine hull (``d`` in general position).
    max_size : int, default=None
        Largest intersection; ``None`` means ``k``.

    Returns
    -------
    n_halfspaces : int
    n_hypotheses : int
    """
    max_size = k if max_size is None else max_size
    h = 2 * sum(math.comb(n_public, m) for m in range(1, min(k, n_public) + 1))
    return h, 1 + sum(math.comb(h, m) for m in range(1, max_size + 1))


def intersections_exact(n_halfspaces, max_size, *, block_size=1 << 20, include_all=False):
    """Lazily enumerate ``G`` as blocks of member-index tuples, never materialising it.

    Order: the empty intersection (a block of shape ``(1, 0)``), then all
    ``m``-subsets of ``range(n_halfspaces)`` for ``m = 1 .. max_size`` in
    ``itertools.combinations`` (lexicographic) order, then, if ``include_all``, the
    intersection of all members. Each block is an int array of shape
    ``(<= block_size, m)`` holding tuples of one size ``m``.

    Prefixes of length ``m - 1`` come from ``itertools.combinations``; the last index
    runs over a numpy ``arange``, so the Python loop is over ``C(h, m-1)`` prefixes, not
    over the ``C(h, m)`` tuples. Tuples sharing a prefix are contiguous, which
    :func:`~skhybrid.ppm._scoring.count_errors_blocked` exploits (one matrix product per
    block).

    Parameters
    ----------
    n_halfspaces : int
        Number of halfspaces ``h`` in the family.
    max_size : int
        Largest number of members of an intersection (``d`` in Algorithm 2).
    block_size : int, default=2**20
        Largest number of tuples per block; memory is ``O(block_size · max_size)``.
    include_all : bool, default=False
        Also yield the intersection of all ``h`` members (e.g. the full convex hull
        for :func:`hull_facets`), when ``h > max_size``.

    Yields
    ------
    block : ndarray of shape (n_block, m), dtype intp
    """
    if n_halfspaces < 0 or max_size < 0:
        raise ValueError("n_halfspaces and max_size must be non-negative integers.")
    if block_size < 1:
        raise ValueError(f"block_size must be a positive integer; got {block_size}.")
    yield np.empty((1, 0), dtype=np.intp)
    h = int(n_halfspaces)
    for m in range(1, min(int(max_size), h) + 1):
        buffer, filled = [], 0
        for prefix in combinations(range(h), m - 1):
            start = prefix[-1] + 1 if prefix else 0
            while start < h:
                stop = min(h, start + block_size - filled)
                last = np.arange(start, stop, dtype=np.intp)
                part = np.empty((last.size, m), dtype=np.intp)
                part[:, : m - 1] = prefix
                part[:, m - 1] = last
                buffer.append(part)
                filled += last.size
                start = stop
                if filled == block_size:
                    yield np.vstack(buffer)
                    buffer, filled = [], 0
        if filled:
            yield np.vstack(buffer)
    if include_all and h > max_size:
        yield np.arange(h, dtype=np.intp)[None, :]


def hull_facets(X_pub):
    """Facets of the convex hull of the public points, as halfspaces (realizable family).

    The hull is computed with Qhull (``scipy.spatial.ConvexHull``) in the coordinates
    of ``Aff``; for a one-dimensional ``Aff`` the two facets are the extreme points.
    Each facet ``{w·x <= b}`` contains the hull.

    Parameters
    ----------
    X_pub : array-like of shape (n_public, n_features)

    Returns
    -------
    W : ndarray of shape (n_facets, n_features)
        Unit normals pointing out of the hull.
    B : ndarray of shape (n_facets,)

    Notes
    -----
    Family: ``G_hull = {empty} ∪ {∩ of at most k facets} ∪ {the hull itself}`` (use
    :func:`intersections_exact` with ``include_all=True``), each intersected with
    ``Aff``.

    *Membership of the exact family.* Qhull returns simplicial facets (triangulated,
    option ``Qt``), so each facet hyperplane passes through ``k`` affinely independent
    public points, and :func:`supporting_halfspaces_exact` contains the halfspace
    through them with both orientations: every facet is a member of ``C_pub`` (up to
    positive scaling).

    *Utility (realizable case).* If some halfspace ``h*`` labels all rows correctly,
    no public point lies in ``h*`` (relaxation (ii) aside), so ``h*`` misses the hull
    ``V = ∩ facets ∩ Aff``. By Helly's theorem in ``Aff`` (Lemma 4.3, dimension ``k``)
    some at most ``k`` facets already have an intersection (with ``Aff``) disjoint from
    ``h*``; that intersection contains every public point and no private one, so
    ``G_hull`` holds a zero-error hypothesis — Corollary 4.4 with ``C_pub`` replaced by
    the facets. In the agnostic case the hull absorbs public outliers and this
    guarantee is lost; use :func:`direction_net_halfspaces`.

    *Privacy.* ``G_hull`` is a function of the public rows only, so Lemma 4.1 holds
    verbatim (module docstring): the score ``-errors`` has sensitivity 1 under
    replacement of one private row whatever the finite class.
    """
    X_pub = _check_public(X_pub)
    d = X_pub.shape[1]
    origin, basis, Z = _coordinates(X_pub)
    k = basis.shape[1]
    if k == 0:
        return np.empty((0, d)), np.empty(0)
    if k == 1:
        Wk = np.array([[1.0], [-1.0]])
        Bk = np.array([Z[:, 0].max(), -Z[:, 0].min()])
    else:
        eq = ConvexHull(Z, qhull_options="Qt").equations
        # Qhull: normal·z + offset <= 0 inside, with unit normals.
        Wk, Bk = eq[:, :k], -eq[:, k]
    return _lift(Wk, Bk, origin, basis)


def _direction_grid(k, n_directions, rng):
    if k == 1:
        return np.array([[1.0], [-1.0]])
    if rng is None and k == 2:
        angles = 2 * np.pi * np.arange(n_directions) / n_directions
        return np.column_stack([np.cos(angles), np.sin(angles)])
    if rng is None:
        from scipy.stats import norm, qmc

        # Unscrambled Halton points pushed through the normal quantile: a fixed,
        # roughly uniform set of directions (the first Halton point is 0: skip it).
        sampler = qmc.Halton(k, scramble=False)
        sampler.fast_forward(1)
        U = np.clip(sampler.random(n_directions), 1e-12, 1 - 1e-12)
        G = norm.ppf(U)
    else:
        G = rng.standard_normal((n_directions, k))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def direction_net_halfspaces(
    X_pub, n_directions=16, quantiles=(0.5, 0.75, 0.9, 0.95, 0.99, 1.0), rng=None
):
    """Direction net × public order statistics (family robust to label noise).

    For each unit direction ``u`` of a data-independent net in ``Aff`` and each level
    ``q`` in ``quantiles``, the halfspace ``{x : u·x <= t_{u,q}}`` with ``t_{u,q}`` the
    empirical ``q``-quantile (an order statistic, ``method="inverted_cdf"``) of the
    public projections ``u·x_i``. Levels below 1 leave the most extreme public rows
    outside, so a few public outliers (noisy labels, relaxation (ii)) cannot inflate
    the polytope the way they inflate the convex hull.

    Parameters
    ----------
    X_pub : array-like of shape (n_public, n_features)
    n_directions : int, default=16
        Size of the net (ignored when ``Aff`` is a line: the net is ``{+1, -1}``).
    quantiles : sequence of float in (0, 1], default=(0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
    rng : numpy.random.Generator or None, default=None
        Source of the random net (i.i.d. uniform directions). ``None`` uses a
        deterministic net: equally spaced angles when ``Aff`` is a plane,
        unscrambled Halton points mapped to the sphere otherwise. Either way the net
        never looks at any row.

    Returns
    -------
    W : ndarray of shape (n_dirs · n_quantiles, n_features)
        Direction-major: row ``i · n_quantiles + j`` is direction ``i``, level ``j``.
    B : ndarray of shape (n_dirs · n_quantiles,)

    Notes
    -----
    Privacy: the net is data-independent and the thresholds are order statistics of
    public rows, so the family is a function of public rows only and Lemma 4.1 holds
    (module docstring). Use intersections of at most ``k`` members (plus the empty one);
    with opposite directions in the net, slabs and boxes are representable.
    """
    X_pub = _check_public(X_pub)
    if int(n_directions) < 1:
        raise ValueError(f"n_directions must be a positive integer; got {n_directions}.")
    quantiles = np.atleast_1d(np.asarray(quantiles, dtype=float))
    if quantiles.size == 0 or not np.all((quantiles > 0) & (quantiles <= 1)):
        raise ValueError(
            f"quantiles must be a non-empty sequence of levels in (0, 1]; got {quantiles}."
        )
    d = X_pub.shape[1]
    origin, basis, Z = _coordinates(X_pub)
    k = basis.shape[1]
    if k == 0:
        return np.empty((0, d)), np.empty(0)
    U = _direction_grid(k, int(n_directions), rng)
    proj = Z @ U.T  # (n_public, n_dirs)
    T = np.quantile(proj, quantiles, axis=0, method="inverted_cdf").T  # (n_dirs, n_q)
    Wk = np.repeat(U, quantiles.size, axis=0)
    return _lift(Wk, T.reshape(-1), origin, basis)
