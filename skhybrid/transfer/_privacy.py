"""Privacy arithmetic of Subsample-Test-Reweigh (Kohen & Sheffet, "KS").

Per round, STR runs an (ε, δ)-DP learner on m i.i.d. draws from a κ-dense distribution μ
over the curator's n rows. For neighbouring datasets the two example distributions are
within total variation η = 1/(κn) (docs/notes/building_blocks.rst), and this module turns the
learner's guarantee into a per-round guarantee for the curator's rows:

* :func:`ks_claim41_amplification` — KS Claim 4.1, as the paper states it;
* :func:`coupled_sampling_amplification` — a bound valid for every ε, proved in its
  docstring (and in docs/notes/building_blocks.rst);
* :func:`str_curator_guarantee` — the whole fit's curator guarantee over ``max_iter``
  rounds, under either accounting (``"paper"``: Claim 4.1 + Thm 4.2; ``"tight"``:
  coupled sampling + the tightest valid composition);
* :func:`gaussian_rr_sigma` — the noise of the local agents' Gaussian randomized
  response (KS §2), with its exact privacy checked.

Composition itself is :mod:`skhybrid.accounting._composition`; nothing is retyped here.
"""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..accounting import _composition as comp
from ._exact_subsample import kappa_dense_tv_bound

__all__ = [
    "ks_claim41_amplification",
    "coupled_sampling_amplification",
    "gaussian_rr_sigma",
    "STRCuratorGuarantee",
    "str_curator_guarantee",
]


def _check_eps_delta(epsilon, delta, *, allow_zero_delta=True):
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite positive float; got epsilon={epsilon!r}.")
    lo_ok = delta >= 0 if allow_zero_delta else delta > 0
    if not (lo_ok and delta < 1):
        bound = "[0, 1)" if allow_zero_delta else "(0, 1)"
        raise ValueError(f"delta must lie in {bound}; got delta={delta!r}.")


def _check_draws(m, eta):
    if int(m) != m or m < 1:
        raise ValueError(f"m (number of draws) must be a positive integer; got m={m!r}.")
    if not (0.0 <= eta <= 1.0):
        raise ValueError(f"eta (total-variation bound) must lie in [0, 1]; got eta={eta!r}.")


def ks_claim41_amplification(epsilon, delta, m, kappa, n):
    """Per-round privacy of "learner on m draws from a κ-dense μ", as KS Claim 4.1 states it.

    ε* = 6·ε·m/(κn),   δ* = 4·m·e^{ε*}·δ/(κn).

    Parameters
    ----------
    epsilon, delta : float
        Privacy of the learner on datasets of size ``m``.
    m : int
        Number of i.i.d. draws (with replacement) from μ.
    kappa : float in (0, 1]
        Density of μ, so that TV(μ, μ') ≤ 1/(κn) for neighbouring datasets.
    n : int
        Number of curator rows.

    Returns
    -------
    epsilon_star, delta_star : float

    Notes
    -----
    Source: KS Claim 4.1, "immediately from Lemma 6.1 of Karwa & Vadhan (2018)" with
    η = TV ≤ 1/(κn) (Bun, Carmosino & Sorrell 2020). KV's lemma was not available to us;
    its side conditions are **unverified**. The constant 6 is consistent with the exact
    amplification (:func:`coupled_sampling_amplification`, ≈ 2mη·sinh ε) only for
    ε ≲ 1 (2·sinh ε ≤ 6ε iff ε ≤ 2.985), and KS only apply it with ε = 1. Some side
    condition is necessary: for ε ≥ 3 per-coordinate ε-randomized response on
    Bern(a)^m vs Bern(a + η)^m has a worst log-ratio above 6εmη (see the tests). Use it to reproduce the paper's numbers; the estimator's
    default accounting uses the coupled-sampling bound, which is proved for every ε.
    No check of ε ≤ 1 is made here, so that the paper's formulas can be evaluated as
    written.
    """
    _check_eps_delta(epsilon, delta)
    if not (0.0 < kappa <= 1.0):
        raise ValueError(f"kappa must lie in (0, 1]; got kappa={kappa!r}.")
    if not (n > 0):
        raise ValueError(f"n must be positive; got n={n!r}.")
    _check_draws(m, 0.0)
    eta = 1.0 / (kappa * n)
    eps_star = 6.0 * epsilon * m * eta
    delta_star = 4.0 * m * math.exp(eps_star) * delta * eta
    return eps_star, delta_star


def coupled_sampling_amplification(epsilon, delta, m, eta):
    """Privacy of an (ε, δ)-DP mechanism run on m i.i.d. draws from P vs Q, TV(P, Q) ≤ η.

    ε̂ = m·ln(1 + η(e^ε − 1)) − m·ln(1 − η(1 − e^{−ε})),

    δ̂ = δ·[e^{ε̂}·(1 − b^m) + (a^m − 1)]/(e^ε − 1),  a = 1 + η(e^ε − 1), b = 1 − η(1 − e^{−ε}).

    Valid for every ε > 0 (no side condition). ε̂ ≈ 2mη·sinh ε for small mη.

    Parameters
    ----------
    epsilon, delta : float
        Privacy of the mechanism M on datasets of size ``m`` (replace-one neighbours).
    m : int
        Number of i.i.d. draws with replacement (one row may be drawn several times).
    eta : float in [0, 1]
        Bound on the total variation between the two *example* distributions; for STR's
        κ-dense μ this is 1/(κn) (docs/notes/building_blocks.rst).

    Returns
    -------
    epsilon_hat, delta_hat : float

    Notes
    -----
    A replacement, valid for every ε, for Karwa–Vadhan Lemma 6.1 as used in KS Claim 4.1
    (docs/notes/building_blocks.rst). Proof:

    1. Maximal coupling: P = (1−η)R + ηP₁ and Q = (1−η)R + ηQ₁ for distributions R, P₁,
       Q₁ (if TV(P, Q) < η, mix the excess of R into P₁ and Q₁).
    2. Draw J ⊆ [m] with i.i.d. Bernoulli(η) membership, Y ~ R^m, Z ~ P₁^m, Z' ~ Q₁^m,
       all independent, and set X_j = Z_j, X'_j = Z'_j for j ∈ J, X_j = X'_j = Y_j
       otherwise. Then X ~ P^m and X' ~ Q^m, and given J with |J| = k both X and X' are
       within Hamming distance k of Y.
    3. Group privacy, pointwise in (Y, Z, Z'), with δ_k = δ(e^{kε} − 1)/(e^ε − 1):
       A_J := Pr[M(X) ∈ E | J] ≤ e^{kε}·g + δ_k and g ≤ e^{kε}·B_J + δ_k, where
       g = Pr[M(Y) ∈ E] does not depend on J and B_J := Pr[M(X') ∈ E | J].
    4. Average over K = |J| ~ Bin(m, η): E[e^{Kε}] = a^m, E[e^{−Kε}] = b^m,
       E[δ_K] = δ(a^m − 1)/(e^ε − 1), E[e^{−Kε}δ_K] = δ(1 − b^m)/(e^ε − 1). Hence
       Pr[M(X) ∈ E] ≤ a^m·g + E[δ_K] and Pr[M(X') ∈ E] ≥ b^m·g − E[e^{−Kε}δ_K].
    5. Eliminate g: Pr[M(X) ∈ E] ≤ (a/b)^m·Pr[M(X') ∈ E] + (a/b)^m·E[e^{−Kε}δ_K] + E[δ_K],
       which is the stated (ε̂, δ̂). The argument is symmetric in P and Q.

    A looser form has (1 + e^{ε̂})(a^m − 1) in the bracket; since 1 − e^{−x} ≤ e^{x} − 1
    its value is an upper bound of the one computed here.
    """
    _check_eps_delta(epsilon, delta)
    _check_draws(m, eta)
    eps_hat, slope = _amplification_terms(epsilon, m, eta)
    if eps_hat > 700.0:  # vacuous anyway; avoid overflow in e^{ε̂}
        return eps_hat, 1.0
    # δ̂ ≥ 1 is vacuous; capping keeps callers' arithmetic finite.
    return eps_hat, min(delta * slope, 1.0)


def _amplification_terms(epsilon, m, eta):
    """ε̂ and δ̂/δ of :func:`coupled_sampling_amplification` (uncapped; the slope is ``inf``
    when ε̂ > 700)."""
    em1 = math.expm1(epsilon)  # e^ε − 1
    log_a_m = m * math.log1p(eta * em1)
    log_b_m = m * math.log1p(-eta * -math.expm1(-epsilon))  # b = 1 − η(1 − e^{−ε})
    eps_hat = log_a_m - log_b_m
    if eps_hat > 700.0:
        return eps_hat, math.inf
    return eps_hat, (math.exp(eps_hat) * -math.expm1(log_b_m) + math.expm1(log_a_m)) / em1


def gaussian_rr_sigma(epsilon, delta):
    """Noise scale of KS's Gaussian randomized response RR_{ε,δ}.

    RR_{ε,δ}(b) ~ N(b, 2·ln(2/δ)/ε²) for b ∈ [0, 1] (KS §2), so σ = √(2 ln(2/δ))/ε.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)

    Returns
    -------
    sigma : float

    Raises
    ------
    ValueError
        If this σ is not (ε, δ)-DP for a sensitivity-1 input (happens only for ε ≳ 6.4).

    Notes
    -----
    The input b is a loss in [0, 1], so the sensitivity is 1. The classic Gaussian
    mechanism theorem (Dwork & Roth 2014, Thm A.1: σ ≥ √(2 ln(1.25/δ))·Δ/ε) covers this
    σ since 2/δ > 1.25/δ, but it is proved only for ε < 1. The exact privacy curve of
    Balle & Wang (:func:`skhybrid.accounting._composition.gaussian_delta`) shows this σ
    is (ε, δ)-DP well beyond that: for every δ ∈ (0, 1) whenever ε ≤ 6.39 (the worst δ
    is ≈ 0.5; the threshold is 8.99 at δ = 1e-4, 7.91 at 1e-2, 10.3 at 1e-8), and it
    fails above the threshold, where this function refuses it.
    :class:`~skhybrid.mechanisms.GaussianRandomizedResponse` releases exact discrete
    Gaussian noise of at least this σ (on a lattice, and more where zCDP needs it).
    """
    _check_eps_delta(epsilon, delta, allow_zero_delta=False)
    sigma = math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon
    # Judged exactly: δ(ε) at 1/σ rounded up, by an upper bound on the exact curve.
    exact_delta = comp._gaussian_delta_upper(comp._mu_at_least(1.0, sigma), epsilon)
    if exact_delta > delta:
        raise ValueError(
            f"Gaussian randomized response with sigma={sigma:.4g} is not ({epsilon}, "
            f"{delta})-DP (its exact delta at this epsilon is {exact_delta:.3g})."
        )
    return sigma


# --------------------------------------------------------------------------------------
# Composition over rounds (thin wrappers around skhybrid.accounting._composition).
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _composed_epsilon(epsilon, delta, k, target_delta, method="optimal"):
    """ε of k adaptive rounds of (ε, δ)-DP at total δ ``target_delta`` (``inf`` if infeasible).

    ``method="optimal"`` returns the minimum of basic composition, Dwork–Rothblum–Vadhan
    advanced composition (slack ``target_delta − kδ``), the Kairouz–Oh–Viswanath Thm 3.5
    closed form and the exact optimal homogeneous composition (KOV Thm 3.3) — all valid,
    so their minimum is. ``method="advanced"`` uses basic and DRV only (as KS Thm 4.2).
    """
    if method not in ("optimal", "advanced"):
        raise ValueError(f"method must be 'optimal' or 'advanced'; got {method!r}.")
    if k * delta > target_delta:
        return math.inf
    slack = target_delta - k * delta
    candidates = [comp.advanced_composition(epsilon, delta, k, slack)[0]]  # ≤ basic kε
    if method == "optimal":
        # KOV: total δ = 1 − (1 − δ̃)(1 − δ)^k, so δ̃ = 1 − (1 − target)/(1 − δ)^k.
        slack_kov = -math.expm1(math.log1p(-target_delta) - k * math.log1p(-delta))
        if slack_kov > 0:
            candidates.append(comp.kov_composition(np.full(k, epsilon), delta, slack_kov)[0])
            candidates.append(comp.optimal_homogeneous_epsilon(epsilon, delta, k, target_delta))
    return float(min(candidates))


@dataclass(frozen=True)
class STRCuratorGuarantee:
    """The curator's guarantee of a whole STR fit (see :func:`str_curator_guarantee`).

    Attributes
    ----------
    accounting : {"tight", "paper"}
    eta : float
        min(1, 1/(κn)), the per-draw total-variation bound.
    learner_epsilon, learner_delta : float
        (ε_M, δ_M) each round's learner is run with.
    round_epsilon, round_delta : float
        Per-round guarantee after amplification by κ-dense sampling.
    total_epsilon, total_delta : float
        Composed over ``max_iter`` rounds.
    feasible : bool
        Whether the accounting's own condition for the target ε holds (``"tight"``:
        total_epsilon ≤ ε; ``"paper"``: ε* ≤ ε/√(8T ln(2/δ)), KS Thm 4.2).
    """

    accounting: str
    eta: float
    learner_epsilon: float
    learner_delta: float
    round_epsilon: float
    round_delta: float
    total_epsilon: float
    total_delta: float
    feasible: bool


@lru_cache(maxsize=1024)  # pure: a fit's plan asks for the same guarantee repeatedly
def str_curator_guarantee(
    epsilon,
    delta,
    n_curator,
    kappa,
    subsample_size,
    max_iter,
    *,
    learner_epsilon=1.0,
    learner_delta=None,
    accounting="tight",
    composition="optimal",
):
    """Curator guarantee of ``max_iter`` STR rounds, each an (ε_M, δ_M)-DP learner on m draws.

    Each round of KS Algorithm 2 runs the learner on ``subsample_size`` i.i.d. draws from
    the κ-dense μᵗ; for neighbouring curator datasets (and the same history) the weight
    vectors differ in one coordinate, so the example distributions are within
    η = 1/(κn) in total variation (docs/notes/building_blocks.rst). The rounds compose
    adaptively;
    the test and the MW update are post-processing of the round's output and of data the
    curator's neighbour relation does not touch. The analysis always charges the cap
    ``max_iter``, never the data-dependent stopping time.

    * ``accounting="tight"``: per round
      :func:`coupled_sampling_amplification` (valid for every ε_M); δ_M defaults to the
      largest value with ``max_iter``·δ̂ = δ/2 (δ̂ is linear in δ_M), leaving δ/2 to the
      composition, which is the minimum of basic, DRV advanced, KOV closed-form and KOV
      optimal (``composition="advanced"``: DRV only). Feasible iff total ε ≤ ``epsilon``.
    * ``accounting="paper"``: KS Claim 4.1, ε* = 6ε_M·m/(κn), and KS Thm 4.2's arithmetic:
      DRV advanced composition with slack δ/2. δ_M resolves the paper's inconsistency
      (Algorithm 2 passes δ/(ε√(2T)), the proof κδ/(8eT); docs/notes/transfer_hybrid.rst): we
      take δ_M = κnδ/(8T·m·e^{ε*}), which makes δ* = 4m·e^{ε*}δ_M/(κn) = δ/(2T) exactly,
      the value the proof needs. Feasible iff ε* ≤ ε/√(8T ln(2/δ)) (the paper's condition,
      n ≥ 6ε_M·m·√(8T ln(2/δ))/(εκ)) and ε_M ≤ 1 (KS only apply Claim 4.1 at ε_M = 1; the
      side conditions of Karwa–Vadhan Lemma 6.1 are unverified and the constant 6 fails
      for ε_M ≳ 3).

    Parameters
    ----------
    epsilon, delta : float
        Target curator guarantee of the whole fit (δ > 0).
    n_curator : int
        Number of curator rows n (public).
    kappa : float in (0, 1]
    subsample_size : int
        m, draws per round.
    max_iter : int
        T, rounds charged.
    learner_epsilon : float, default=1.0
        ε_M.
    learner_delta : float or None, default=None
        δ_M; ``None`` chooses it as described above.
    accounting : {"tight", "paper"}, default="tight"
    composition : {"optimal", "advanced"}, default="optimal"
        Only for ``accounting="tight"``.

    Returns
    -------
    STRCuratorGuarantee
    """
    _check_eps_delta(epsilon, delta, allow_zero_delta=False)
    _check_eps_delta(learner_epsilon, 0.0)
    if not (0.0 < kappa <= 1.0):
        raise ValueError(f"kappa must lie in (0, 1]; got kappa={kappa!r}.")
    T, m, n = int(max_iter), int(subsample_size), int(n_curator)
    if T < 1 or m < 1 or n < 1:
        raise ValueError("n_curator, subsample_size and max_iter must be positive integers.")
    eta = kappa_dense_tv_bound(kappa, n)  # ≥ 1/(κn), what the exact draws realise
    if accounting == "tight":
        if learner_delta is None:
            # δ̂ is linear in δ_M (until capped at 1): its slope, then spend δ/2 over T
            # rounds. (The slope was read off δ̂(1/2), which the cap flattens whenever
            # δ̂(1/2) >= 1: δ_M came out too large and feasible fits were refused.)
            slope = _amplification_terms(learner_epsilon, m, eta)[1]
            d_m = min(0.5 * delta / T / slope, 0.5) if slope > 0 else 0.5
        else:
            d_m = float(learner_delta)
        eps_r, delta_r = coupled_sampling_amplification(learner_epsilon, d_m, m, eta)
        eps_tot = _composed_epsilon(eps_r, delta_r, T, delta, composition)
        return STRCuratorGuarantee(
            "tight", eta, learner_epsilon, d_m, eps_r, delta_r, eps_tot, delta,
            bool(eps_tot <= epsilon),
        )
    if accounting == "paper":
        eps_r = 6.0 * learner_epsilon * m * eta  # KS Claim 4.1 with η = 1/(κn)
        if eps_r > 700.0:
            # e^{ε*} overflows (the planner probes m = n, where ε* = 6/κ): the same
            # quantities in logs, and basic composition (DRV's term k·ε·(e^ε − 1) is
            # larger still). Such an ε* is vacuous.
            log_scale = math.log(4.0 * m * eta) + eps_r  # δ* = δ_M·e^{log_scale}
            if learner_delta is None:  # δ_M = δ/(8T·m·e^{ε*}/(κn)): δ* = δ/(2T)
                d_m = math.exp(math.log(delta / (2.0 * T)) - log_scale)
                delta_r = delta / (2.0 * T)
            else:
                d_m = float(learner_delta)
                delta_r = math.exp(min(math.log(d_m) + log_scale, 0.0)) if d_m > 0 else 0.0
            eps_tot, delta_tot = T * eps_r, min(T * delta_r, 1.0)
        else:
            if learner_delta is None:
                d_m = min(delta / (8.0 * T * m * eta * math.exp(eps_r)), 0.5)
            else:
                d_m = float(learner_delta)
            delta_r = min(4.0 * m * math.exp(eps_r) * d_m * eta, 1.0)
            eps_tot, delta_tot = comp.advanced_composition(eps_r, delta_r, T, delta / 2.0)
        feasible = (
            learner_epsilon <= 1.0
            and eps_r <= epsilon / math.sqrt(8.0 * T * math.log(2.0 / delta)) * (1 + 1e-12)
            and delta_tot <= delta * (1 + 1e-12)
        )
        return STRCuratorGuarantee(
            "paper", eta, learner_epsilon, d_m, eps_r, delta_r, eps_tot, delta_tot, feasible
        )
    raise ValueError(f"accounting must be 'tight' or 'paper'; got {accounting!r}.")
