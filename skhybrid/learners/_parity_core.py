"""Core of the ε-DP parity learner of Kasiviswanathan et al. (KLNRS 2008).

The learner behind BKNSS Theorem 2.17 (Beimel, Korolova, Nissim, Sheffet,
Stemmer, *The power of synergy in differential privacy*, arXiv:1912.08951):
subsample the rows, solve the GF(2) system they define, and output a uniform
solution; with a constant probability output ⊥ instead. The estimator-facing
classes build on the functions here.

Privacy (docs/notes/building_blocks.rst, re-derived here)
---------------------------------------------------------
Let ``p`` be the inclusion rate and ``q`` the ⊥ floor. Fix neighbours ``z, z'``
differing in row ``i`` and let ``S'`` be the subsample of the other rows (same
law under both). Write ``V(S)`` for the affine solution space of the rows in
``S``.

* An output ``h ≠ ⊥``. Adding one equation to a consistent GF(2) system leaves
  ``V`` unchanged, halves it, or empties it, so for every ``S'`` a uniform draw
  satisfies ``Pr[h | V(S' ∪ {i})] ≤ 2 Pr[h | V(S')]``. Hence
  ``Pr[h | z] = (1-q)[(1-p)A + pB]`` with ``0 ≤ B ≤ 2A``, where ``A`` does not
  depend on row ``i``; so ``(1-q)(1-p)A ≤ Pr[h | z] ≤ (1-q)(1+p)A`` and the same
  for ``z'``. The ratio is at most ``(1+p)/(1-p)``.
* The output ⊥. With ``P0 = Pr[V(S') = ∅]`` and ``P1 = Pr[V(S' ∪ {i}) = ∅]``,
  ``Pr[⊥ | z] = q + (1-q)[(1-p)P0 + pP1]`` with ``P0 ≤ P1 ≤ 1``; the ratio is
  largest when ``P0 = 0``, one side has ``P1 = 0`` and the other ``P1 = 1``,
  giving at most ``1 + p(1-q)/q``. This is ``≤ (1+p)/(1-p)`` iff
  ``q ≥ (1-p)/(3-p)``.

So the algorithm is pure ``ln((1+p)/(1-p))``-DP when the floor condition holds
(:func:`parity_privacy_epsilon` gives the general level). With ``p = tanh(ε/2)``
this is exactly ``ε`` for every ``ε > 0``; with the KLNRS rate ``p = ε/4``
(KS 2023 App. B, Cor. B.3) it is ``≤ ε`` only for ``ε ≤ 3.83`` (≈ ε/2 for small ε).
Both bounds on non-⊥ outputs are attained (a row independent of all others,
with its label flipped).

**Without the floor (q = 0) the algorithm is not differentially private at
all**: on a realizable ``z``, ``Pr[⊥ | z] = 0``, while flipping one label makes
the system inconsistent with positive probability, so ``Pr[⊥ | z'] > 0`` and the
privacy loss is infinite. Returning a random parity instead of ⊥ does not fix it
either (its privacy loss grows with n). ``tests/learners/test_parity_core.py`` checks all
of this by exact enumeration.
"""

import math
import numbers

import numpy as np

from ..mechanisms import _noise
from ..mechanisms.gf2 import _check_binary, pack_bits, sample_affine_solution, solve_affine

__all__ = [
    "private_parity",
    "boosted_private_parity",
    "parity_privacy_epsilon",
    "parity_sample_size",
    "predict_parity",
]

# Root of ln((4 + ε)/(4 - ε)) = ε: above it the KLNRS rate p = ε/4 is not ε-DP.
_KLNRS_MAX_EPSILON = 3.8300


def _check_epsilon(epsilon):
    if not isinstance(epsilon, numbers.Real) or not epsilon > 0 or math.isnan(epsilon):
        raise ValueError(f"epsilon must be a positive float (or np.inf), got {epsilon!r}.")
    return float(epsilon)


def _inclusion_rate(epsilon, rate):
    """Subsampling rate ``p`` of PPAR for a target ``epsilon``, as the coins realise it.

    ``"tanh"``: ``p = tanh(ε/2)``, so ``ln((1+p)/(1-p)) = ε`` exactly.
    ``"klnrs"``: ``p = ε/4`` (KS 2023 App. B, Cor. B.3, after KLNRS 2008), valid
    while ``ln((1+ε/4)/(1-ε/4)) ≤ ε``, i.e. ``ε ≤ 3.83``.

    A row is dropped by a coin of probability ``1 − p`` rounded *up* to a multiple of
    2^-53 (:func:`~skhybrid.mechanisms._noise.coin_probability`); the rate returned is
    the one realised, ``1 −`` that (exact in floating point), so ``ln((1+p)/(1-p)) ≤ ε``
    also where ``tanh(ε/2)`` rounds to 1.0 (ε ≳ 38: then ``p = 1 − 2^-53``, about 37.4-DP).
    ``epsilon=np.inf`` gives ``p = 1`` (the non-private baseline).
    """
    epsilon = _check_epsilon(epsilon)
    if rate == "tanh":
        if math.isinf(epsilon):
            return 1.0
        t = math.exp(-epsilon)
        drop = 2.0 * t / (1.0 + t)  # 1 − tanh(ε/2), without cancellation
    elif rate == "klnrs":
        p = epsilon / 4
        if p >= 1 or math.log1p(p) - math.log1p(-p) > epsilon:
            raise ValueError(
                f"rate='klnrs' (p = epsilon/4) is epsilon-DP only for epsilon <= "
                f"{_KLNRS_MAX_EPSILON:.2f}, got epsilon={epsilon}; use rate='tanh'."
            )
        drop = 1.0 - p
    else:
        raise ValueError(f"rate must be 'tanh' or 'klnrs', got {rate!r}.")
    return 1.0 - _noise.coin_probability(drop, computed=True, positive=True)


def _min_floor(p):
    """Smallest ⊥ floor ``q`` with ``1 + p(1-q)/q ≤ (1+p)/(1-p)``, rounded up to the
    resolution of the ⊥ coin (:func:`~skhybrid.mechanisms._noise.coin_probability`).

    Derived in the module docstring (and in docs/notes/building_blocks.rst).
    """
    return _noise.coin_probability((1 - p) / (3 - p), computed=True)


def parity_privacy_epsilon(p, floor):
    """Proven pure-DP level of PPAR with inclusion rate ``p`` and ⊥ floor ``floor``.

    Parameters
    ----------
    p : float in [0, 1]
        Inclusion probability of each row.
    floor : float in [0, 1]
        Probability ``q`` of returning ⊥ before looking at the data.

    Returns
    -------
    epsilon : float
        ``max(ln((1+p)/(1-p)), ln(1 + p(1-q)/q))`` (module docstring;
        docs/notes/building_blocks.rst). ``inf`` when ``floor == 0 < p`` or ``p == 1 > floor``
        (``floor == 1`` never looks at the data and gives 0).
    """
    p, q = float(p), float(floor)
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p}.")
    if not 0 <= q <= 1:
        raise ValueError(f"floor must lie in [0, 1], got {q}.")
    if q == 1 or p == 0:
        return 0.0
    eps_h = math.inf if p == 1 else math.log1p(p) - math.log1p(-p)
    eps_bot = math.inf if q == 0 else math.log1p(p * (1 - q) / q)
    return max(eps_h, eps_bot)


def _check_data(X, y):
    X = _check_binary(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}.")
    y = _check_binary(y, "y")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must have shape (n_samples,) = ({X.shape[0]},), got {y.shape}."
        )
    return X, y


def _private_parity_packed(P, y, d, p, floor, rng):
    """PPAR on packed rows with no parameter checks; ``floor`` may be anything in [0, 1].

    ``floor < (1-p)/(3-p)`` (in particular 0) is *not* ε-DP: only tests use it,
    to show that the floor is needed. The ⊥ and drop coins realise ``floor`` and
    ``1 − p`` rounded up to multiples of 2^-53 (exact for the rates of
    :func:`_inclusion_rate`), which can only lower the privacy level.
    """
    if _noise.bernoulli(rng, floor, tag="parity_floor"):
        return None
    keep = ~_noise.bernoulli(rng, 1.0 - p, size=P.shape[0], tag="parity_drop")
    consistent, particular, null_basis = solve_affine(P[keep], y[keep], n_features=d)
    if not consistent:
        return None
    return sample_affine_solution(particular, null_basis, rng, tag="parity_solution")


def _private_parity_unchecked(X, y, p, floor, rng):
    """PPAR at rate ``p`` and floor ``floor`` without the floor check (tests only)."""
    X, y = _check_data(X, y)
    return _private_parity_packed(pack_bits(X), y, X.shape[1], p, floor, rng)


def _check_floor(p, floor):
    if not isinstance(floor, numbers.Real) or not 0 <= floor <= 1:
        raise ValueError(f"floor must be a probability in [0, 1], got {floor!r}.")
    if floor < _min_floor(p):
        raise ValueError(
            f"floor={floor} is below (1 - p)/(3 - p) = {_min_floor(p):.6g} for p={p:.6g}: "
            "the ⊥ output would leak more than epsilon (and floor=0 is not DP at all). "
            "Use floor >= that value; 0.5 always works."
        )
    return float(floor)


def private_parity(X, y, epsilon, rng, *, rate="tanh", floor=0.5):
    """ε-DP proper parity learner (KLNRS 2008; BKNSS Thm 2.17) with a ⊥ floor.

    With probability ``floor`` return ⊥ (None). Otherwise keep each row
    independently with probability ``p``, solve ``⟨r, x_i⟩ = y_i (mod 2)`` over
    the kept rows, and return ⊥ if that system is inconsistent, else a uniform
    element of its affine solution space (docs/notes/building_blocks.rst).

    Parameters
    ----------
    X : array-like of shape (n_samples, d)
        0/1 features.
    y : array-like of shape (n_samples,)
        0/1 labels.
    epsilon : float > 0
        Pure-DP level (replace-one neighbours). ``np.inf`` is accepted with
        ``rate="tanh"`` (``p = 1``; then pass ``floor=0`` for the non-private baseline).
    rng : numpy.random.Generator
        Source of every random draw.
    rate : {"tanh", "klnrs"}, default="tanh"
        ``"tanh"``: ``p = tanh(ε/2)``, exactly ε-DP for every ε.
        ``"klnrs"``: ``p = ε/4`` (KS 2023 App. B), ε-DP only for ``ε ≤ 3.83``
        (a ``ValueError`` above), and then conservative by about 2×.
    floor : float, default=0.5
        Probability ``q`` of returning ⊥ regardless of the data. Must satisfy
        ``q ≥ (1-p)/(3-p)`` (derived in the module docstring and in
        docs/notes/building_blocks.rst): the version without the floor is not DP.

    Returns
    -------
    r : ndarray of shape (d,), dtype uint8, or None
        The parity vector, or None for ⊥.

    Notes
    -----
    Privacy: see the module docstring (factor-2 halving argument for outputs
    ``h ≠ ⊥``, floor argument for ⊥); the level is
    ``parity_privacy_epsilon(p, floor) ≤ epsilon``. Utility: on data labelled by
    a parity ``r*``, ⊥ only comes from the floor coin and ``n ≥``
    :func:`parity_sample_size` gives error ≤ α with probability
    ``≥ (1 - floor)(1 - β)``.
    """
    p = _inclusion_rate(epsilon, rate)
    floor = _check_floor(p, floor)
    X, y = _check_data(X, y)
    return _private_parity_packed(pack_bits(X), y, X.shape[1], p, floor, rng)


def boosted_private_parity(X, y, epsilon, rng, n_chunks, *, rate="tanh", floor=0.5,
                           shuffle=True):
    """Run :func:`private_parity` on ``n_chunks`` disjoint chunks of the rows.

    Parameters
    ----------
    X, y, epsilon, rng, rate, floor
        As in :func:`private_parity`.
    n_chunks : int >= 1
        Number of disjoint chunks (as equal as possible, ``np.array_split``).
    shuffle : bool, default=True
        If True the chunks come from a uniformly random permutation of the row
        indices drawn from ``rng``; if False they are contiguous blocks in the
        given row order. Either way the assignment does not depend on the data
        values, which parallel composition needs.

    Returns
    -------
    outputs : list of length ``n_chunks``
        One parity vector (uint8 array) or None (⊥) per chunk.

    Notes
    -----
    Each person's row lies in exactly one chunk, so the list is ε-DP by
    parallel composition (KS 2023 App. B runs PPAR on disjoint batches in the
    same way); picking the first non-⊥ output, or validating candidates, is
    post-processing. If each chunk succeeds with probability ``s``, at least one
    of ``k`` chunks does with probability ``1 - (1-s)^k``.
    """
    p = _inclusion_rate(epsilon, rate)
    floor = _check_floor(p, floor)
    X, y = _check_data(X, y)
    if not isinstance(n_chunks, numbers.Integral) or n_chunks < 1:
        raise ValueError(f"n_chunks must be a positive integer, got {n_chunks!r}.")
    n, d = X.shape
    # Chunk assignment is not privacy noise (any data-independent partition works).
    order = _noise.permutation(rng, n, tag="parity-chunks") if shuffle else np.arange(n)
    P = pack_bits(X)
    return [
        _private_parity_packed(P[idx], y[idx], d, p, floor, rng)
        for idx in np.array_split(order, int(n_chunks))
    ]


def parity_sample_size(d, alpha, beta, epsilon, rate="tanh"):
    """Rows sufficient for error ≤ α w.p. ≥ (1 - floor)(1 - β) on realizable data.

    ``n = ceil((d ln 2 + ln(1/β)) / (p α))`` (docs/notes/building_blocks.rst): a
    fixed parity with error > α survives all ``n`` rows with probability
    ``≤ (1 - pα)^n ≤ e^{-pαn}``; union bound over ``2^d`` parities. With
    ``rate="klnrs"`` this is ``4(d ln 2 + ln(1/β))/(εα)``, i.e. the
    ``O(d log(1/β)/(αε))`` of BKNSS Thm 2.17.

    Parameters
    ----------
    d : int >= 0
    alpha, beta : float in (0, 1)
    epsilon : float > 0
    rate : {"tanh", "klnrs"}, default="tanh"

    Returns
    -------
    n : int
    """
    if not isinstance(d, numbers.Integral) or d < 0:
        raise ValueError(f"d must be a non-negative integer, got {d!r}.")
    for name, v in (("alpha", alpha), ("beta", beta)):
        if not 0 < v < 1:
            raise ValueError(f"{name} must lie in (0, 1), got {v!r}.")
    p = _inclusion_rate(epsilon, rate)
    return int(math.ceil((d * math.log(2) + math.log(1 / beta)) / (p * alpha)))


def predict_parity(r, X):
    """Evaluate the parity ``⟨r, x⟩ mod 2`` on every row of ``X``.

    Parameters
    ----------
    r : array-like of shape (d,)
        0/1 parity vector.
    X : array-like of shape (n_samples, d)
        0/1 features.

    Returns
    -------
    y : ndarray of shape (n_samples,), dtype uint8
    """
    r = _check_binary(r, "r").ravel()
    X = _check_binary(X, "X")
    if X.ndim != 2 or X.shape[1] != r.shape[0]:
        raise ValueError(f"X must have shape (n_samples, {r.shape[0]}), got {X.shape}.")
    return ((X.astype(np.int64) @ r.astype(np.int64)) & 1).astype(np.uint8)
