"""Sample sizes of the hybrid-model protocols with explicit constants (BKNSS §3, App. A).

The paper states its bounds in O(·); these helpers follow each proof with the explicit
constants of the building blocks as implemented here (docs/notes/building_blocks.rst:
the parity learner's accuracy, the hierarchical CDF, the quantile search),
so the numbers are sufficient for the guarantees of *this* code, not the paper's tightest.
"""

import math

from ..learners._parity_core import _inclusion_rate, _min_floor, parity_sample_size
from ..mechanisms.local.cdf import cdf_sample_size

__all__ = [
    "boosted_parity_size",
    "dkw_sample_size",
    "lemma33_curator_size",
    "lemma33_local_size",
    "theorem34_sample_sizes",
    "app_a_curator_size",
    "app_a_local_size",
    "app_a_paper_sizes",
]


def _check_unit(value, name):
    if not 0 < value < 1:
        raise ValueError(f"{name} must lie in (0, 1); got {value!r}.")
    return float(value)


def boosted_parity_size(d, alpha, beta, epsilon, floor=0.5, rate="tanh"):
    """Rows for an ε-DP (α, β)-learner of Parity_d: PPAR on ``k`` disjoint chunks.

    On realizable data a chunk is ⊥ only through its floor coin (probability ``q``), and
    a non-⊥ output has error > α with probability ``≤ β₁`` (docs/notes/building_blocks.rst,
    the parity learner's accuracy). The
    first non-⊥ of ``k`` chunks fails with probability ``≤ q^k + kβ₁``; take
    ``k = ⌈ln(2/β)/ln(1/q)⌉`` and ``β₁ = β/(2k)``, each chunk
    ``parity_sample_size(d, α, β₁, ε)`` rows. This is the explicit form of BKNSS
    Thm 2.17's ``O(d log(1/β)/(αε))``.

    Parameters
    ----------
    d : int
    alpha, beta : float in (0, 1)
    epsilon : float
    floor : float or "min", default=0.5
    rate : {"tanh", "klnrs"}

    Returns
    -------
    k, n_chunk, total : int
    """
    alpha, beta = _check_unit(alpha, "alpha"), _check_unit(beta, "beta")
    q = _min_floor(_inclusion_rate(epsilon, rate)) if floor == "min" else float(floor)
    q = _check_unit(q, "floor")
    k = max(1, math.ceil(math.log(2 / beta) / math.log(1 / q)))
    n_chunk = parity_sample_size(d, alpha, beta / (2 * k), epsilon, rate=rate)
    return k, n_chunk, k * n_chunk


def dkw_sample_size(accuracy, beta):
    """``⌈ln(2/β)/(2a²)⌉``: i.i.d. samples putting the empirical CDF within ``a`` of the truth.

    Dvoretzky–Kiefer–Wolfowitz with Massart's constant: ``Pr[sup|F_n − F| > a] ≤ 2e^{−2na²}``
    (BKNSS Lemma 3.3 proof, refs [23, 45]).
    """
    accuracy, beta = _check_unit(accuracy, "accuracy"), _check_unit(beta, "beta")
    return math.ceil(math.log(2 / beta) / (2 * accuracy**2))


def lemma33_curator_size(c, alpha, beta, epsilon, floor=0.5, rate="tanh"):
    """Curator rows ``m`` for BKNSS Lemma 3.3 (parity XOR threshold).

    The proof runs, on each of ``K = ⌈1/α⌉`` blocks of ``αm`` rows, an ``αε``-DP
    ``(α², αβ)``-learner of Parity_{c+1}, and needs the curator's empirical CDF within
    ``α²`` of the truth (DKW). So ``m = max(K · boosted_parity_size(c+1, α², αβ, αε),
    dkw_sample_size(α², β))`` — the paper's ``O(c log(1/(αβ))/(α⁴ε))`` plus the
    ``Ω(log(1/β)/α⁴)`` DKW condition the proof assumes.
    """
    alpha = _check_unit(alpha, "alpha")
    K = max(1, math.ceil(1 / alpha - 1e-9))
    _, _, per_block = boosted_parity_size(c + 1, alpha**2, alpha * beta, alpha * epsilon,
                                          floor=floor, rate=rate)
    return max(K * per_block, dkw_sample_size(alpha**2, beta))


def lemma33_local_size(b, alpha, beta, epsilon):
    """Local agents ``n`` for BKNSS Lemma 3.3: an ``α²``-accurate CDF (Thm 2.15) and DKW.

    ``n = max(cdf_sample_size(b, α², β, ε), dkw_sample_size(α², β))`` with the
    hierarchical-histogram constant of docs/notes/building_blocks.rst:
    ``2 c_ε² b² (b ln 2 + ln(2/β))/α⁴`` — the paper's ``O(b³ log(b/(αβ))/(α⁴ε²))``.
    """
    alpha = _check_unit(alpha, "alpha")
    return max(cdf_sample_size(b, alpha**2, beta, epsilon), dkw_sample_size(alpha**2, beta))


def theorem34_sample_sizes(c, alpha=1 / 72, beta=1 / 16, epsilon=1.0):
    """``(b, m, n)`` of BKNSS Theorem 3.4: ``b = c²``, ``m = O(c)``, ``n = O(c⁶ log c)``.

    Lemma 3.3 with constant ``α, β, ε``; its hypothesis errs on ``≤ 18αm`` curator rows,
    so the default ``α = 1/72`` gives the theorem's empirical error 1/4. ``m`` grows
    linearly in ``c`` (the DKW term is constant) and ``n = Θ(b³ log b) = Θ(c⁶ log c)``.
    """
    b = int(c) ** 2
    return b, lemma33_curator_size(c, alpha, beta, epsilon), lemma33_local_size(b, alpha, beta,
                                                                                 epsilon)


def app_a_curator_size(c, alpha, beta, epsilon, floor=0.5, rate="tanh"):
    """Curator rows for App. A: an ε-DP ``(α/2, β/2)``-learner of Parity_c (boosted PPAR)."""
    return boosted_parity_size(c, alpha / 2, beta / 2, epsilon, floor=floor, rate=rate)[2]


def app_a_local_size(b, alpha, beta, epsilon):
    """Local agents for App. A's threshold half, with skhybrid's quantile search.

    The search and its constants: docs/notes/building_blocks.rst, "A quantile by binary
    search".

    ``⌈4/α⌉ − 1`` quantiles, each by binary search over ``[0, 2^b]`` to ``τ = 1/4``
    (``T = b + 2`` rounds, fresh agents per round), ``λ = α/16``, failure
    ``β_q = β/(4(⌈4/α⌉ − 1))``: ``T · ⌈c_ε² ln(2T/β_q)/(2λ²)⌉`` agents per quantile. The
    paper gives the first half of the agents to the quantiles and the second half to the
    label counts, so ``n = 2 (⌈4/α⌉ − 1) T ⌈c_ε² ln(2T/β_q)/(2λ²)⌉`` — the
    ``O(b log(b/(αβ))/(α³ε²))`` of Theorem A.1.
    """
    alpha, beta = _check_unit(alpha, "alpha"), _check_unit(beta, "beta")
    n_q = math.ceil(4 / alpha - 1e-9) - 1
    T = b + 2
    lam = alpha / 16
    beta_q = beta / (4 * n_q)
    c_eps = 1 / math.tanh(epsilon / 2)
    per_round = math.ceil(c_eps**2 * math.log(2 * T / beta_q) / (2 * lam**2))
    return 2 * n_q * T * per_round


def app_a_paper_sizes(b, alpha, beta, epsilon, n_constant=8e5):
    """Theorem A.1's stated ``(c, m, n)``: ``c = √b``, ``m = 1000√b ln(1/β)/(εα)``,
    ``n = n_constant · b ln(b/(βα))/(α³ε²)``.

    The OCR of the paper renders n's constant as "8-10°" (8·10^? with a garbled
    exponent); 8·10⁵ is the conservative reading, and :func:`app_a_local_size` gives a
    derived sufficient value.
    """
    alpha, beta = _check_unit(alpha, "alpha"), _check_unit(beta, "beta")
    c = math.isqrt(int(b))
    m = math.ceil(1000 * math.sqrt(b) * math.log(1 / beta) / (epsilon * alpha))
    n = math.ceil(n_constant * b * math.log(b / (beta * alpha)) / (alpha**3 * epsilon**2))
    return c, m, n
