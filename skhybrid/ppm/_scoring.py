"""Block-streamed error counts and the one-pass exponential mechanism for PPM halfspaces.

Exact error formula
-------------------
Let ``c_{kj} = 1(x_j ∈ halfspace k)``, ``r_j = 1(x_j ∈ Aff)``, ``s_j = +1`` if row ``j``
carries the private class and ``-1`` otherwise, and ``N`` the number of public-class
rows. A row is inside a non-empty intersection ``g`` iff ``r_j ∏_{k∈g} c_{kj} = 1``;
inside, it is an error iff it has the private class; outside, iff it has the public
class. Hence, exactly,

    errors(g) = N + Σ_j s_j r_j ∏_{k∈g} c_{kj},          errors(∅) = N.

The errors of an intersection are *not* a sum of per-member errors; the additive
form is either the count of violated members compared with zero (row ``j`` is inside
iff ``Σ_{k∈g} (1 - c_{kj}) = 0``), or the inclusion–exclusion expansion
``∏(1 - v_k) = Σ_{T⊆g} (-1)^{|T|} ∏_{k∈T} v_k``. What makes blocks cheap is that the
formula is *linear in the last member*: for ``g = P ∪ {k}``,
``errors(g) = N + ⟨s ⊙ r ⊙ ∏_{P} c, c_k⟩``. A block of tuples sharing a few prefixes
``P`` is therefore one float32 matrix product ``T @ C^T`` with one row of ``T`` per
prefix. All partial sums are integers of magnitude at most ``n``, so float32 is
exact while ``n < 2^24`` (float64 is used beyond).
"""

import numpy as np

from ..mechanisms import _noise
from ..mechanisms._base import check_epsilon, check_sensitivity
from ..mechanisms._exact_selection import _MAX_LATTICE, _sample_one, snap_scores
from ..mechanisms.exponential import ExponentialMechanism

__all__ = [
    "Selection",
    "containment_matrix",
    "count_errors_blocked",
    "error_weights",
    "halfspace_violations",
    "iter_error_blocks",
    "streamed_exponential_mechanism",
]

_FLOAT32_EXACT = 2**24
_WORK_FLOATS = 2**23  # ~32 MB of float32 temporaries per chunk
_ROW_BLOCK = 2**16  # rows per block of an error count (see count_errors_blocked)


def halfspace_violations(W, B, X, *, tol=0.0):
    """Which rows lie outside which halfspace.

    Parameters
    ----------
    W : array-like of shape (h, n_features)
    B : array-like of shape (h,)
        Halfspace ``g`` is the closed set ``{x : W[g]·x <= B[g]}``.
    X : array-like of shape (n_samples, n_features)
    tol : float, default=0.0
        Slack: ``x`` is inside when ``W[g]·x <= B[g] + tol``. Derive it from public
        rows only (:func:`~skhybrid.ppm._candidates.membership_tolerance`).

    Returns
    -------
    violated : ndarray of bool, shape (h, n_samples)
    """
    W = np.asarray(W, dtype=float)
    X = np.asarray(X, dtype=float)
    B = np.asarray(B, dtype=float).reshape(-1)
    if W.ndim != 2 or X.ndim != 2 or W.shape[1] != X.shape[1] or B.shape[0] != W.shape[0]:
        raise ValueError(
            f"W must have shape (h, n_features), B shape (h,) and X shape "
            f"(n_samples, n_features); got {W.shape}, {B.shape}, {X.shape}."
        )
    # silently: a private row near float64's largest value overflows W·x (to ±inf, or NaN
    # for inf − inf: a row's membership still depends on that row alone), and numpy's
    # warning would tell the data set holding it from its neighbour
    with np.errstate(over="ignore", invalid="ignore"):
        return (W @ X.T) > (B + tol)[:, None]


def containment_matrix(W, B, X, *, tol=0.0, dtype=None):
    """``C[k, j] = 1.0`` if row ``j`` is inside halfspace ``k`` (float32 for BLAS).

    ``dtype`` defaults to float32, or float64 when ``n_samples >= 2**24`` (where
    float32 sums of 0/±1 values stop being exact).
    """
    X = np.asarray(X)
    n = X.shape[0] if X.ndim == 2 else 0
    h = np.shape(W)[0] if np.ndim(W) == 2 else 0
    if dtype is None:
        dtype = np.float32 if n < _FLOAT32_EXACT else np.float64
    if h * n <= _WORK_FLOATS:
        return (~halfspace_violations(W, B, X, tol=tol)).astype(dtype)
    # Blocks of rows: the float64 product W @ X.T and its boolean comparison would
    # otherwise be (h, n) temporaries 2.25x the size of the float32 result (1.2 GB at
    # 10^6 rows and 134 halfspaces). Each entry is the same dot product either way.
    contain = np.empty((h, n), dtype=dtype)
    step = max(1, _WORK_FLOATS // h)
    for j0 in range(0, n, step):
        contain[:, j0:j0 + step] = ~halfspace_violations(W, B, X[j0:j0 + step], tol=tol)
    return contain


def error_weights(is_private_class, in_region=None, dtype=np.float32):
    """Per-row weights ``s ⊙ r`` and the constant ``N`` of the error formula.

    Parameters
    ----------
    is_private_class : array-like of bool, shape (n_samples,)
        ``True`` for rows whose *label* is the private class (in the label-determined
        model, every private row; under relaxation (ii) public rows may be either).
    in_region : array-like of bool, shape (n_samples,), default=None
        ``r_j = 1(x_j ∈ Aff)``, e.g. ``~halfspace_violations(*affine_hull_halfspaces(...),
        X).any(axis=0)``; ``None`` means ``Aff = R^d``.
    dtype : dtype, default=np.float32

    Returns
    -------
    weights : ndarray of shape (n_samples,)
    n_public_class : int
        ``N``: the errors of the empty hypothesis (private class everywhere).
    """
    priv = np.asarray(is_private_class, dtype=bool).reshape(-1)
    weights = np.where(priv, 1.0, -1.0)
    if in_region is not None:
        region = np.asarray(in_region, dtype=bool).reshape(-1)
        if region.shape != priv.shape:
            raise ValueError(
                f"in_region must have shape {priv.shape} like is_private_class; got {region.shape}."
            )
        weights = weights * region
    return weights.astype(dtype), int(np.count_nonzero(~priv))


def count_errors_blocked(contain, weights, n_public_class, block):
    """Errors of every intersection in one block (exact; see the module docstring).

    Parameters
    ----------
    contain : ndarray of shape (h, n_samples)
        From :func:`containment_matrix`.
    weights : ndarray of shape (n_samples,)
    n_public_class : int
        From :func:`error_weights`.
    block : ndarray of int, shape (n_block, m)
        Member indices; ``m = 0`` is the empty hypothesis. Fastest when tuples sharing
        their first ``m - 1`` members are contiguous (as from
        :func:`~skhybrid.ppm._candidates.intersections_exact`), but any order is exact.

    Returns
    -------
    errors : ndarray of int64, shape (n_block,)
    """
    block = np.asarray(block, dtype=np.intp)
    if block.ndim != 2:
        raise ValueError(f"block must be a 2-d array of member indices; got shape {block.shape}.")
    n_block, m = block.shape
    if m == 0:
        return np.full(n_block, n_public_class, dtype=np.int64)
    prefixes, last = block[:, :-1], block[:, -1]
    if m == 1 or n_block == 1:
        starts = np.array([0])
        run = np.zeros(n_block, dtype=np.intp)
    else:
        new_run = np.any(prefixes[1:] != prefixes[:-1], axis=1)
        starts = np.concatenate([[0], np.flatnonzero(new_run) + 1])
        run = np.concatenate([[0], np.cumsum(new_run)])
    errors = np.empty(n_block, dtype=np.int64)
    # Runs are processed in chunks, and the rows (samples) in blocks of at most
    # _ROW_BLOCK, so that the (runs × rows) and (runs × members) temporaries stay below
    # _WORK_FLOATS whatever the block's shape. Blocking the rows keeps the runs per chunk
    # independent of n: with whole rows, a chunk held _WORK_FLOATS / n runs and each
    # chunk streamed the whole (h, n) containment matrix again -- memory traffic that
    # grew like n^2 (17 passes over 0.5 GB at 10^6 rows). Partial sums are integers
    # below 2^24 (float32) or 2^53, so the block sums are exact: same errors.
    n_rows = weights.size
    row_step = max(1, min(n_rows, _ROW_BLOCK))
    step = max(1, _WORK_FLOATS // max(row_step, contain.shape[0], 1))
    bounds = np.append(starts, n_block)
    for r0 in range(0, starts.size, step):
        r1 = min(starts.size, r0 + step)
        rows = slice(bounds[r0], bounds[r1])
        lo, hi = int(last[rows].min()), int(last[rows].max()) + 1
        inner = None
        for c0 in range(0, max(n_rows, 1), row_step):
            cols = slice(c0, c0 + row_step)
            T = np.broadcast_to(weights[cols], (r1 - r0, weights[cols].size)).copy()
            for col in range(m - 1):
                T *= contain[prefixes[starts[r0:r1], col], cols]
            part = T @ contain[lo:hi, cols].T  # (runs, hi - lo): one BLAS call per block
            inner = part if inner is None else inner + part
        errors[rows] = np.rint(inner[run[rows] - r0, last[rows] - lo])
    return errors + n_public_class


def iter_error_blocks(contain, weights, n_public_class, blocks):
    """Lazily pair each block of member indices with its error counts.

    Yields zero-argument callables returning ``(scores, block)`` with
    ``scores = -errors``, the form :func:`streamed_exponential_mechanism` accepts (and
    can evaluate on joblib threads).
    """
    for block in blocks:
        yield _ScoreBlock(contain, weights, n_public_class, block)


class _ScoreBlock:
    __slots__ = ("block", "contain", "n_public_class", "weights")

    def __init__(self, contain, weights, n_public_class, block):
        self.contain = contain
        self.weights = weights
        self.n_public_class = n_public_class
        self.block = block

    def __call__(self):
        errors = count_errors_blocked(self.contain, self.weights, self.n_public_class, self.block)
        return -errors, self.block  # int64: streamed as they are (integer=True)


class Selection:
    """Outcome of :func:`streamed_exponential_mechanism`.

    Attributes
    ----------
    index : int
        Position of the winner in the concatenated stream of scores.
    score : float
        Its (noise-free) score. Private: do not release it.
    candidate : object
        The winner's row of the block's candidate array, or ``None`` when blocks
        carried scores only.
    n_candidates : int
        Number of candidates streamed.
    """

    __slots__ = ("candidate", "index", "n_candidates", "score")

    def __init__(self, index, score, candidate, n_candidates):
        self.index = index
        self.score = score
        self.candidate = candidate
        self.n_candidates = n_candidates

    def __repr__(self):
        return (
            f"Selection(index={self.index}, score={self.score}, "
            f"candidate={self.candidate!r}, n_candidates={self.n_candidates})"
        )


def _split(item):
    if isinstance(item, tuple):
        scores, candidates = item
    else:
        scores, candidates = item, None
    scores = np.asarray(scores).reshape(-1)
    if scores.dtype.kind not in "iu":  # integer scores (PPM's -errors) are finite as they are
        scores = scores.astype(float, copy=False)
        if np.isnan(scores).any() or np.isposinf(scores).any():
            raise ValueError(
                "scores must not contain NaN or +inf (use -inf to exclude a candidate).")
    if candidates is not None and len(candidates) != scores.size:
        raise ValueError(
            f"each block's candidates must match its scores; got {len(candidates)} "
            f"candidates for {scores.size} scores."
        )
    return scores, candidates


def _evaluated(score_blocks, n_jobs):
    if n_jobs in (None, 1):
        for item in score_blocks:
            yield item() if callable(item) else item
        return
    from joblib import Parallel, delayed

    # Threads, not processes: workers only run BLAS (which releases the GIL) and the
    # noise is drawn here, in stream order, so the output is identical for any n_jobs.
    parallel = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")
    yield from parallel(
        delayed(item)() if callable(item) else delayed(lambda x: x)(item) for item in score_blocks
    )


def streamed_exponential_mechanism(score_blocks, epsilon, sensitivity, rng, *, n_jobs=None,
                                   integer=False):
    """One-pass exponential mechanism over a stream of score blocks, sampled exactly.

    Selects candidate ``i`` with probability ``∝ exp(ε q_i / (2Δ))`` (McSherry & Talwar
    2007, Thm 6: ε-DP when every score has sensitivity ``Δ``), on the lattice of
    :class:`~skhybrid.mechanisms.ExponentialMechanism`: integer scores with an integer Δ
    (``integer=True``; PPM's ``-errors``) as they are, float scores rounded to a dyadic
    step with the rounding paid in the rate, ``γ <= ε/(2S)`` per lattice step.

    Streaming, exactly: the law factors as P(level s) ∝ ``H_s exp(-γ (s_max - s))``
    (``H_s`` candidates score ``s``) times a uniform choice within the level. One pass
    keeps, per distinct lattice score, its count and one candidate drawn uniformly among
    those seen (a size-one reservoir: a block's ``c`` new candidates of a level that has
    seen ``N`` replace the kept one with probability ``c/(N + c)``, by one uniform
    integer below ``N + c``). The level is then drawn by rejection (a few uniform
    proposals over the ``m`` candidates, kept with an exact Bernoulli(exp(-γ d)) coin,
    then an envelope over the levels with acceptance about 1/e, so the draw costs
    O(levels) whatever the gaps; :func:`_sample_level`). Only uniform integers are drawn; memory is one block plus one entry per distinct score (at most
    ``n + 1`` for error counts), independent of the number of candidates. The spy
    records one ``"exact_exponential"`` draw over all candidates (tag
    ``"ppm-exponential"``).

    For PPM halfspaces (Bassily, Moran & Nandi 2020, Algorithm 2, Step 9) the score is
    ``-errors`` on all rows with ``Δ = 1`` for replacing one private row (Lemma 4.1).

    Parameters
    ----------
    score_blocks : iterable
        Items are a 1-d array of scores, a tuple ``(scores, candidates)`` with
        ``len(candidates) == len(scores)``, or a zero-argument callable returning
        either (evaluated lazily, on joblib threads when ``n_jobs`` is set). ``-inf``
        excludes a candidate.
    epsilon : float
        ε > 0; ``np.inf`` returns the exact argmax (first index on ties) and draws no
        noise — the non-private baseline.
    sensitivity : float
        ``Δ > 0``.
    rng : numpy.random.Generator
        Source of every random draw.
    n_jobs : int or None, default=None
        Threads evaluating callable blocks. Every draw is made here, in stream order,
        from ``rng``, so the selection is identical for every ``n_jobs`` at a fixed
        seed; at most about ``2 · n_jobs`` blocks are held in memory.
    integer : bool, default=False
        Scores are integers and ``Δ`` is an integer: no rounding (non-integer scores
        are refused).

    Returns
    -------
    selection : Selection
    """
    epsilon = check_epsilon(epsilon, allow_inf=True)
    sensitivity = check_sensitivity(sensitivity)
    if np.isinf(epsilon):
        return _streamed_argmax(score_blocks, n_jobs)
    mech = ExponentialMechanism(epsilon, sensitivity, integer=integer)
    g, _, a, b = mech.lattice()
    levels = np.empty(0, dtype=np.int64)  # sorted distinct lattice scores
    counts = np.empty(0, dtype=np.int64)  # candidates per level
    kept = np.empty(0, dtype=np.int64)  # stream index of each level's kept candidate
    chosen = {}  # stream index -> (score, candidate) of the kept candidates
    offset = 0
    for item in _evaluated(score_blocks, n_jobs):
        scores, candidates = _split(item)
        if integer and scores.dtype.kind in "iu":  # as they are: no -inf, nothing rounded
            valid = None
            k = _integer_lattice(scores)
        else:
            valid = np.flatnonzero(np.isfinite(scores))
            k = snap_scores(scores[valid], g, integer) if valid.size else None
        if k is not None and k.size:
            uniq, cnt, codes = _levels(k)
            pos = np.searchsorted(levels, uniq)
            seen = pos < levels.size
            seen[seen] = levels[pos[seen]] == uniq[seen]
            before = np.zeros(uniq.size, dtype=np.int64)
            before[seen] = counts[pos[seen]]
            u = rng.integers(0, before + cnt)  # exact: replace iff u < cnt (prob. cnt/(N+cnt))
            swap = u < cnt
            local = _nth_occurrence(codes, np.flatnonzero(swap), u[swap], uniq.size)
            if valid is not None:
                local = valid[local]
            new_idx = np.full(uniq.size, -1, dtype=np.int64)
            new_idx[swap] = offset + local
            for j, loc in zip(new_idx[swap], local):
                chosen[int(j)] = (float(scores[loc]), _own(candidates, loc))
            old = pos[seen & swap]
            for j in kept[old]:
                del chosen[int(j)]
            counts[pos[seen]] += cnt[seen]
            kept[old] = new_idx[seen & swap]
            fresh = ~seen
            levels = np.insert(levels, pos[fresh], uniq[fresh])
            counts = np.insert(counts, pos[fresh], cnt[fresh])
            kept = np.insert(kept, pos[fresh], new_idx[fresh])
        offset += scores.size
    if offset == 0:
        raise ValueError(
            "score_blocks yielded no candidate; the candidate class must be non-empty."
        )
    if levels.size == 0:
        raise ValueError("every candidate is excluded (-inf); at least one must be finite.")
    # A uniform candidate is a level drawn with probability H_s / m: rejection over
    # candidates, run on the levels (the kept candidate is uniform within its level).
    m = int(counts.sum())
    scale = g * 2.0**b / a if a else np.inf
    _noise._record("exact_exponential", scale, (offset,), "ppm-exponential")
    with _noise._silenced():
        level = _sample_level(rng, levels, counts, a, b, m)
    index = int(kept[level])
    score, candidate = chosen[index]
    return Selection(index, score, candidate, offset)


def _integer_lattice(scores):
    """Integer scores as int64 lattice scores (``integer=True``), refused from 2^61 on."""
    if scores.size and (scores.min() <= -_MAX_LATTICE or scores.max() >= _MAX_LATTICE):
        raise ValueError(
            "scores are too large for exact selection: |score| must stay below 2^61.")
    return scores.astype(np.int64, copy=False)


def _own(candidates, loc):
    """The candidate at ``loc``, copied when it is a view: a kept row must not hold its
    whole block in memory (one candidate is kept per distinct score)."""
    if candidates is None:
        return None
    row = candidates[loc]
    return row.copy() if isinstance(row, np.ndarray) else row


def _levels(k):
    """Distinct values of ``k`` (sorted), their counts, and each entry's value as a code
    (its rank among the distinct values).

    Error counts span at most n + 1 values in a block: the codes then fit 16 bits, where
    numpy's stable argsort (in :func:`_nth_occurrence`) is a radix sort, and the counts
    are one ``bincount``.
    """
    low = k.min()
    span = int(k.max() - low) + 1
    if span <= 1 << 16:
        offsets = (k - low).astype(np.uint16)
        per_value = np.bincount(offsets, minlength=span)
        present = np.flatnonzero(per_value)
        if present.size == span:
            return present + low, per_value, offsets
        rank = np.zeros(span, dtype=np.uint16)
        rank[present] = np.arange(present.size)
        return present + low, per_value[present], rank[offsets]
    uniq, codes, cnt = np.unique(k, return_inverse=True, return_counts=True)
    return uniq, cnt, codes


def _nth_occurrence(codes, wanted, ranks, n_codes):
    """Positions of the ``ranks[i]``-th occurrence, in stream order, of code ``wanted[i]``
    (``wanted`` increasing); only the entries of wanted codes are sorted."""
    table = np.zeros(n_codes, dtype=bool)
    table[wanted] = True
    sub = np.flatnonzero(table[codes])
    sub_codes = codes[sub]
    order = np.argsort(sub_codes, kind="stable")
    starts = np.searchsorted(sub_codes[order], wanted)
    return sub[order[starts + ranks]]


def _sample_level(rng, levels, counts, a, b, m):
    """A level with probability ∝ counts_l exp(-γ (max - levels_l)), exactly.

    A few uniform proposals over the ``m`` candidates (a level with probability
    counts_l/m), kept with an exact Bernoulli(exp(-γ d)) coin; if they are all rejected
    (a best level with few candidates among very many), an envelope over the levels
    whose acceptance is about e^-1, so the draw costs O(levels) whatever the gap
    (:func:`skhybrid.mechanisms._exact_selection._sample_one`).
    """
    del m  # counts.sum()
    return _sample_one(rng, levels[-1] - levels, a, b, counts)


def _streamed_argmax(score_blocks, n_jobs):
    """The exact argmax (first index on ties): ε = inf, the non-private baseline."""
    best_index, best_score, best_candidate = -1, -np.inf, None
    offset = 0
    for item in _evaluated(score_blocks, n_jobs):
        scores, candidates = _split(item)
        if scores.size:
            local = int(np.argmax(scores))
            if best_index < 0 or scores[local] > best_score:
                best_index, best_score = offset + local, float(scores[local])
                best_candidate = None if candidates is None else candidates[local]
        offset += scores.size
    if best_index < 0:
        raise ValueError(
            "score_blocks yielded no candidate; the candidate class must be non-empty."
        )
    return Selection(best_index, best_score, best_candidate, offset)
