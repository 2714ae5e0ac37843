"""Privacy arithmetic of Subsample-Test-Reweigh (Kohen & Sheffet, "KS").

Per round, STR runs an (ε, δ)-DP learner on m i.i.d. draws from a κ-dense distribution μ
over the curator's n rows. For neighbouring datasets the two example distributions are
within total variation η = 1/(κn) (BUILDING_BLOCKS §2.3), and this module turns the
learner's guarantee into a per-round guarantee for the curator's rows:

* :func:`ks_claim41_amplification` — KS Claim 4.1, as the paper states it;
* :func:`coupled_sampling_amplification` — a self-derived bound valid for every ε
  (BUILDING_BLOCKS §3.2), re-derived in its docstring;
* :func:`gaussian_rr_sigma` — the noise of the local agents' Gaussian randomized
  response (KS §2), with its exact privacy checked.

Composition over rounds lives in the private helpers at the bottom. They are local
because ``skhybrid.accounting._composition`` did not exist when this module was written;
the tests check that both agree.
"""

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom, norm

__all__ = [
    "ks_claim41_amplification",
    "coupled_sampling_amplification",
    "gaussian_rr_sigma",
    "gaussian_mechanism_delta",
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
        κ-dense μ this is 1/(κn) (BUILDING_BLOCKS §2.3).

    Returns
    -------
    epsilon_hat, delta_hat : float

    Notes
    -----
    Source: BUILDING_BLOCKS §3.2 (self-derived replacement for Karwa–Vadhan Lemma 6.1 as
    used in KS Claim 4.1). Proof, re-derived here:

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

    BUILDING_BLOCKS §3.2 states δ̂ with (1 + e^{ε̂})(a^m − 1) in the bracket; since
    1 − e^{−x} ≤ e^{x} − 1 its value is an upper bound of the one computed here.
    """
    _check_eps_delta(epsilon, delta)
    _check_draws(m, eta)
    em1 = math.expm1(epsilon)  # e^ε − 1
    one_minus_inv = -math.expm1(-epsilon)  # 1 − e^{−ε}
    log_a_m = m * math.log1p(eta * em1)
    log_b_m = m * math.log1p(-eta * one_minus_inv)
    eps_hat = log_a_m - log_b_m
    if eps_hat > 700.0:  # vacuous anyway; avoid overflow in e^{ε̂}
        return eps_hat, 1.0
    delta_hat = delta * (math.exp(eps_hat) * -math.expm1(log_b_m) + math.expm1(log_a_m)) / em1
    # δ̂ ≥ 1 is vacuous; capping keeps callers' arithmetic finite.
    return eps_hat, min(delta_hat, 1.0)


def gaussian_mechanism_delta(epsilon, sigma, sensitivity=1.0):
    """Exact δ(ε) of the Gaussian mechanism N(f(x), σ²) with ℓ₂-sensitivity Δ.

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ)
    (Balle & Wang, ICML 2018, Theorem 8; the mechanism is (ε, δ)-DP iff δ ≥ δ(ε)).

    Parameters
    ----------
    epsilon : float or array-like, >= 0
    sigma : float or array-like, > 0
    sensitivity : float, default=1.0

    Returns
    -------
    delta : float or ndarray
    """
    epsilon = np.asarray(epsilon, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    # log-domain second term: e^ε·Φ(−a−b) overflows/underflows separately for large ε.
    out = norm.cdf(a - b) - np.exp(epsilon + norm.logcdf(-a - b))
    return np.maximum(out, 0.0)[()]


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
    Balle & Wang (:func:`gaussian_mechanism_delta`) shows this σ is (ε, δ)-DP well
    beyond that: for every δ ∈ (0, 1) whenever ε ≤ 6.39 (the worst δ is ≈ 0.5; the
    threshold is 8.99 at δ = 1e-4, 7.91 at 1e-2, 10.3 at 1e-8), and it fails above the
    threshold. We check the exact δ here and refuse parameters where it fails.
    """
    _check_eps_delta(epsilon, delta, allow_zero_delta=False)
    sigma = math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon
    exact = float(gaussian_mechanism_delta(epsilon, sigma))
    if exact > delta:
        raise ValueError(
            f"Gaussian randomized response with sigma = sqrt(2 ln(2/delta))/epsilon is not "
            f"({epsilon}, {delta})-DP (exact delta {exact:.3g}); use epsilon <= 6 for the "
            "local agents."
        )
    return sigma


# --------------------------------------------------------------------------------------
# Composition (local helpers: skhybrid.accounting._composition did not exist yet).
# --------------------------------------------------------------------------------------


def _basic_composition_epsilon(epsilon, k):
    """k-fold basic composition: (kε, kδ)."""
    return k * epsilon


def _advanced_composition_epsilon(epsilon, k, delta_slack):
    """Dwork–Rothblum–Vadhan 2010, Thm 3.3 (Dwork & Roth Thm 3.20).

    k-fold adaptive composition of (ε, δ)-DP is (ε', kδ + δ')-DP with
    ε' = √(2k ln(1/δ'))·ε + k·ε·(e^ε − 1).
    """
    return math.sqrt(2.0 * k * math.log(1.0 / delta_slack)) * epsilon + k * epsilon * math.expm1(
        epsilon
    )


def _kov_closed_form_epsilon(epsilon, k, delta_slack):
    """Kairouz–Oh–Viswanath ICML'15 Thm 3.5 (homogeneous case).

    k-fold adaptive composition of (ε, δ)-DP is (ε̃, 1 − (1 − δ̃)(1 − δ)^k)-DP with
    ε̃ = min{kε, kε·tanh(ε/2) + √(2kε² ln(e + √(kε²)/δ̃)), kε·tanh(ε/2) + √(2kε² ln(1/δ̃))}.
    """
    head = k * epsilon * math.tanh(epsilon / 2.0)
    s2 = k * epsilon * epsilon
    return min(
        k * epsilon,
        head + math.sqrt(2.0 * s2 * math.log(math.e + math.sqrt(s2) / delta_slack)),
        head + math.sqrt(2.0 * s2 * math.log(1.0 / delta_slack)),
    )


def _optimal_homogeneous_delta(eps_g, epsilon, k):
    """δ(ε_g) of the optimal k-fold composition of ε-DP (Murtagh–Vadhan form of KOV Thm 3.3).

    δ(ε_g) = (1 + e^ε)^{−k}·Σ_{j ≥ j₀} C(k, j)(e^{jε} − e^{ε_g}e^{(k−j)ε}),
    j₀ = ⌈(ε_g + kε)/(2ε)⌉, written with binomial tails (p = e^ε/(1 + e^ε)) so that it
    neither overflows nor underflows at large k:
    δ(ε_g) = Pr[Bin(k, p) ≥ j₀] − e^{ε_g}·Pr[Bin(k, 1 − p) ≥ j₀].
    """
    if eps_g >= k * epsilon:
        return 0.0
    j0 = math.ceil((eps_g + k * epsilon) / (2.0 * epsilon))
    p = 1.0 / (1.0 + math.exp(-epsilon))
    tail_p = binom.sf(j0 - 1, k, p)
    log_tail_q = binom.logsf(j0 - 1, k, 1.0 - p)
    return max(float(tail_p - math.exp(eps_g + log_tail_q)), 0.0)


def _optimal_homogeneous_epsilon(epsilon, delta, k, target_delta):
    """Smallest ε_g with k-fold (ε, δ)-DP composition (ε_g, target_delta)-DP (KOV Thm 3.3).

    Total δ is 1 − (1 − δ)^k·(1 − δ(ε_g)) (KOV Thm 3.3); returns ``inf`` if even
    ε_g = kε cannot reach ``target_delta``.
    """
    log_keep = k * math.log1p(-delta)
    need = -math.expm1(math.log1p(-target_delta) - log_keep)  # δ(ε_g) budget
    if need < 0.0:
        return math.inf
    if _optimal_homogeneous_delta(0.0, epsilon, k) <= need:
        return 0.0
    return brentq(
        lambda e: _optimal_homogeneous_delta(e, epsilon, k) - need,
        0.0,
        k * epsilon,
        xtol=1e-12,
        rtol=1e-10,
    )


def _composed_epsilon(epsilon, delta, k, target_delta, method="optimal"):
    """ε of k adaptive rounds of (ε, δ)-DP at total δ ``target_delta`` (``inf`` if infeasible).

    ``method="optimal"`` returns the minimum of basic, DRV10 advanced, KOV closed form and
    the exact optimal homogeneous composition (all valid; the minimum is then valid).
    ``method="advanced"`` uses DRV10 alone (as KS Thm 4.2 does).
    """
    if k * delta > target_delta:
        return math.inf
    candidates = [_basic_composition_epsilon(epsilon, k)]
    slack = target_delta - k * delta
    if slack > 0:
        candidates.append(_advanced_composition_epsilon(epsilon, k, slack))
    if method == "advanced":
        return min(candidates)
    if method != "optimal":
        raise ValueError(f"method must be 'optimal' or 'advanced'; got {method!r}.")
    # KOV: total δ = 1 − (1 − δ̃)(1 − δ)^k.
    slack_kov = -math.expm1(math.log1p(-target_delta) - k * math.log1p(-delta))
    if slack_kov > 0:
        candidates.append(_kov_closed_form_epsilon(epsilon, k, slack_kov))
        candidates.append(_optimal_homogeneous_epsilon(epsilon, delta, k, target_delta))
    return min(candidates)
