"""Sample-complexity calculators for Subsample-Test-Reweigh (Kohen & Sheffet, "KS").

Each function reproduces one formula of the paper and names it. Two conventions:

* ``chi2_bound`` is a public upper bound on χ²(T‖S) itself, named as in
  :class:`SubsampleTestReweigh`; formulas use χ² + 1.
* Counts (T, N₀, n) are integers: an iteration bound "t* ≤ x" becomes ⌊x⌋, a size
  requirement "n ≥ x" becomes ⌈x⌉.

:func:`str_curator_size_tight` then gives the curator size skhybrid's own accounting
needs for the same end-to-end (ε, δ): coupled-sampling amplification per round
(:func:`~skhybrid.transfer._privacy.coupled_sampling_amplification`) composed over the
``max_iter`` rounds by the tightest valid composition theorem, and
:func:`str_min_curator_size` the minimum n under either accounting (used by the
estimator's error messages). For Algorithm 4 (private SGD), :func:`str_curator_size_rdp`
replaces the paper's tCDP analysis by an RDP bound proved for one draw from a κ-dense μ
(:mod:`skhybrid.accounting._rdp`).
"""

import math
from dataclasses import dataclass

from ._exact_subsample import kappa_dense_tv_bound
from ._privacy import str_curator_guarantee

__all__ = [
    "chi2_plus_one_gaussian_scale",
    "str_min_local_batch_size",
    "str_kappa",
    "str_max_iterations",
    "str_local_batch_size",
    "str_learner_delta",
    "str_subsample_size_app_c",
    "str_sgd_iterations",
    "str_sgd_sigma2",
    "str_curator_size_algorithm2",
    "str_curator_size_algorithm4",
    "STRRequirements",
    "str_requirements",
    "TightCuratorSize",
    "str_curator_size_tight",
    "str_min_curator_size",
    "RDPCuratorSize",
    "str_curator_size_rdp",
]


def _positive(name, value):
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite positive number; got {name}={value!r}.")


def _unit(name, value):
    if not (0 < value < 1):
        raise ValueError(f"{name} must lie in (0, 1); got {name}={value!r}.")


def chi2_plus_one_gaussian_scale(sigma_source, sigma_target, k):
    """Return χ²(T‖S) + 1 when T shrinks the std of k coordinates of a Gaussian S.

    χ² + 1 = (σ_S⁴/(σ_T²(2σ_S² − σ_T²)))^{k/2} (KS App. C with σ_S = 1, App. D);
    finite only if 2σ_S² > σ_T².

    Parameters
    ----------
    sigma_source : float
        Standard deviation σ_S of the source on the shifted coordinates.
    sigma_target : float
        Standard deviation σ_T of the target there.
    k : int
        Number of shifted coordinates.

    Returns
    -------
    chi2_plus_one : float
        The value of χ²(T‖S) + 1.
    """
    _positive("sigma_source", sigma_source)
    _positive("sigma_target", sigma_target)
    s2, t2 = sigma_source**2, sigma_target**2
    if not (2.0 * s2 > t2):
        raise ValueError(
            "chi-square divergence is infinite unless 2*sigma_source**2 > sigma_target**2."
        )
    return (s2 * s2 / (t2 * (2.0 * s2 - t2))) ** (k / 2.0)


def str_kappa(alpha, chi2_bound, *, denominator=8.0):
    """Return the density κ = α/(denominator·(χ² + 1)).

    KS Algorithm 2 and Algorithm 4 use denominator 8 (the Thm 4.3 proof needs the
    truncated importance weights to be κ-dense); KS App. D uses 4.

    Parameters
    ----------
    alpha : float in (0, 1)
        Target error α.
    chi2_bound : float
        Bound on χ²(T‖S).
    denominator : float, default=8.0
        The constant in the denominator.

    Returns
    -------
    kappa : float
        The density κ.
    """
    _unit("alpha", alpha)
    if not (chi2_bound >= 0):
        raise ValueError(f"chi2_bound must be >= 0; got chi2_bound={chi2_bound!r}.")
    _positive("denominator", denominator)
    return alpha / (denominator * (chi2_bound + 1.0))


def str_max_iterations(alpha, chi2_bound, *, loss_range=1.0, constant=128.0):
    """Iteration bound T = ⌊constant·(LD)²·log₂(8(χ² + 1)/α)/α²⌋.

    ``constant=128`` is KS Algorithm 2 / Thm 4.3 (loss in [0, 1]); with
    ``loss_range = L·D`` it is Algorithm 4; ``constant=32`` is the non-private
    Algorithm 1 / Thm 3.1. App. D's T_max = 141,536 uses α = 0.08, χ² + 1 = 1.35.
    """
    _unit("alpha", alpha)
    _positive("loss_range", loss_range)
    x = constant * loss_range**2 * math.log2(8.0 * (chi2_bound + 1.0) / alpha) / alpha**2
    return max(1, math.floor(x))


def str_local_batch_size(alpha, beta, epsilon, delta, max_iter):
    """Local agents per round N₀ = ⌈4 ln(2/δ) ln(8T/β)/(ε²α²)⌉ (KS Algorithms 2 and 4).

    One Gaussian-RR report per agent; N = N₀·T agents in total. App. D:
    N₀ = 419,301 at α = 0.08, β = 0.05, ε = 0.5, δ = 1e-4, T = 141,536.
    """
    _unit("alpha", alpha)
    _unit("beta", beta)
    _positive("epsilon", epsilon)
    _unit("delta", delta)
    x = 4.0 * math.log(2.0 / delta) * math.log(8.0 * max_iter / beta) / (epsilon**2 * alpha**2)
    return math.ceil(x)


def str_min_local_batch_size(alpha, rr_sigma):
    """Return the local agents per round for a test whose standard error is at most α/2.

    Each agent sends its 0/1 loss plus N(0, σ²) noise (Gaussian randomized response), so
    the mean of N₀ reports has variance at most (1/4 + σ²)/N₀. With N₀ = ⌈4(1/4 + σ²)/α²⌉
    the standard error is at most α/2: a hypothesis with target error 5α passes the 3α
    threshold of KS Algorithm 2 with probability at most Φ(−4) ≈ 3·10⁻⁵ per round. This is
    skhybrid's default, not the paper's N₀ (:func:`str_local_batch_size`, which adds a
    union bound over the T rounds and is far larger).

    Parameters
    ----------
    alpha : float in (0, 1)
        Target error α.
    rr_sigma : float
        Standard deviation σ of each agent's Gaussian randomized response.

    Returns
    -------
    n0 : int
        Agents per round.

    Examples
    --------
    >>> from skhybrid.transfer import str_min_local_batch_size
    >>> str_min_local_batch_size(0.1, 1.0)
    500
    """
    _unit("alpha", alpha)
    if not rr_sigma >= 0:
        raise ValueError(f"rr_sigma must be >= 0; got {rr_sigma!r}.")
    return math.ceil(4.0 * (0.25 + rr_sigma**2) / alpha**2 * (1 - 1e-12))


def str_learner_delta(epsilon, delta, max_iter, *, kappa=None, source="algorithm"):
    """δ passed to the curator's learner in KS Algorithm 2 (the paper is inconsistent).

    ``source="algorithm"``: δ/(ε√(2T)) (Algorithm 2, the m₁ line);
    ``source="proof"``: κδ/(8eT) (proof of Thm 4.2; needs ``kappa``).
    The two disagree (docs/notes/transfer_hybrid.rst); neither feeds the paper's n formula.
    """
    _positive("epsilon", epsilon)
    _unit("delta", delta)
    if source == "algorithm":
        return delta / (epsilon * math.sqrt(2.0 * max_iter))
    if source == "proof":
        if kappa is None:
            raise ValueError("kappa is required for source='proof' (delta_M = kappa*delta/(8eT)).")
        return kappa * delta / (8.0 * math.e * max_iter)
    raise ValueError(f"source must be 'algorithm' or 'proof'; got {source!r}.")


def str_subsample_size_app_c(d, alpha, max_iter, *, beta=0.05, paper_sign=True):
    """Subsample size of the App. C SVM experiment, ⌈(d + ln(β/T))/α⌉ as printed.

    The printed sign makes the log term *reduce* the size (48,022 draws for d = 500,
    α = 0.01, T ≈ 1.95e7); the usual bound is (d + ln(T/β))/α (51,979 draws),
    selected by ``paper_sign=False``. The sign is probably a typo
    (docs/notes/transfer_hybrid.rst).
    """
    _unit("alpha", alpha)
    log_term = math.log(beta / max_iter) if paper_sign else math.log(max_iter / beta)
    return math.ceil((d + log_term) / alpha)


def str_sgd_iterations(alpha, beta, lipschitz, diameter, sigma, d, *, strong_convexity=None):
    """Private-SGD steps R of KS Algorithm 3 / Theorem A.1.

    Convex: R = ⌈max{9D²(L² + σ²d)/α², 8D²L² ln(2/β)/α²}⌉.
    λ-strongly convex: R = ⌈max{4(L² + σ²d)/(λα)·ln((L² + σ²d)/(λα)), 8D²L² ln(2/β)/α²}⌉.
    """
    g2 = lipschitz**2 + sigma**2 * d
    tail = 8.0 * diameter**2 * lipschitz**2 * math.log(2.0 / beta) / alpha**2
    if strong_convexity is None:
        head = 9.0 * diameter**2 * g2 / alpha**2
    else:
        x = g2 / (strong_convexity * alpha)
        head = 4.0 * x * math.log(x)
    return math.ceil(max(head, tail))


def str_sgd_sigma2(epsilon, delta, lipschitz, kappa, n):
    """Noise variance of KS Algorithm 4: σ² = max{20L², (16ε⁻¹L² ln(1/δ) + 8L²)/ln(κn)}."""
    _positive("epsilon", epsilon)
    _unit("delta", delta)
    if not (kappa * n > 1):
        raise ValueError("Algorithm 4 needs kappa*n > 1 (ln(kappa*n) > 0).")
    L2 = lipschitz**2
    return max(
        20.0 * L2, (16.0 * L2 * math.log(1.0 / delta) / epsilon + 8.0 * L2) / math.log(kappa * n)
    )


def str_curator_size_algorithm2(subsample_size, max_iter, epsilon, delta, kappa):
    """Curator rows for KS Algorithm 2 / Thm 4.2: n = ⌈m₁·√(288·T·ln(2/δ))/(ε·κ)⌉.

    From 6·m₁/(κn) ≤ ε/√(8T ln(2/δ)) (Claim 4.1 with learner ε = 1, then advanced
    composition over T rounds); docs/notes/transfer_hybrid.rst.
    """
    _positive("epsilon", epsilon)
    _unit("delta", delta)
    return math.ceil(
        subsample_size * math.sqrt(288.0 * max_iter * math.log(2.0 / delta)) / (epsilon * kappa)
    )


def str_curator_size_algorithm4(sgd_iterations, max_iter, epsilon, kappa):
    """Curator rows for KS Algorithm 4 / App. A: n = ⌈√(x·ln x)⌉, x = 52·R·T/(8κ²ε).

    From the tCDP analysis of App. A (Thm A.3 applied to each of the R·T subsampled
    Gaussian steps). App. D: R = 50M, T = 1000, κ = α/(4(χ² + 1)), ε = 0.5 give
    ≈ 324.8M with χ² + 1 = 1.35 (the paper prints 324.7M). The tCDP subsampling theorem
    is applied outside its stated hypotheses (docs/notes/transfer_hybrid.rst, Thm A.3).
    """
    _positive("epsilon", epsilon)
    x = 52.0 * sgd_iterations * max_iter / (8.0 * kappa**2 * epsilon)
    return math.ceil(math.sqrt(x * math.log(x)))


@dataclass(frozen=True)
class STRRequirements:
    """Parameters and sample sizes of one STR configuration, per the paper.

    Returned by :func:`str_requirements`; the fields are read-only.

    Parameters
    ----------
    algorithm : int
        2 (generic DP learner) or 4 (private SGD).
    max_iter : int
        T, the number of rounds the privacy analysis charges.
    kappa : float
        The density κ of the reweighting distributions.
    local_batch_size : int
        N₀, fresh local agents per round.
    n_local : int
        N₀·T.
    draws_per_round : int
        The draws m₁ for Algorithm 2, R (one draw per SGD step) for Algorithm 4.
    learner_delta : float or None
        The learner's δ (Algorithm 2's δ/(ε√(2T))); ``None`` for Algorithm 4.
    n_curator : int
        Curator rows the paper's privacy analysis requires.
    """

    algorithm: int
    max_iter: int
    kappa: float
    local_batch_size: int
    n_local: int
    draws_per_round: int
    learner_delta: float | None
    n_curator: int


def str_requirements(
    alpha,
    beta,
    epsilon,
    delta,
    chi2_bound,
    *,
    algorithm=2,
    subsample_size=None,
    sgd_iterations=None,
    max_iter=None,
    kappa=None,
    loss_range=1.0,
):
    """Compute everything KS Algorithm 2 or 4 needs, as the paper computes it.

    The rounds T, the density κ, the local batch N₀ and the curator rows n of the paper's
    own privacy analysis (Claim 4.1 and Thm 4.2 for Algorithm 2, App. A for Algorithm 4);
    skhybrid's tighter accountings are :func:`str_curator_size_tight` and
    :func:`str_curator_size_rdp`.

    Parameters
    ----------
    alpha, beta : float in (0, 1)
        Target error and failure probability.
    epsilon, delta : float
        End-to-end guarantee for both populations.
    chi2_bound : float
        Public upper bound on χ²(T‖S) (the estimator's ``chi2_bound``).
    algorithm : {2, 4}
    subsample_size : int
        The draws m₁ per round, the learner's sample complexity m(α, β/T, 1, δ_M);
        required for Algorithm 2.
    sgd_iterations : int
        R — required for Algorithm 4.
    max_iter : int, optional
        Cap T; default :func:`str_max_iterations` (with ``loss_range`` = L·D for Alg. 4).
    kappa : float, optional
        Default :func:`str_kappa` with denominator 8 (App. D uses 4: pass it).
    loss_range : float, default=1.0
        L·D for Algorithm 4 (scales T by (LD)²).

    Returns
    -------
    requirements : STRRequirements
        The parameters and sizes.

    Examples
    --------
    KS Appendix D (Algorithm 4, R = 50M SGD steps, T = 1000, κ = α/(4(χ² + 1))); the paper
    prints n = 324.7M with χ² + 1 rounded to 1.35:

    >>> from skhybrid.transfer import (chi2_plus_one_gaussian_scale, str_kappa,
    ...                                str_requirements)
    >>> chi2 = chi2_plus_one_gaussian_scale(0.1, 0.07, 2) - 1
    >>> kappa = str_kappa(0.08, chi2, denominator=4.0)
    >>> req = str_requirements(0.08, 0.05, 0.5, 1e-4, chi2, algorithm=4,
    ...                        sgd_iterations=50_000_000, max_iter=1000, kappa=kappa)
    >>> f"{req.n_curator:,}"
    '325,193,494'
    """
    if max_iter is None:
        max_iter = str_max_iterations(alpha, chi2_bound, loss_range=loss_range)
    if kappa is None:
        kappa = str_kappa(alpha, chi2_bound)
    n0 = str_local_batch_size(alpha, beta, epsilon, delta, max_iter)
    if algorithm == 2:
        if subsample_size is None:
            raise ValueError(
                "algorithm=2 needs subsample_size (m1, the learner's sample complexity)."
            )
        draws = int(subsample_size)
        learner_delta = str_learner_delta(epsilon, delta, max_iter)
        n = str_curator_size_algorithm2(draws, max_iter, epsilon, delta, kappa)
    elif algorithm == 4:
        if sgd_iterations is None:
            raise ValueError("algorithm=4 needs sgd_iterations (R, private-SGD steps per round).")
        draws = int(sgd_iterations)
        learner_delta = None
        n = str_curator_size_algorithm4(draws, max_iter, epsilon, kappa)
    else:
        raise ValueError(f"algorithm must be 2 or 4; got {algorithm!r}.")
    return STRRequirements(
        algorithm, int(max_iter), kappa, n0, n0 * int(max_iter), draws, learner_delta, n
    )


@dataclass(frozen=True)
class TightCuratorSize:
    """Result of :func:`str_curator_size_tight`.

    The smallest curator size under skhybrid's tight accounting, with the guarantees it
    gives; the fields are read-only.

    Parameters
    ----------
    n_curator : int
        Smallest n meeting the target.
    eta : float
        1/(κn), the per-draw total-variation bound.
    round_epsilon, round_delta : float
        Per-round guarantee (coupled sampling).
    learner_delta : float
        The δ the learner may use (chosen when not given).
    total_epsilon, total_delta : float
        Composed guarantee over ``max_iter`` rounds (total_epsilon ≤ target ε).
    """

    n_curator: int
    eta: float
    round_epsilon: float
    round_delta: float
    learner_delta: float
    total_epsilon: float
    total_delta: float


def str_curator_size_tight(
    epsilon,
    delta,
    max_iter,
    kappa,
    subsample_size,
    *,
    learner_epsilon=1.0,
    learner_delta=None,
    composition="optimal",
):
    """Return the curator rows skhybrid's accounting needs for an end-to-end (ε, δ).

    Each round runs an (ε_M, δ_M)-DP learner on ``subsample_size`` i.i.d. draws from a
    κ-dense μ; neighbouring datasets give example distributions within η = 1/(κn)
    (:ref:`notes_kappa_dense`). The round is (ε̂, δ̂)-DP by
    :func:`~skhybrid.transfer._privacy.coupled_sampling_amplification`, and ``max_iter``
    adaptive rounds compose by the minimum of basic, Dwork–Rothblum–Vadhan advanced,
    Kairouz–Oh–Viswanath closed-form and optimal homogeneous composition (KOV Thm 3.3)
    (``composition="advanced"``: DRV only, as KS Thm 4.2). The smallest n whose
    composed ε at total δ is ≤ ``epsilon`` is found by bisection (everything is monotone
    in n).

    Parameters
    ----------
    epsilon, delta : float
        Target curator guarantee.
    max_iter : int
        T, the number of rounds charged (the cap, never the data-dependent stop).
    kappa : float in (0, 1]
        The density κ of the reweighting distributions.
    subsample_size : int
        The draws m₁ per round.
    learner_epsilon : float, default=1.0
        The learner's ε_M (KS use 1).
    learner_delta : float, optional
        The learner's δ_M. Default: the largest δ_M with T·δ̂ = δ/2, leaving δ/2 for the
        composition. The learner's m₁ depends on δ_M only logarithmically; compute m₁ at
        the returned ``learner_delta``.
    composition : {"optimal", "advanced"}, default="optimal"
        How the rounds compose (see above).

    Returns
    -------
    size : TightCuratorSize
        The smallest n and the guarantees it gives.

    Raises
    ------
    ValueError
        If no n ≤ 1e18 meets the target.

    Examples
    --------
    App. D's privacy parameters with T = 20 rounds of m₁ = 2000 draws:

    >>> from skhybrid.transfer import str_curator_size_tight, str_min_curator_size
    >>> kappa = 0.014798
    >>> f"{str_curator_size_tight(0.5, 1e-4, 20, kappa, 2000).n_curator:,}"
    '8,592,647'
    >>> f"{str_min_curator_size(0.5, 1e-4, 20, kappa, 2000, accounting='paper'):,}"
    '64,559,817'
    """
    _positive("epsilon", epsilon)
    _unit("delta", delta)
    if not (0 < kappa <= 1):
        raise ValueError(f"kappa must lie in (0, 1]; got kappa={kappa!r}.")
    T = int(max_iter)
    m = int(subsample_size)
    if T < 1 or m < 1:
        raise ValueError("max_iter and subsample_size must be positive integers.")

    def evaluate(n):
        g = str_curator_guarantee(
            epsilon, delta, n, kappa, m, T, learner_epsilon=learner_epsilon,
            learner_delta=learner_delta, accounting="tight", composition=composition,
        )
        return g.total_epsilon, (g.eta, g.round_epsilon, g.round_delta, g.learner_delta)

    lo = max(1, math.ceil(1.0 / kappa))
    if evaluate(lo)[0] <= epsilon:
        hi = lo
    else:
        hi = 2 * lo
        while evaluate(hi)[0] > epsilon:
            lo, hi = hi, 2 * hi
            if hi > 1e18:
                raise ValueError(
                    "no curator size up to 1e18 reaches the target; raise epsilon or delta, "
                    "or lower subsample_size, max_iter or learner_epsilon."
                )
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if evaluate(mid)[0] <= epsilon:
                hi = mid
            else:
                lo = mid
    eps_tot, (eta, eps_r, delta_r, d_m) = evaluate(hi)
    return TightCuratorSize(hi, eta, eps_r, delta_r, d_m, eps_tot, delta)


def str_min_curator_size(
    epsilon, delta, max_iter, kappa, subsample_size, *, learner_epsilon=1.0, accounting="tight"
):
    """Return the smallest curator size n for which STR's accounting certifies (ε, δ).

    ``accounting="tight"``: :func:`str_curator_size_tight` (optimal composition).
    ``accounting="paper"``: KS Thm 4.2's condition ε* = 6ε_M·m₁/(κn) ≤ ε/√(8T ln(2/δ)),
    i.e. n = ⌈6ε_M·m₁·√(8T ln(2/δ))/(εκ)⌉ (``str_curator_size_algorithm2`` at ε_M = 1).

    Parameters
    ----------
    epsilon, delta : float
        Target curator guarantee over ``max_iter`` rounds.
    max_iter : int
        T, the number of rounds charged.
    kappa : float in (0, 1]
        The density κ of the reweighting distributions.
    subsample_size : int
        The draws m₁ per round.
    learner_epsilon : float, default=1.0
        The learner's ε_M.
    accounting : {"tight", "paper"}, default="tight"
        Which analysis certifies the guarantee.

    Returns
    -------
    n_curator : int
        The smallest number of curator rows.
    """
    if accounting == "tight":
        return str_curator_size_tight(
            epsilon, delta, max_iter, kappa, subsample_size, learner_epsilon=learner_epsilon
        ).n_curator
    if accounting == "paper":
        _positive("epsilon", epsilon)
        _unit("delta", delta)
        x = 6.0 * learner_epsilon * subsample_size * math.sqrt(
            8.0 * max_iter * math.log(2.0 / delta)
        ) / (epsilon * kappa)
        return math.ceil(x * (1 - 1e-12))
    raise ValueError(f"accounting must be 'tight' or 'paper'; got {accounting!r}.")


@dataclass(frozen=True)
class RDPCuratorSize:
    """Result of :func:`str_curator_size_rdp`.

    The smallest curator size under the RDP accounting of KS Algorithm 4, with the
    guarantee it gives; the fields are read-only.

    Parameters
    ----------
    n_curator : int
        Smallest n meeting the target.
    eta : float
        1/(κn), the per-draw total-variation bound at that n.
    epsilon : float
        Curator ε of the R·T composed steps at that n (≤ target).
    best_order : float
        Rényi order attaining the conversion.
    noise_multiplier : float
        The ratio σ/L.
    """

    n_curator: int
    eta: float
    epsilon: float
    best_order: float
    noise_multiplier: float


# σ/L for KS Fact A.2's σ² = 20 L² (Appendix D).
_FACT_A2_NOISE_MULTIPLIER = math.sqrt(20.0)


def str_curator_size_rdp(epsilon, delta, sgd_iterations, max_iter, kappa, *,
                         noise_multiplier=_FACT_A2_NOISE_MULTIPLIER):
    """Curator rows for KS Algorithm 4 under skhybrid's RDP accounting.

    Every one of the R·T SGD steps draws one example from a κ-dense μᵗ (TV ≤ η = 1/(κn)
    between neighbours) and adds N(0, σ²I) to a gradient clipped to L (sensitivity 2L).
    Per step the RDP is :func:`skhybrid.accounting._rdp.subsampled_gaussian_rdp` with
    μ_G = 2/``noise_multiplier``; R·T steps compose (RDP adds) and convert to (ε, δ)
    (Balle et al. 2020, Thm 21). The smallest n with ε ≤ ``epsilon`` is found by
    bisection (the bound increases with η, hence decreases with n).

    Parameters
    ----------
    epsilon, delta : float
        Target curator guarantee.
    sgd_iterations : int
        R, steps per round.
    max_iter : int
        T, rounds charged.
    kappa : float in (0, 1]
        The density κ of the reweighting distributions.
    noise_multiplier : float, default=sqrt(20)
        The ratio σ/L. KS Algorithm 4's σ² = max{20L², (16ε⁻¹L² ln(1/δ) + 8L²)/ln(κn)} equals 20L²
        in App. D (at n = 324.7M the second term is 19.7L²).

    Returns
    -------
    size : RDPCuratorSize
        The smallest n and the guarantee it gives.

    Examples
    --------
    App. D's guarantee (ε = 0.5, δ = 1e-4, R = 50M, T = 1000, σ² = 20L²): 54.0M curator
    rows against the paper's 324.7M.

    >>> from skhybrid.transfer import str_curator_size_rdp
    >>> r = str_curator_size_rdp(0.5, 1e-4, 50_000_000, 1000, 0.014798)
    >>> f"{r.n_curator:,}", r.epsilon <= 0.5
    ('54,013,403', True)
    """
    from ..accounting._rdp import subsampled_gaussian_epsilon

    _positive("epsilon", epsilon)
    _unit("delta", delta)
    _positive("noise_multiplier", noise_multiplier)
    if not (0 < kappa <= 1):
        raise ValueError(f"kappa must lie in (0, 1]; got kappa={kappa!r}.")
    steps = int(sgd_iterations) * int(max_iter)
    if steps < 1:
        raise ValueError("sgd_iterations and max_iter must be positive integers.")
    mu = 2.0 / noise_multiplier

    def eps_at(n):
        return subsampled_gaussian_epsilon(kappa_dense_tv_bound(kappa, n), mu, steps, delta)

    lo = max(1, math.ceil(1.0 / kappa))
    if eps_at(lo)[0] <= epsilon:
        hi = lo
    else:
        hi = 2 * lo
        while eps_at(hi)[0] > epsilon:
            lo, hi = hi, 2 * hi
            if hi > 1e18:
                raise ValueError("no curator size up to 1e18 reaches the target; raise "
                                 "noise_multiplier or epsilon, or lower R or T.")
        while hi - lo > max(1, hi // 10**7):
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if eps_at(mid)[0] <= epsilon else (mid, hi)
    eps, order = eps_at(hi)
    return RDPCuratorSize(hi, kappa_dense_tv_bound(kappa, hi), eps, order, float(noise_multiplier))
