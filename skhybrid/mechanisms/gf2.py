"""Bit-packed linear algebra over GF(2).

Rows are packed into ``uint64`` words: bit ``j % 64`` of word ``j // 64`` holds
coefficient ``j`` (little-endian bit order), and bits beyond the number of
features ``d`` are zero. Gaussian elimination loops over *pivot columns* only;
each step is a few numpy operations over all rows, so the cost is ``O(d)`` Python
iterations and ``O(n d^2 / 64)`` word operations (divided by 8 with the
table trick of :func:`_rref`).

The private parity learner (:mod:`skhybrid.learners._parity_core`) is the main
user: it needs the affine solution space ``V = r0 + null(A)`` of a subsampled
system and a *uniform* draw from it (KLNRS 2008; docs/notes/building_blocks.rst).
"""

import numpy as np

from . import _noise

__all__ = [
    "pack_bits",
    "unpack_bits",
    "solve_affine",
    "rank",
    "sample_affine_solution",
]

_WORD = 64
_ONE = np.uint64(1)


def _n_words(n_bits):
    return max(1, -(-n_bits // _WORD))


def _check_binary(X, name):
    X = np.asarray(X)
    if X.dtype == bool:
        return X.astype(np.uint8)
    if X.size and ((X != 0) & (X != 1)).any():
        raise ValueError(
            f"{name} must contain only 0/1 values (GF(2) coefficients); "
            f"binarise it first, e.g. (X > 0).astype(np.uint8)."
        )
    return X.astype(np.uint8)


def pack_bits(X):
    """Pack a 0/1 matrix into rows of little-endian ``uint64`` words.

    Packed rows make a GF(2) row operation one XOR per 64 columns, which is what the
    elimination routines below work on.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Entries must be 0 or 1 (bool is accepted).

    Returns
    -------
    P : ndarray of shape (n_samples, ceil(n_features / 64)), dtype uint64
        Bit ``j % 64`` of ``P[i, j // 64]`` equals ``X[i, j]``; padding bits are 0.
        At least one word is used, even when ``n_features == 0``.
    """
    X = _check_binary(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}; reshape it to (n, d).")
    n, d = X.shape
    n_words = _n_words(d)
    packed = np.packbits(X, axis=1, bitorder="little")
    buf = np.zeros((n, n_words * 8), dtype=np.uint8)
    buf[:, : packed.shape[1]] = packed
    # An explicit little-endian view keeps the layout independent of the host byte order.
    return buf.view("<u8").astype(np.uint64)


def unpack_bits(P, d):
    """Unpack rows of ``uint64`` words into a 0/1 matrix.

    The inverse of :func:`pack_bits`: padding bits beyond ``d`` are dropped.

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_words), dtype uint64
        Packed rows.
    d : int
        Number of features to return (``d <= 64 * n_words``).

    Returns
    -------
    X : ndarray of shape (n_samples, d), dtype uint8
        The 0/1 matrix.
    """
    P = np.asarray(P)
    if P.ndim != 2 or P.dtype != np.uint64:
        raise ValueError("P must be a 2-D uint64 array as returned by pack_bits.")
    if not 0 <= d <= P.shape[1] * _WORD:
        raise ValueError(f"d={d} must lie in [0, 64 * n_words] = [0, {P.shape[1] * _WORD}].")
    as_bytes = np.ascontiguousarray(P.astype("<u8")).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, count=d, bitorder="little")


def _as_packed(A_bits, n_features):
    """Return (packed copy, d). uint64 input is taken as packed, anything else as 0/1."""
    A = np.asarray(A_bits)
    if A.ndim != 2:
        raise ValueError(f"A_bits must be 2-dimensional, got shape {A.shape}.")
    if A.dtype != np.uint64:
        if n_features is not None and n_features != A.shape[1]:
            raise ValueError(
                f"n_features={n_features} disagrees with the unpacked A_bits width {A.shape[1]}."
            )
        return pack_bits(A), A.shape[1]
    if n_features is None:
        raise ValueError(
            "A_bits is packed (uint64), so pass n_features=d: the packed width cannot tell "
            "how many columns are real."
        )
    d = int(n_features)
    if not 0 <= d <= A.shape[1] * _WORD:
        raise ValueError(f"n_features={d} exceeds the {A.shape[1] * _WORD} packed columns.")
    A = A.copy()
    w, s = divmod(d, _WORD)
    if w < A.shape[1]:
        pad = A[:, w] >> np.uint64(s) if s else A[:, w]
        if pad.any() or A[:, w + 1 :].any():
            raise ValueError(f"A_bits has bits set beyond column n_features={d}; they must be 0.")
    return A, d


_GROUP = 8  # columns eliminated per pass (divides 64, so a group never straddles words)
# A fixed scrambled order of the 8-bit patterns (an affine bijection mod 256; its first 8
# entries are already linearly independent). Only speed depends on it, never the result.
_PATTERN_ORDER = (np.arange(1 << _GROUP) * 157 + 71) % (1 << _GROUP)
_SMALL_N = 1000  # below this many rows the per-group bookkeeping costs more than it saves


def _rref(M, n_cols):
    """Reduce packed rows ``M`` (in place) to reduced row-echelon form on columns < n_cols.

    Returns the list of pivot columns; row ``i`` of the result has its leading 1
    in ``pivots[i]`` and zeros in every other pivot column. Rows ``len(pivots):``
    are zero on columns ``< n_cols`` (extra columns, e.g. an augmented right-hand
    side, are carried along but never pivoted on).
    """
    if M.shape[0] < _SMALL_N:
        return _rref_columns(M, n_cols)
    return _rref_grouped(M, n_cols)


def _rref_columns(M, n_cols):
    """One pivot column per step: a row swap and one masked XOR over all rows."""
    n = M.shape[0]
    pivots = []
    row = 0
    for col in range(n_cols):
        if row == n:
            break
        w = col // _WORD
        shift = np.uint64(col % _WORD)
        bits = (M[:, w] >> shift) & _ONE
        hit = np.flatnonzero(bits[row:])
        if hit.size == 0:
            continue  # free column
        piv = row + hit[0]
        if piv != row:
            M[[row, piv]] = M[[piv, row]]
            bits[[row, piv]] = bits[[piv, row]]
        bits[row] = 0
        # The pivot row is zero on all columns < col (earlier pivots were cleared, earlier
        # free columns had no remaining row set), so only words >= w need the XOR.
        others = np.flatnonzero(bits)
        if others.size:
            M[others, w:] ^= M[row, w:]
        pivots.append(col)
        row += 1
    return pivots


def _rref_grouped(M, n_cols):
    """Same result as :func:`_rref_columns`, eight columns per step.

    Notes
    -----
    "Method of Four Russians" (Arlazarov et al. 1970; the M4RI library): columns
    are handled in groups of 8. The <= 8 pivot rows of a group are found from
    the distinct 8-bit patterns of the remaining rows and reduced among
    themselves; a table of all 2^k XOR-combinations of them then clears the
    group from every other row with a single gather-and-XOR. Python work is
    O(d) small steps; numpy work is O(n d^2 / (64 * 8)) words.
    """
    n = M.shape[0]
    pivots = []
    row = 0
    for c0 in range(0, n_cols, _GROUP):
        if row == n:
            break
        k = min(_GROUP, n_cols - c0)
        w, s0 = divmod(c0, _WORD)
        patterns = ((M[row:, w] >> np.uint64(s0)) & np.uint64((1 << k) - 1)).astype(np.int64)
        seen = np.bincount(patterns, minlength=1 << k)
        # Scan the patterns present in a fixed scrambled order: on generic data the first
        # ~k of them already have full rank (ascending order would walk all 2^k first).
        present = _PATTERN_ORDER[seen[_PATTERN_ORDER] > 0] if k == _GROUP else np.flatnonzero(seen)
        # XOR basis of the patterns, keyed by lowest set bit (= leftmost column).
        basis, chosen = {}, []
        for v in present.tolist():
            if len(chosen) == k:
                break  # the group already has full rank
            red = v
            while red:  # v == 0 never enters: the zero pattern carries no pivot
                low = (red & -red).bit_length() - 1
                if low not in basis:
                    basis[low] = red
                    chosen.append(v)
                    break
                red ^= basis[low]
        if not chosen:
            continue  # every column of the group is free
        # Rows of the remaining block carrying the chosen patterns (first occurrences).
        src = np.array([row + int(np.argmax(patterns == v)) for v in chosen])
        R = M[src].copy()
        cols = [c0 + b for b in sorted(basis)]
        # Gauss-Jordan on the <= 8 pivot rows alone, over the group's pivot columns.
        for j, c in enumerate(cols):
            sh = np.uint64(c % _WORD)
            i = j + int(np.argmax((R[j:, w] >> sh) & _ONE))
            R[[j, i]] = R[[i, j]]
            hit = np.flatnonzero((R[:, w] >> sh) & _ONE)
            hit = hit[hit != j]
            R[hit] ^= R[j]
        kk = len(cols)
        dst = row + np.arange(kk)
        # Move the pivot rows to positions row..row+kk-1; displaced rows take their slots.
        src_set, dst_set = set(src.tolist()), set(dst.tolist())
        M[sorted(src_set - dst_set)] = M[sorted(dst_set - src_set)]
        M[dst] = R
        # Table of all 2^kk combinations of the (reduced) pivot rows, words >= w only: the
        # pivot rows are zero on every column < c0.
        table = np.zeros((1 << kk, M.shape[1] - w), dtype=np.uint64)
        for j in range(kk):
            table[1 << j : 2 << j] = table[: 1 << j] ^ R[j, w:]
        idx = np.zeros(n, dtype=np.int64)
        for j, c in enumerate(cols):
            idx |= (((M[:, w] >> np.uint64(c % _WORD)) & _ONE).astype(np.int64)) << j
        idx[dst] = 0
        nz = np.flatnonzero(idx)
        if nz.size:
            M[nz, w:] ^= table[idx[nz]]
        pivots.extend(cols)
        row += kk
    return pivots


def rank(A_bits, n_features=None):
    """Compute the rank of a 0/1 matrix over GF(2).

    Gaussian elimination on packed rows (one XOR per 64 columns).

    Parameters
    ----------
    A_bits : ndarray
        Either packed rows (dtype uint64, then ``n_features`` is required) or a
        0/1 matrix of shape (n_samples, n_features).
    n_features : int, default=None
        Number of real columns of packed input.

    Returns
    -------
    r : int
        The rank.
    """
    M, d = _as_packed(A_bits, n_features)
    return len(_rref(M, d))


def solve_affine(A_bits, b, n_features=None):
    """Solve ``A r = b`` over GF(2) and describe the whole solution space.

    The solution space is affine: a particular solution plus the span of a null-space
    basis, or empty when the system is inconsistent.

    Parameters
    ----------
    A_bits : ndarray
        Either packed rows (dtype uint64, as from :func:`pack_bits`; then
        ``n_features`` is required) or a 0/1 matrix of shape (n_samples, n_features).
    b : array-like of shape (n_samples,)
        0/1 right-hand side.
    n_features : int, default=None
        Number of real columns ``d`` of packed input.

    Returns
    -------
    consistent : bool
        Whether a solution exists.
    particular : ndarray of shape (d,), dtype uint8, or None
        The solution with every free variable set to 0 (None if inconsistent).
    null_basis : ndarray of shape (k, d), dtype uint8
        Basis of ``null(A)``, one vector per free column (reduced row-echelon
        form, hence canonical); ``k = d - rank(A)``. The solution set is
        ``particular + span(null_basis)``, of size ``2**k``.

    Notes
    -----
    The right-hand side is packed as an extra column ``d`` and carried through
    the elimination. Works for any ``d`` (not only multiples of 64); memory is
    ``n * ceil((d + 1) / 64)`` words.
    """
    A, d = _as_packed(A_bits, n_features)
    b = _check_binary(b, "b").ravel()
    n = A.shape[0]
    if b.shape[0] != n:
        raise ValueError(f"b has {b.shape[0]} entries but A_bits has {n} rows; they must match.")
    need = _n_words(d + 1)
    if A.shape[1] < need:
        A = np.concatenate([A, np.zeros((n, need - A.shape[1]), dtype=np.uint64)], axis=1)
    A[:, d // _WORD] |= b.astype(np.uint64) << np.uint64(d % _WORD)

    pivots = _rref(A, d)
    r = len(pivots)
    rhs = ((A[:, d // _WORD] >> np.uint64(d % _WORD)) & _ONE).astype(np.uint8)
    is_free = np.ones(d, dtype=bool)
    is_free[pivots] = False
    free = np.flatnonzero(is_free)
    R = unpack_bits(A[:r], d) if r else np.zeros((0, d), dtype=np.uint8)
    null_basis = np.zeros((free.size, d), dtype=np.uint8)
    null_basis[np.arange(free.size), free] = 1
    if r:
        # Setting free variable f to 1 forces pivot variable p_i to R[i, f].
        null_basis[:, pivots] = R[:, free].T
    if rhs[r:].any():
        return False, None, null_basis
    particular = np.zeros(d, dtype=np.uint8)
    particular[pivots] = rhs[:r]
    return True, particular, null_basis


def sample_affine_solution(particular, null_basis, rng, *, tag="gf2_affine_solution"):
    """Draw uniformly from ``particular + span(null_basis)``.

    The private parity learner's output: every solution of the kept system is equally
    likely, which its privacy argument needs.

    Parameters
    ----------
    particular : ndarray of shape (d,)
        A solution (0/1).
    null_basis : ndarray of shape (k, d)
        Linearly independent 0/1 rows.
    rng : numpy.random.Generator
        Source of every random draw.
    tag : str, default="gf2_affine_solution"
        Label passed to :func:`skhybrid.mechanisms._noise.integers`.

    Returns
    -------
    r : ndarray of shape (d,), dtype uint8
        The drawn solution.

    Notes
    -----
    ``k`` uniform bits ``c`` give ``particular XOR c @ null_basis``; the map
    ``c -> c @ null_basis`` is a bijection onto the span because the rows are
    independent, so the output is uniform on the ``2**k`` solutions. The
    uniformity is what the factor-2 privacy argument needs (docs/notes/building_blocks.rst).
    """
    particular = np.asarray(particular, dtype=np.uint8)
    null_basis = np.asarray(null_basis, dtype=np.uint8)
    k = null_basis.shape[0]
    coeffs = _noise.integers(rng, 2, size=k, tag=tag)
    if k == 0:
        return particular.copy()
    offset = (coeffs.astype(np.int64) @ null_basis.astype(np.int64)) & 1
    return (particular ^ offset.astype(np.uint8)).astype(np.uint8)


def _solve_affine_naive(A, b):
    """Reference solver: Python ints as bitsets, one row at a time.

    Builds an XOR basis keyed by lowest set bit, inserting rows one by one, then
    back-substitutes to reduced row-echelon form. Same return value as
    :func:`solve_affine` for a 0/1 matrix ``A``. Only for tests and benchmarks.
    """
    A = np.asarray(A)
    n, d = A.shape
    b = np.asarray(b).ravel()
    basis = {}  # lowest coefficient bit -> row (int, rhs at bit d)
    consistent = True
    weights = [1 << j for j in range(d + 1)]
    coef_mask = (1 << d) - 1
    for i in range(n):
        row = sum(w for w, a in zip(weights, A[i].tolist()) if a) | (int(b[i]) << d)
        while row & coef_mask:
            low = (row & -row).bit_length() - 1
            if low not in basis:
                basis[low] = row
                break
            row ^= basis[low]
        else:
            if row:
                consistent = False
    pivots = sorted(basis)
    # Back-substitution, largest pivot first: row q only has bit p set when q < p, and
    # basis[p] is already clear on larger pivots, so one pass gives the reduced form.
    for p in reversed(pivots):
        for q in pivots:
            if q < p and (basis[q] >> p) & 1:
                basis[q] ^= basis[p]
    free = [j for j in range(d) if j not in basis]
    null_basis = np.zeros((len(free), d), dtype=np.uint8)
    for t, f in enumerate(free):
        null_basis[t, f] = 1
        for p in pivots:
            null_basis[t, p] = (basis[p] >> f) & 1
    if not consistent:
        return False, None, null_basis
    particular = np.zeros(d, dtype=np.uint8)
    for p in pivots:
        particular[p] = (basis[p] >> d) & 1
    return True, particular, null_basis
