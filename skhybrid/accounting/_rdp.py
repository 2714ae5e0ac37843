"""Rényi DP of one noisy-gradient step on a draw from a distribution that moves by ≤ η.

The setting is one step of private SGD inside Subsample-Test-Reweigh (Kohen & Sheffet,
Algorithm 4): the step draws ONE example from a distribution μ over the curator's rows,
clips its gradient to norm L and adds N(0, σ²I). Under replace-one neighbours the two
example distributions are within total variation η (η = 1/(κn) for STR's κ-dense μ,
1/n for uniform sampling), and any two clipped gradients are within Δ = 2L.

Write μ_G = Δ/σ and A_η = (1 − η)·N(0, 1) + η·N(μ_G, 1), B = N(0, 1). This module
provides

* :func:`mixture_pair_delta` — δ(ε) = H_{e^ε}(A_η ‖ B), which bounds the step's privacy
  curve in *both* directions (proved in :func:`subsampled_gaussian_rdp`);
* :func:`subsampled_gaussian_rdp` — a per-step RDP bound derived from that curve (the
  one the accountants charge), valid for every order α > 1;
* :func:`mixture_pair_rdp` / :func:`mixture_pair_rdp_binomial` — the exact Rényi
  divergences of the pair in both orders, by numerical integration and (integer α) by the
  binomial closed form of Mironov, Talwar & Zhang (2019); used for checks (and the
  forward one, a lower bound on the charged RDP, to rule orders out of the accounting);
* :func:`rdp_to_dp_epsilon` — the RDP → (ε, δ) conversion of Balle et al. (2020);
* :func:`subsampled_gaussian_epsilon`, :func:`calibrate_subsampled_gaussian_mu` — k-fold
  composition (RDP adds) and its inverse.
"""

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.integrate import simpson
from scipy.special import erfcx, gammaln, log_ndtr, logsumexp

from ._composition import gaussian_delta

__all__ = [
    "DEFAULT_ORDERS",
    "mixture_pair_delta",
    "subsampled_gaussian_rdp",
    "mixture_pair_rdp",
    "mixture_pair_rdp_binomial",
    "rdp_to_dp_epsilon",
    "subsampled_gaussian_epsilon",
    "calibrate_subsampled_gaussian_mu",
]

#: Orders α at which RDP curves are evaluated (the usual grid of DP-SGD accountants).
DEFAULT_ORDERS = tuple(
    [1.1, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0, 14.0,
     16.0, 20.0, 24.0, 28.0, 32.0, 40.0, 48.0, 56.0, 64.0, 80.0, 96.0, 128.0, 160.0, 192.0,
     256.0, 384.0, 512.0, 768.0, 1024.0]
)

_N_GRID = 8001  # Simpson points per integral (odd)


def _check(eta, mu):
    if not (0.0 <= eta <= 1.0):
        raise ValueError(f"eta (total-variation bound) must lie in [0, 1]; got eta={eta!r}.")
    if not (mu >= 0 and math.isfinite(mu)):
        raise ValueError(f"mu (sensitivity / sigma) must be finite and >= 0; got mu={mu!r}.")


def _orders(alpha):
    if alpha is DEFAULT_ORDERS:  # (valid: skip the checks)
        return np.array(DEFAULT_ORDERS)
    a = np.atleast_1d(np.asarray(alpha, dtype=float))
    if np.any(~(a > 1)) or np.any(~np.isfinite(a)):
        raise ValueError(f"Rényi orders alpha must be finite and > 1; got {alpha!r}.")
    return a


def _log_gauss_curve(mu, s):
    """ln H_{e^s}(N(μ, 1) ‖ N(0, 1)) (Balle & Wang 2018, Thm 8), vectorised over s ≥ 0."""
    a = log_ndtr(mu / 2.0 - s / mu)
    b = s + log_ndtr(-mu / 2.0 - s / mu)
    with np.errstate(divide="ignore"):
        return a + np.log(-np.expm1(np.minimum(b - a, 0.0)))


def mixture_pair_delta(epsilon, eta, mu):
    """Privacy curve of the dominating pair: δ(ε) = H_{e^ε}(A_η ‖ B).

    δ(ε) = η·δ_G(ln(1 + (e^ε − 1)/η)), δ_G the Gaussian curve of multiplier ``mu``
    (Balle & Wang 2018, Thm 8), by the advanced joint convexity identity of Balle, Barthe
    & Gaboardi (2018, Thm 2), which holds with equality for this pair.

    Parameters
    ----------
    epsilon : float or array-like, >= 0
    eta : float in [0, 1]
    mu : float >= 0
        Δ/σ.

    Returns
    -------
    delta : float or ndarray
    """
    _check(eta, mu)
    eps = np.asarray(epsilon, dtype=float)
    if eta == 0.0 or mu == 0.0:
        out = np.zeros_like(eps)
    else:
        inner = np.log1p(np.expm1(eps) / eta)
        out = eta * np.asarray(gaussian_delta(mu, inner))
    return float(out) if out.ndim == 0 else out


def subsampled_gaussian_rdp(alpha, eta, mu):
    """Per-step RDP bound ε(α) of "Gaussian step on one draw from μ, TV(μ, μ') ≤ η".

    ε(α) = ln(1 + B_α)/(α − 1) with

        B_α = α(α − 1)·η²·∫₀^∞ [(1 + ηt)^{α−2} + (1 + ηt)^{−α−1}]·δ_G(ln(1 + t)) dt,

    δ_G(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) the Gaussian curve of multiplier μ = Δ/σ.
    At η = 1 this is exactly αμ²/2, the Gaussian mechanism's RDP.

    Parameters
    ----------
    alpha : float or array-like, > 1
        Rényi orders (any real order; not restricted to integers).
    eta : float in [0, 1]
        Total-variation bound between the two example distributions.
    mu : float >= 0
        Δ/σ, with Δ = 2L the replace-one ℓ2 sensitivity of a gradient clipped to norm L.

    Returns
    -------
    rdp : ndarray of shape (len(alpha),)

    Notes
    -----
    *Why this bounds the step (proof sketch).* Fix the history (adaptive composition).
    The released noisy gradient has law P = Σ_i μ_i N(g_i, σ²I) on one dataset and
    Q = Σ_i μ'_i N(g'_i, σ²I) on a neighbour, with ‖g‖ ≤ L for every clipped gradient.

    1. Coupling: the example distributions are within TV η (η = 1/(κn), proved in
       docs/notes/building_blocks.rst, "The κ-dense projection and its stability"), so
       P = (1 − η)R + ηP₁, Q = (1 − η)R + ηQ₁ where R, P₁, Q₁ are mixtures of
       N(g, σ²I), ‖g‖ ≤ L (if the TV is η' < η use η'; the bound below increases with η).
    2. Advanced joint convexity (Balle, Barthe & Gaboardi 2018, Thm 2): for γ ≥ 1,
       H_{1+η(γ−1)}(P‖Q) = η·H_γ(P₁ ‖ (1 − β)R + βQ₁) ≤ η·max(H_γ(P₁‖R), H_γ(P₁‖Q₁)),
       and by joint convexity of H_γ over the mixture components each term is at most
       sup_{‖a−b‖≤2L} H_γ(N(a, σ²I)‖N(b, σ²I)) = δ_G(ln γ) with μ = 2L/σ. Hence
       H_γ(P‖Q) ≤ G(γ) := H_γ(A_η‖B) = η·δ_G(ln(1 + (γ − 1)/η)) for all γ ≥ 1, and the
       same for H_γ(Q‖P) (swap P₁ and Q₁). This is :func:`mixture_pair_delta`.
    3. Rényi from hockey-stick (Taylor's formula with integral remainder for
       f(x) = x^α, as in the Liese–Vajda representation of f-divergences):
       E_Q[(dP/dQ)^α] − 1 = ∫₁^∞ α(α−1)[γ^{α−2}H_γ(P‖Q) + γ^{−α−1}H_γ(Q‖P)] dγ.
       Both weights are positive, so replacing both hockey-sticks by G gives
       E_Q[(dP/dQ)^α] − 1 ≤ B_α, and the substitution γ = 1 + ηt gives the formula.

    The pair (A_η, B) is the Poisson-subsampled Gaussian of Mironov, Talwar & Zhang
    (2019) with sampling rate η and sensitivity 2L; B_α exceeds the exact
    max(D_α(A_η‖B), D_α(B‖A_η)) only through the second direction's small-γ weight
    (≤ 2× at second order in η, ≈ 1 for μ ≲ 1; see the tests). Neither the tCDP
    subsampling theorem of Bun et al. (2018, Thm 12; KS Thm A.3) nor the RDP bound of
    Wang, Balle & Kasiviswanathan (2019, Thm 9) is needed: their hypotheses (uniform
    sampling without replacement) do not match one draw from a non-uniform μ that itself
    changes between neighbours, whereas steps 1–3 use only the mixture structure.

    The integral is computed by Simpson's rule in s = ln(1 + t) over [0, s*+15μ], where
    s* = μ²/2 + max(α − 1, 1)μ² bounds the integrand's mode; the tests compare it with
    closed forms to 1e-6 relative.
    """
    _check(eta, mu)
    a = _orders(alpha)
    if eta == 0.0 or mu == 0.0:
        return np.zeros_like(a)
    return np.array([_rdp_one(float(al), eta, mu) for al in a])


@lru_cache(maxsize=4096)  # the calibration's last secant step is its final check's input
def _rdp_one(al, eta, mu, n_grid=_N_GRID):
    """:func:`subsampled_gaussian_rdp` at one order (``0 < eta``, ``0 < mu``).

    Simpson's rule on 8,001 points of :func:`_log_integrand`: within 1.4e-10 relative of
    an 8× finer grid over η in [1e-5, 1], μ in [0.01, 8] and the default orders (the
    worst at order 1024; mostly below 1e-12). Smaller η sharpens the weight's bend: at
    η = 1e-8, μ = 0.2 the orders 512 and 768 come out 2.0e-10 and 8.5e-10 low against a
    16× finer grid (a composite 128-panel, 8-node Gauss–Legendre rule agrees with that
    grid to 3e-14 wherever the RDP is below 100, at about a third of the cost).
    """
    s_max = mu * mu / 2.0 + max(al - 1.0, 1.0) * mu * mu + 15.0 * mu
    s = _linspace(s_max, n_grid)
    log_f = _log_integrand(al, eta, mu, s)
    top = log_f.max()
    log_f -= top
    integral = (np.exp(log_f, out=log_f) @ _simpson_weights(n_grid)) * (s_max / (n_grid - 1) / 3.0)
    log_b = math.log(al * (al - 1.0)) + 2.0 * math.log(eta) + top + math.log(integral)
    return float(np.logaddexp(0.0, log_b) / (al - 1.0))


@lru_cache(maxsize=8)
def _arange(n):
    out = np.arange(n, dtype=float)
    out.flags.writeable = False
    return out


def _linspace(stop, n):
    """``np.linspace(0.0, stop, n)``, bit for bit (the same ``arange(n)·step`` with the
    last point set to ``stop``), without re-making the index grid on every call."""
    out = _arange(n) * (stop / (n - 1))
    out[-1] = stop
    return out


@lru_cache(maxsize=8)
def _simpson_weights(n):
    """Simpson's weights 1, 4, 2, 4, …, 4, 1 on ``n`` (odd) equally spaced points: with
    the step h, the rule is h/3 times the weighted sum (``scipy.integrate.simpson`` on
    the same grid to rounding, ~1e-16 relative, at a tenth of the cost)."""
    out = np.ones(n)
    out[1:-1:2] = 4.0
    out[2:-1:2] = 2.0
    out.flags.writeable = False
    return out


def mixture_pair_rdp(alpha, eta, mu, order="forward"):
    """Exact Rényi divergence of the pair, by numerical integration.

    ``order="forward"``: D_α(A_η ‖ B); ``"reverse"``: D_α(B ‖ A_η), with
    A_η = (1 − η)N(0, 1) + ηN(μ, 1), B = N(0, 1) (the Poisson-subsampled Gaussian pair of
    Mironov, Talwar & Zhang 2019, §3). Computed as ln E_B[ℓ^α]/(α − 1), resp.
    ln E_B[ℓ^{1−α}]/(α − 1), with ℓ = dA_η/dB, by Simpson's rule on z ~ N(0, 1).

    Parameters
    ----------
    alpha : float or array-like, > 1
    eta : float in [0, 1]
    mu : float >= 0
    order : {"forward", "reverse"}

    Returns
    -------
    rdp : ndarray
    """
    _check(eta, mu)
    if order not in ("forward", "reverse"):
        raise ValueError(f"order must be 'forward' or 'reverse'; got {order!r}.")
    a = _orders(alpha)
    if eta == 0.0 or mu == 0.0:
        return np.zeros_like(a)
    log_1m_eta = math.log1p(-eta) if eta < 1.0 else -np.inf
    out = np.empty_like(a)
    for j, al in enumerate(a):
        power = al if order == "forward" else 1.0 - al
        lo = -14.0 + min(0.0, power * mu)
        hi = 14.0 + max(0.0, power * mu) + mu
        z = np.linspace(lo, hi, 4 * _N_GRID + 1)
        log_l = np.logaddexp(log_1m_eta, math.log(eta) + mu * z - mu * mu / 2.0)
        log_f = -0.5 * z * z - 0.5 * math.log(2 * math.pi) + power * log_l
        top = np.max(log_f)
        out[j] = (top + math.log(simpson(np.exp(log_f - top), x=z))) / (al - 1.0)
    return out


def mixture_pair_rdp_binomial(alpha, eta, mu):
    """D_α(A_η ‖ B) for integer α, in closed form.

    E_B[(dA_η/dB)^α] = Σ_{k=0}^{α} C(α, k)(1 − η)^{α−k} η^k exp((k² − k)μ²/2)
    (Mironov, Talwar & Zhang 2019, §3.3, "A_α" for integer α), summed in the log domain.
    """
    _check(eta, mu)
    a = _orders(alpha)
    if np.any(a != np.round(a)):
        raise ValueError("mixture_pair_rdp_binomial needs integer orders alpha >= 2.")
    out = np.empty_like(a)
    for j, al in enumerate(a.astype(int)):
        k = np.arange(al + 1)
        log_c = gammaln(al + 1) - gammaln(k + 1) - gammaln(al - k + 1)
        with np.errstate(divide="ignore"):
            terms = (log_c + (al - k) * np.log1p(-eta) + k * np.log(eta)
                     + (k * k - k) * mu * mu / 2.0)
        out[j] = logsumexp(terms) / (al - 1)
    return out


def rdp_to_dp_epsilon(rdp, orders, delta):
    """Smallest ε over the orders at which an RDP curve implies (ε, δ)-DP.

    ε = min_α  rdp(α) + ln((α − 1)/α) − (ln δ + ln α)/(α − 1)

    (Balle, Barthe, Gaboardi, Hsu & Sato 2020, "Hypothesis testing interpretations and
    Rényi differential privacy", Thm 21; the same bound as Canonne, Kamath & Steinke
    2020, Prop. 12). It is below Mironov's (2017, Prop. 3) rdp(α) + ln(1/δ)/(α − 1).

    Parameters
    ----------
    rdp : array-like
        RDP ε(α) at each order.
    orders : array-like
        The orders α > 1.
    delta : float in (0, 1)

    Returns
    -------
    epsilon : float
        Clipped at 0.
    best_order : float
        The α attaining the minimum.
    """
    a = _orders(orders)
    r = np.asarray(rdp, dtype=float)
    if r.shape != a.shape:
        raise ValueError("rdp and orders must have the same length.")
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must lie in (0, 1); got delta={delta!r}.")
    eps = r + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    j = int(eps.argmin())
    return max(float(eps[j]), 0.0), float(a[j])


def subsampled_gaussian_epsilon(eta, mu, steps, delta, orders=DEFAULT_ORDERS):
    """(ε, δ) of ``steps`` adaptive subsampled-Gaussian steps (RDP adds; Mironov 2017).

    Parameters
    ----------
    eta : float in [0, 1]
    mu : float
        Δ/σ of each step.
    steps : int
    delta : float in (0, 1)
    orders : sequence of float, default=DEFAULT_ORDERS

    Returns
    -------
    epsilon : float
    best_order : float

    Notes
    -----
    The minimum over the orders of :func:`rdp_to_dp_epsilon` of ``steps`` times
    :func:`subsampled_gaussian_rdp`. Only the orders that can attain it are integrated at
    full precision. The order with the smallest lower bound (the forward divergence of
    the pair in closed form, Mironov, Talwar & Zhang 2019, §3.3; see :func:`_rdp_lower`)
    comes first; an order whose lower bound exceeds the ε found cannot attain the
    minimum, which rules out all but one to a few orders. Those few are screened by a
    129-point quadrature (its error bound, 2e-3 to 5e-2 of the RDP, grows with the
    order; see :func:`_coarse_rtol`). The result equals the all-order computation
    (tests compare them). Results are cached per argument tuple (the same inputs give
    the same, exact, value).
    """
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be a positive integer; got steps={steps!r}.")
    a = _orders(orders)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must lie in (0, 1); got delta={delta!r}.")
    _check(eta, mu)
    if eta == 0.0 or mu == 0.0:
        return rdp_to_dp_epsilon(np.zeros_like(a), a, delta)
    return _epsilon_cached(float(eta), float(mu), int(steps), float(delta),
                           tuple(float(x) for x in a))


def _subsampled_gaussian_epsilon_full(eta, mu, steps, delta, orders=DEFAULT_ORDERS):
    """Every order at full precision: the reference :func:`subsampled_gaussian_epsilon`
    must equal (used by the tests)."""
    a = _orders(orders)
    return rdp_to_dp_epsilon(steps * subsampled_gaussian_rdp(a, eta, mu), a, delta)


# ---------------------------------------------------------------- fast exact evaluation

#: Points of the screening quadrature.
_COARSE_GRID = 129


def _coarse_rtol(a):
    """Relative error allowed for the screening quadrature's RDP at the orders ``a``.

    Its error grows with the order (the weight's bend at s ≈ ln(1/η) sharpens): measured
    against :func:`_rdp_one` over η in [1e-8, 1], μ in [1e-3, 8] (RDP < 1e4), at most
    4.3e-4 for α ≤ 128, 2.4e-3 for α ≤ 256 and 1.2e-2 above; the bounds are ~4× those.
    An order it wrongly rules out could only raise the accounted ε (a minimum over fewer
    orders), never lower it.
    """
    return np.where(a <= 128.0, 2e-3, np.where(a <= 256.0, 1e-2, 5e-2))


_SIMPSON_COARSE = _simpson_weights(_COARSE_GRID)
_UNIT_COARSE = np.linspace(0.0, 1.0, _COARSE_GRID)
_RSQRT2 = 1.0 / math.sqrt(2.0)
_LN2 = math.log(2.0)
_LN_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _log_integrand(a, eta, mu, s):
    """ln of the integrand of :func:`subsampled_gaussian_rdp` in s = ln(1 + t) at the
    points ``s`` (``a`` broadcasts), for the accounting's integral (:func:`_rdp_one`) and
    the screening and steering quadratures.

    Written with few special-function calls: ln(1 + η(e^s − 1)) = s + ln(η + (1 − η)e^{−s})
    (a sum of positive terms), the weight's two powers combined as x + ln(1 + e^{y−x}),
    and the Gaussian curve through the scaled complementary error function: with
    z = μ/2 − s/μ, Φ(z) = ½ erfcx(−z/√2) e^{−z²/2} and e^s φ(z − μ) = φ(z), so
    δ_G(s) = ½ e^{−z²/2} [erfcx(x) − erfcx(x + μ/√2)], x = −z/√2.
    That difference of two values of a smooth decreasing function loses ~log10(|x|/μ)
    digits; the form of :func:`_log_gauss_curve` loses more at large s (measured: 4e-14
    against 6e-12 at s = 60, μ = 1). Large μ (erfcx(x) overflows for x < −26) and any
    non-positive difference fall back to :func:`_log_gauss_curve`.
    """
    out = _log_weight(a, eta, s)
    curve = _log_gauss_curve_erfcx(mu, s)
    if out.shape != curve.shape:  # (a broadcast the weight does not take)
        out = out + curve
    else:
        out += curve
    out += s
    return out


# The two helpers below work in place on a few arrays (the accounting's 8,001-point
# integrand is bound by memory traffic, not by arithmetic); each in-place step is the
# same IEEE operation on the same operands as the expression in its comment, so the
# values are bit for bit those of the expressions.

def _log_gauss_curve_erfcx(mu, s):
    """ln δ_G(s) in the erfcx form of :func:`_log_integrand`."""
    if np.all(mu <= 30.0):
        z = np.divide(s, mu)
        np.subtract(mu / 2.0, z, out=z)  # z = μ/2 − s/μ
        x = -_RSQRT2 * z
        diff = erfcx(x)
        x += _RSQRT2 * mu
        diff -= erfcx(x, out=x)  # erfcx(x) − erfcx(x + μ/√2)
        if (diff > 0).all():
            np.log(diff, out=diff)
            half_z2 = 0.5 * z
            half_z2 *= z
            diff -= half_z2
            diff -= _LN2  # ln(diff) − ½z² − ln 2
            return diff
    return _log_gauss_curve(mu, s)


def _log_weight(a, eta, s):
    """ln[(1 + ηt)^{α−2} + (1 + ηt)^{−α−1}] at t = e^s − 1 (:func:`_log_integrand`)."""
    log_u = np.negative(s)
    np.exp(log_u, out=log_u)
    log_u *= 1.0 - eta
    log_u += eta
    np.log(log_u, out=log_u)
    log_u += s  # s + ln(η + (1 − η)e^{−s}) = ln(1 + η(e^s − 1))
    # (the clip keeps exp out of the slow subnormal range; ln(1 + e^{-60}) is below 1e-26)
    tail = (1.0 - 2.0 * a) * log_u
    np.maximum(tail, -60.0, out=tail)
    np.exp(tail, out=tail)
    np.log1p(tail, out=tail)
    head = (a - 2.0) * log_u
    head += tail  # (α − 2)·ln u + ln(1 + e^{max((1 − 2α)·ln u, −60)})
    return head


def _coarse_rdp(a, eta, mu):
    """:func:`subsampled_gaussian_rdp` on a coarse grid, vectorised over the orders (and
    over ``mu``, if it is an array of one value per order)."""
    s_max = mu * mu / 2.0 + np.maximum(a - 1.0, 1.0) * mu * mu + 15.0 * mu
    s = s_max[:, None] * _UNIT_COARSE
    f = _log_integrand(a[:, None], eta, np.reshape(mu, (-1, 1)), s)
    top = f.max(axis=1, keepdims=True)
    f -= top
    np.maximum(f, -700.0, out=f)  # (no subnormals)
    np.exp(f, out=f)
    integral = f @ _SIMPSON_COARSE * (s_max / (_COARSE_GRID - 1)) / 3.0
    log_b = np.log(a * (a - 1.0)) + 2.0 * math.log(eta) + top[:, 0] + np.log(integral)
    return np.logaddexp(0.0, log_b) / (a - 1.0)


def _conversion(a, delta):
    """The order-dependent term of :func:`rdp_to_dp_epsilon`."""
    return np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)


@lru_cache(maxsize=64)
def _conversion_cached(orders, delta):
    """:func:`_conversion` at the orders of a tuple (the calibration's and its final
    accounting's, computed once)."""
    out = _conversion(np.array(orders), delta)
    out.flags.writeable = False
    return out


def _candidates(a, eta, mu, steps, delta):
    """Indices of the orders whose ε may be the minimum (by the screening quadrature of
    every order; the fallback path of the calibration)."""
    rdp = steps * _coarse_rdp(a, eta, mu)
    eps = rdp + _conversion(a, delta)
    margin = _coarse_rtol(a) * rdp
    return np.flatnonzero(eps - margin <= (eps + margin).min())


def _exact_eps(al, eta, mu, steps, delta):
    """ε at one order, computed exactly as :func:`rdp_to_dp_epsilon` computes it."""
    log1p_term, delta_term = _conversion_terms(al, delta)
    return steps * _rdp_one(al, eta, mu) + log1p_term - delta_term


@lru_cache(maxsize=256)
def _conversion_terms(al, delta):
    """The two terms of :func:`rdp_to_dp_epsilon`'s conversion at one order, by the same
    numpy operations (so ``rdp + first − second`` is its ε bit for bit)."""
    a = np.array([al])
    return float(np.log1p(-1.0 / a)[0]), float(((math.log(delta) + np.log(a)) / (a - 1.0))[0])


@lru_cache(maxsize=16)
def _binomial_terms(orders):
    """The orders' integer parts n = ⌊α⌋ ≥ 2 and the terms k = 0..n of their binomial
    sums (:func:`_rdp_lower`), flattened: (which orders, segment starts, lengths, k,
    n − k, ln C(n, k), k² − k, n − 1)."""
    a = np.array(orders)
    which = np.flatnonzero(a >= 2.0)
    n = np.floor(a[which])
    counts = n.astype(int) + 1
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    k = np.concatenate([np.arange(c, dtype=float) for c in counts] or [np.empty(0)])
    n_k = np.repeat(n, counts) - k
    log_c = gammaln(n_k + k + 1.0) - gammaln(k + 1.0) - gammaln(n_k + 1.0)
    return which, starts, counts, k, n_k, log_c, k * k - k, n - 1.0


_binomial_terms(DEFAULT_ORDERS)  # the default orders' table, built once at import


def _rdp_lower(eta, mu, orders):
    """A lower bound on :func:`subsampled_gaussian_rdp` at every order (``0 < eta``).

    The bound is at least the forward divergence D_α(A_η ‖ B) of its own pair (the pair
    is one of those it bounds: see :func:`subsampled_gaussian_rdp`), and D_α is
    non-decreasing in α (van Erven & Harremoës 2014, Thm 3), so D_n(A_η ‖ B) at
    n = ⌊α⌋ bounds it below: the binomial closed form of Mironov, Talwar & Zhang (2019,
    §3.3; :func:`mixture_pair_rdp_binomial`), summed in the log domain. 0 for α < 2.
    """
    which, starts, counts, k, n_k, log_c, k2, n_1 = _binomial_terms(orders)
    out = np.zeros(len(orders))
    if which.size:
        log_1m = math.log1p(-eta) if eta < 1.0 else 0.0  # (at η = 1 only k = n counts)
        terms = log_c + k * math.log(eta) + n_k * log_1m + k2 * (0.5 * mu * mu)
        if eta == 1.0:
            terms[n_k > 0] = -np.inf
        top = np.maximum.reduceat(terms, starts)
        # (the clip keeps exp out of its slow subnormal range: it adds < 1e-300 per term,
        # far inside the rule-out's slack)
        total = np.add.reduceat(np.exp(np.maximum(terms - np.repeat(top, counts), -700.0)),
                                starts)
        out[which] = (top + np.log(total)) / n_1
    return out


#: Slack of the rule-out by :func:`_rdp_lower`, relative and absolute (per step): well
#: above the rounding of its log-domain sums (~1e-16 absolute where the sum is near 1,
#: ~1e-16 relative elsewhere) and the full-precision integral's error (~1e-10 relative).
_LOWER_RTOL, _LOWER_ATOL = 1e-8, 1e-14


#: The order up to which :func:`_epsilon_cached` first bounds the orders below.
_LOWER_CUT = 128.0


@lru_cache(maxsize=16)
def _lower_split(orders):
    """(the orders up to ``_LOWER_CUT`` as a tuple, their indices, the indices of those
    above, the cut's index among the first), or None when no order lies above the cut
    or the cut itself is not an order."""
    a = np.array(orders)
    low, high = np.flatnonzero(a <= _LOWER_CUT), np.flatnonzero(a > _LOWER_CUT)
    if not high.size or _LOWER_CUT not in orders:
        return None
    return tuple(a[low].tolist()), low, high, int(np.flatnonzero(a[low] == _LOWER_CUT)[0])


_binomial_terms(_lower_split(DEFAULT_ORDERS)[0])  # (that table too, once at import)


@lru_cache(maxsize=1024)
def _epsilon_cached(eta, mu, steps, delta, orders):
    # The order whose lower bound is smallest first, at full precision; an order whose
    # lower bound exceeds that ε cannot attain the minimum. The few others left are
    # screened (129 points) and those that may attain it integrated at full precision.
    a = np.array(orders)
    conv = _conversion_cached(orders, delta)
    left = None
    split = _lower_split(orders)
    if split is not None:
        # First the orders up to 128 (a quarter of the binomial terms). An order α above
        # has D_α >= D_128 (D_α is non-decreasing in α), so if order 128's bound plus
        # the smallest conversion above exceeds the ε found, every order above is ruled
        # out as the all-order pass below would rule it out, and the same order was
        # found first: the outcome is that pass's, bit for bit.
        low_orders, low, high, at_cut = split
        lower = steps * (_rdp_lower(eta, mu, low_orders) * (1.0 - _LOWER_RTOL) - _LOWER_ATOL)
        lower_eps = lower + conv[low]
        j = int(low[lower_eps.argmin()])
        best, best_order = _exact_eps(a[j], eta, mu, steps, delta), a[j]
        if lower[at_cut] + conv[high].min() > best:
            left = low[lower_eps <= best]
    if left is None:  # all orders
        lower = steps * (_rdp_lower(eta, mu, orders) * (1.0 - _LOWER_RTOL) - _LOWER_ATOL)
        lower_eps = lower + conv
        j = int(lower_eps.argmin())
        best, best_order = _exact_eps(a[j], eta, mu, steps, delta), a[j]
        left = np.flatnonzero(lower_eps <= best)
    left = left[left != j]
    if left.size:
        rdp = steps * _coarse_rdp(a[left], eta, mu)
        eps, margin = rdp + conv[left], _coarse_rtol(a[left]) * rdp
        for i in left[eps - margin <= min(best, float((eps + margin).min()))]:
            e = _exact_eps(a[i], eta, mu, steps, delta)
            if e < best:
                best, best_order = e, a[i]
    return max(best, 0.0), float(best_order)


def calibrate_subsampled_gaussian_mu(epsilon, delta, eta, steps, orders=DEFAULT_ORDERS):
    """Largest multiplier μ = Δ/σ whose ``steps``-fold composition is (ε, δ)-DP.

    The threshold μ* at which :func:`subsampled_gaussian_epsilon` (increasing in μ)
    reaches ε, to relative precision ~1e-10, on the feasible side: the returned μ is
    checked to satisfy ``subsampled_gaussian_epsilon(eta, mu, steps, delta) <= epsilon``
    at full precision, with that ε no more than 2e-10·ε below the target, or μ the largest
    float at which it holds (orders in the tens of thousands make ε(μ) that steep). First
    (:func:`_model_guided_threshold`) a two-term binomial model of each order's RDP names
    the order of largest threshold and its approximate threshold; Newton steps on a
    384-point Gauss–Legendre quadrature (agreeing with the full-precision integral to
    ~4e-11; its derivative in μ in closed form), aimed at the middle of the accepted
    window, refine it; the full-precision integral is evaluated once there (a Newton
    step, then the secant method on it, when that is not yet within tolerance), and the
    all-order accounting at that μ decides: within the window, μ is the threshold; an ε
    below it names the order to steer next. When that declines (about 5 % of random
    settings, mostly η above 0.03), a root of the screening quadrature (see
    :func:`subsampled_gaussian_epsilon`), found by Newton steps on the same model
    (:func:`_screening_root`; a bracket and Brent's method when that is unsure), locates
    μ* and the orders that can attain the minimum there, and each is refined the same
    way. Results are cached per argument tuple.

    The search runs over μ in [1e-6, 1e3]. When μ = 1e3 is already feasible (ε of the
    order of 1e9 at typical η and steps) the result is 1e3, not ``np.inf``: that μ = 1e3
    is private says nothing about μ = ∞ (no noise), under which every step publishes a
    gradient of a sampled row, so a finite ε always gets noise. The caller charges the ε
    at the returned μ, which is then below the target.

    Returns
    -------
    mu : float
        In [1e-6, 1e3]; always finite.
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0; got epsilon={epsilon!r}.")
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be a positive integer; got steps={steps!r}.")
    a = _orders(orders)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must lie in (0, 1); got delta={delta!r}.")
    _check(eta, 1.0)
    # The threshold depends on the set of orders only; the search's windows of
    # neighbouring orders need them sorted (and distinct).
    return _calibrate_cached(float(epsilon), float(delta), float(eta), int(steps),
                             tuple(sorted({float(x) for x in a})))


_MU_LO, _MU_HI = 1e-6, 1e3

#: Precision of the calibrated μ: the full-precision ε at the returned μ lies in
#: [(1 − _EPS_RTOL)·ε, ε] (μ within ~1e-10 of the threshold in ln μ).
_EPS_RTOL = 2e-10


def _gauss_legendre_unit(panels, nodes):
    """Nodes and weights of the composite Gauss–Legendre rule with ``panels`` equal
    panels of ``nodes`` nodes on [0, 1]."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    unit = ((np.arange(panels)[:, None] + (x + 1.0) / 2.0) / panels).ravel()
    return unit, np.tile(w / (2.0 * panels), panels)


#: The steering quadrature: composite Gauss–Legendre, 32 panels of 12 nodes (384 points).
#: Over η in [1e-5, 1], μ in [0.05, 2], α ≤ 128 its RDP agrees with the 8001-point
#: integral of :func:`_rdp_one` to 4e-11 (measured 3.7e-11, at η = 1e-5, μ = 2, α = 128;
#: Simpson on 1,025 points with a Richardson step, its predecessor, 1.1e-10), so its
#: threshold is within ~1e-11 of the exact one; it only steers, it never accounts.
_STEER_UNIT, _STEER_WEIGHTS = _gauss_legendre_unit(32, 12)


def _infeasible(epsilon, delta, eta, steps):
    return ValueError(
        f"no noise level reaches epsilon={epsilon} at delta={delta} over {steps} steps "
        f"with eta={eta}; raise epsilon or delta."
    )


@lru_cache(maxsize=1024)
def _calibrate_cached(epsilon, delta, eta, steps, orders):
    mu = _calibrate_search(epsilon, delta, eta, steps, orders)
    return _refine_threshold(mu, epsilon, delta, eta, steps, orders)


def _refine_threshold(mu, epsilon, delta, eta, steps, orders):
    """``mu`` (feasible) moved up to the threshold: the full-precision ε within
    ``_EPS_RTOL`` below ``epsilon``, or ``mu`` the largest float still feasible.

    The fast path returns such a μ already; the fallbacks stop short of it (the screened
    secant once no order is clearly feasible 5 % above, the bisection at 1e-6 in ln μ),
    which on a steep ε(μ) (an order's RDP bending up, dε/dμ in the thousands) left ε a
    relative 1e-3 below the target: bisection in ln μ on the accounting itself.
    """
    def eps_at(m):
        return subsampled_gaussian_epsilon(eta, m, steps, delta, orders)[0]

    floor = epsilon * (1.0 - _EPS_RTOL)
    if mu >= _MU_HI or eps_at(mu) >= floor:
        return mu
    lo, step = mu, 1e-6
    hi = min(mu * math.exp(step), _MU_HI)
    while eps_at(hi) <= epsilon:  # (rare: the fallbacks' μ is within 5 % of the threshold)
        if hi >= _MU_HI:
            return _MU_HI
        lo, step = hi, 2.0 * step
        hi = min(lo * math.exp(step), _MU_HI)
    while math.nextafter(lo, math.inf) < hi:
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        e = eps_at(mid)
        if e > epsilon:
            hi = mid
        else:
            lo = mid
            if e >= floor:
                break
    return lo


def _calibrate_search(epsilon, delta, eta, steps, orders):
    def ok(m):
        return subsampled_gaussian_epsilon(eta, m, steps, delta, orders)[0] <= epsilon

    if eta == 0.0:  # the steps reveal nothing: any μ, if the conversion allows ε at all
        if ok(_MU_HI):
            return _MU_HI
        raise _infeasible(epsilon, delta, eta, steps)
    a = np.array(orders)
    conv = _conversion_cached(orders, delta)
    rtol = _coarse_rtol(a)

    def clearly(m, feasible, margin=100):
        # The screening decides when it is far from ε (by ``margin`` times its error
        # bound); otherwise the full-precision computation does.
        rdp = steps * _coarse_rdp(a, eta, m)
        eps, err = rdp + conv, margin * rtol * rdp
        if feasible:
            return bool(np.any(eps + err < epsilon)) or ok(m)
        return bool(np.all(eps - err > epsilon)) or not ok(m)

    window = [0, len(a)]  # the orders screened: around the last minimiser
    seen = {}

    def coarse_gap(t):
        # Screening only: a window of orders around the last minimiser, widened to all
        # orders whenever the minimiser sits on its edge.
        if t in seen:
            return seen[t][0]
        lo, hi = window
        eps = steps * _coarse_rdp(a[lo:hi], eta, math.exp(t)) + conv[lo:hi]
        j = int(eps.argmin())
        if (j == 0 and lo > 0) or (j == hi - lo - 1 and hi < len(a)):
            lo, hi = 0, len(a)
            eps = steps * _coarse_rdp(a, eta, math.exp(t)) + conv
            j = int(eps.argmin())
        window[:] = [max(0, lo + j - 3), min(len(a), lo + j + 4)]
        seen[t] = (float(eps[j]) - epsilon, lo, eps)
        return seen[t][0]

    try:
        mu = _model_guided_threshold(a, conv, eta, steps, delta, epsilon, orders)
    except (ValueError, OverflowError, ZeroDivisionError):  # the model left float range
        mu = None
    if mu is not None:
        return mu
    t_lo, t_hi = math.log(_MU_LO), math.log(_MU_HI)
    # The screening root to 1e-4 in ln μ: each order's threshold by model-guided Newton
    # steps over a window of orders (usually two or three screenings of a few orders);
    # when that is unsure, by a bracket and Brent's method, which also decide the ends
    # of the μ range.
    try:
        root = _screening_root(a, conv, eta, steps, epsilon, t_lo + 1.5, t_hi - 1.5)
    except (ValueError, OverflowError, ZeroDivisionError):  # the model left float range
        root = None
    if root is None:
        step = 0.25
        left, right = (0.0, step) if coarse_gap(0.0) <= 0 else (-step, 0.0)
        # Bracket from μ = 1 outwards, the step in ln μ starting at 0.25 and growing by
        # half each time (the gap has a cliff near the root: a tight bracket saves
        # Brent's bisection steps). The ends of the μ range are decided by the all-order
        # screening and, near ε, the full-precision check, when the bracket gets near them.
        while coarse_gap(right) <= 0 and right < t_hi:
            step *= 1.5
            left, right = right, min(right + step, t_hi)
        while coarse_gap(left) > 0 and left > t_lo:
            step *= 1.5
            left, right = max(left - step, t_lo), left
        if right >= t_hi - 1.5 and not clearly(_MU_HI, feasible=False):
            return _MU_HI  # the top of the range is feasible: never μ = ∞ (no noise)
        if left <= t_lo + 1.5 and not clearly(_MU_LO, feasible=True):
            raise _infeasible(epsilon, delta, eta, steps)
        if coarse_gap(left) > 0 or coarse_gap(right) <= 0:  # screening unsure: bisection
            return _calibrate_bisection(epsilon, delta, eta, steps, orders)
        # Brent to 1e-4: the steering's Newton steps (or the exact secant) do the rest.
        t_hat = brentq(coarse_gap, left, right, xtol=1e-4)
        slope = (coarse_gap(t_hat + 1e-3) - coarse_gap(t_hat)) / 1e-3
        t_start = t_hat
    else:
        t_hat, slope, seen[t_hat], t_start = root
    mu = _steered_threshold(a, conv, eta, steps, delta, epsilon, t_hat, seen[t_hat], orders,
                            t_start)
    if mu is None:  # the steering declined: the exact secant at every screened candidate
        mu = _screened_threshold(a, conv, eta, steps, delta, epsilon, t_hat, slope, orders)
    if mu is None:
        return _calibrate_bisection(epsilon, delta, eta, steps, orders)
    return mu


def _log_expm1(x):
    """ln(e^x − 1) for x > 0."""
    return x + math.log(-math.expm1(-x)) if x > 0.5 else math.log(math.expm1(x))


def _log1p_exp(z):
    """ln(1 + e^z)."""
    return z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))


def _model_rdp(a, eta, u):
    """The two-term model of :func:`_model_step` at u = μ², vectorised over the
    orders ``a`` (a guide for the search, not accounting)."""
    q = a * (a - 1.0) / 2.0
    with np.errstate(divide="ignore"):
        lc2 = (np.log(2.0 * q) + (a - 2.0) * math.log1p(-eta) + 2.0 * math.log(eta) if eta < 1.0
               else np.full_like(a, -np.inf))
        lck = a * math.log(eta)
    x = q * u
    log_s = np.logaddexp(lc2 + math.log(math.expm1(u)),
                         lck + x + np.log(-np.expm1(-x)))
    return np.logaddexp(0.0, log_s) / (a - 1.0)


def _model_terms(al, eta):
    """q and the log coefficients of the two terms of the model of :func:`_model_step`."""
    q = al * (al - 1.0) / 2.0
    lc2 = (math.log(2.0 * q) + (al - 2.0) * math.log1p(-eta) + 2.0 * math.log(eta)
           if eta < 1.0 else -math.inf)
    return q, lc2, al * math.log(eta)


def _model_log_s(u, q, lc2, lck):
    """ln S(u) of the model of :func:`_model_step`."""
    # (:func:`_log_expm1` and the log-sum written out: ~80 calls per calibration)
    log, expm1 = math.log, math.expm1
    a = lc2 + (u + log(-expm1(-u)) if u > 0.5 else log(expm1(u)))
    qu = q * u
    b = lck + (qu + log(-expm1(-qu)) if qu > 0.5 else log(expm1(qu)))
    return a + math.log1p(math.exp(b - a)) if a >= b else b + math.log1p(math.exp(a - b))


def _model_log_rdp(al, eta, u):
    """ln((α − 1)·RDP) of the model of :func:`_model_step` at u = μ²."""
    return math.log(_log1p_exp(_model_log_s(u, *_model_terms(al, eta))))


def _model_step(al, eta, u0, phi0):
    """u = μ² where a two-term model of the order's RDP has moved by ``-phi0`` in ln
    from its value at ``u0``: a first step for :func:`_screening_root`, not accounting.

    The model is the binomial expansion of the forward divergence (Mironov, Talwar &
    Zhang 2019, §3.3) cut to its k = 2 term, doubled (the bound's second-order term is
    up to twice the forward divergence's; see :func:`subsampled_gaussian_rdp`), and its
    k = α term (which takes over beyond a sharp bend, where thresholds often lie):
    (α − 1)·RDP ≈ ln(1 + S(u)), S(u) = 2C(α, 2)(1 − η)^{α−2}η²(e^u − 1) + η^α(e^{qu} − 1),
    q = α(α − 1)/2. Solved for u by false position in ln u (Illinois). None when the
    step cannot be taken (out of floating-point range).
    """
    try:
        return _model_step_unguarded(al, eta, u0, phi0)
    except (ValueError, OverflowError):
        return None


def _model_step_unguarded(al, eta, u0, phi0):
    q, lc2, lck = _model_terms(al, eta)

    def log_s(u):
        return _model_log_s(u, q, lc2, lck)

    def solve(lc, qq, y):  # lc + ln(e^{qq·u} − 1) = y
        return _log1p_exp(y - lc) / qq if lc > -math.inf else math.inf

    l0 = _log1p_exp(log_s(u0))  # ln(1 + S(u0)) = (α − 1)·model RDP
    y = _log_expm1(l0 * math.exp(-phi0))  # ln S at the step's end
    # S is at most twice its larger term: the root lies in [lo, hi]
    hi = min(solve(lc2, 1.0, y), solve(lck, q, y))
    lo = min(solve(lc2, 1.0, y - _LN2), solve(lck, q, y - _LN2))
    if not 0.0 < lo <= hi < math.inf:
        return None
    # false position in ln u, halving the weight of an end kept twice (Illinois)
    lo, hi = math.log(lo), math.log(hi)
    f_lo, f_hi = log_s(math.exp(lo)) - y, log_s(math.exp(hi)) - y
    if f_lo > 0 or f_hi < 0:
        return None
    side = 0
    for _ in range(20):
        if f_hi - f_lo <= 0 or hi - lo < 1e-9:
            break
        mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        f_mid = log_s(math.exp(mid)) - y
        if abs(f_mid) < 1e-10:
            return math.exp(mid)
        if f_mid < 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo *= 0.5
            side = 1
    return math.exp(0.5 * (lo + hi))


def _model_guided_threshold(a, conv, eta, steps, delta, epsilon, orders):
    """μ* steered from the two-term model's thresholds, or None (the caller then runs the
    screening search, :func:`_screening_root`).

    Each order's threshold under the model of :func:`_model_step` (one step from μ = 1)
    over a window of seven orders around the model's best order at μ = 1, moved while
    the largest threshold sits on its edge; that order's threshold by Newton's method on
    the steering quadrature (:func:`_steer_threshold`, from the model's), then at full
    precision (:func:`_exact_threshold`: usually one integral). The all-order accounting
    there (:func:`_epsilon_cached`, which rules the other orders out by their lower
    bounds) decides: its ε within ``_EPS_RTOL`` below ``epsilon`` makes μ the threshold
    (ε(μ) is increasing in μ); an ε below that names the order that attains it, whose
    threshold is larger, and that order is steered next (at most three times). The model
    only steers: a poor model costs steering steps or declines; the accounting decides.
    """
    room = epsilon - conv
    if not (room > 0).any():
        return None
    with np.errstate(all="ignore"):
        model = steps * _model_rdp(a, eta, 1.0)
    n = len(a)
    thresholds = {}

    def threshold(j):  # the model's u = μ² at order j's threshold (-inf: none)
        if j not in thresholds:
            m, r = float(model[j]), float(room[j])
            u = (_model_step(float(a[j]), eta, 1.0, math.log(m) - math.log(r))
                 if r > 0 and 0 < m < math.inf else None)
            thresholds[j] = u if u is not None and u > 0 else -math.inf
        return thresholds[j]

    j = int(np.where(room > 0, model + conv, np.inf).argmin())
    lo, hi = max(0, j - 3), min(n, j + 4)
    for _ in range(8):
        j = max(range(lo, hi), key=threshold)
        if j == lo and lo > 0:
            lo = max(0, lo - 3)
        elif j == hi - 1 and hi < n:
            hi = min(n, hi + 3)
        else:
            break
    else:
        return None
    u = thresholds[j]
    if not (0 < u < math.inf and _MU_LO < math.sqrt(u) < _MU_HI):
        return None
    t, t_lo, t_hi = 0.5 * math.log(u), math.log(_MU_LO), math.log(_MU_HI)
    for _ in range(4):
        # aimed at the middle of the accepted window [(1 - _EPS_RTOL)ε, ε]
        steered = _steer_threshold(a[j], conv[j], eta, steps,
                                   epsilon * (1.0 - 0.5 * _EPS_RTOL), t)
        if steered is None:
            return None
        t = _exact_threshold(a[j], eta, steps, delta, epsilon, *steered, t_lo, t_hi)
        if t is None:
            return None
        mu = math.exp(t)
        eps, order = _epsilon_cached(eta, mu, steps, delta, orders)
        if epsilon * (1.0 - _EPS_RTOL) - 1e-15 <= eps <= epsilon:
            return mu
        k = int(np.searchsorted(a, order))  # (the orders are sorted)
        if k == j or not eps < epsilon:
            return None
        j = k  # an order below ε at μ: its threshold is larger
    return None


def _screening_root(a, conv, eta, steps, epsilon, t_lo, t_hi, xtol=1e-4, max_iter=16):
    """Where the screening's ε (the minimum over the orders) reaches ``epsilon``.

    The screening's ε reaches ε at the largest of the orders' thresholds (each order's ε
    increases with μ). Each order's threshold is found in v = ln(e^{μ²} − 1) by Newton
    steps on a two-term model of its RDP (:func:`_model_step`) corrected by the
    screened value at the last point, safeguarded by bisection of the order's bracket.
    The orders searched are those of a window of seven around the minimiser of the
    model's ε at μ = 1 whose model threshold lies within 0.1 (in ln μ) of the best,
    widened while the largest threshold sits on its edge; an order whose threshold is
    known to lie below another's feasible point is not refined. All of this only steers:
    the screening at the root, the steering quadrature and the full-precision check
    decide (a poor guess costs time, not accuracy).

    Returns
    -------
    (t_hat, slope, screen, t_next) or None
        ``t_hat`` (ln μ) within ``xtol`` of the root, dε/d ln μ there, the window's
        screening at ``t_hat`` as ``(gap, lo, eps)``, and the Newton step from ``t_hat``
        that the convergence left untaken (closer to the root: the screening is accurate
        to ~1e-6 relative at most orders, so the steering usually needs one evaluation
        from there instead of two from ``t_hat``); None if unsure (an iterate leaves
        (t_lo, t_hi), a value is not finite, or no convergence).
    """
    def mu_of(v):
        return math.sqrt(_log1p_exp(v))

    def dv_dt(v):  # d ln(e^{μ²} − 1)/d ln μ
        m2 = _log1p_exp(v)
        return 2.0 * m2 / -math.expm1(-m2)

    n = len(a)
    rtol = _coarse_rtol(a)
    room = epsilon - conv
    alive = room > 0  # the other orders cannot reach ε at any μ
    if not alive.any():
        return None
    with np.errstate(all="ignore"):
        model = steps * _model_rdp(a, eta, 1.0)
    if not (model[alive] > 0).all() or not np.isfinite(model[alive]).all():
        return None
    j0 = int(np.where(alive, model + conv, np.inf).argmin())
    lo, hi = max(0, j0 - 3), min(n, j0 + 4)
    v_lo, v_hi = (m2 + math.log(-math.expm1(-m2)) for m2 in (math.exp(2 * t_lo),
                                                            math.exp(2 * t_hi)))
    al = [float(x) for x in a]
    log_room = [math.log(r) if r > 0 else math.nan for r in room.tolist()]
    v1 = math.log(math.e - 1.0)  # μ = 1
    # per order: last point v, its gap g (the model's, until screened), secant slope,
    # bracket (gap <= 0 at below, > 0 at above), state: 0 new, 1 screened, 2 dropped
    state = [0 if alive[j] else 2 for j in range(n)]
    v = [v1] * n
    g = [math.log(m) - lr if state[j] == 0 else math.nan
         for j, (m, lr) in enumerate(zip(model.tolist(), log_room))]
    slope = [1.0] * n  # of g against the model's ln RDP (1 if the model is right)
    w = [math.nan] * n  # the model's ln((α − 1)·RDP) at v
    vp, gp = [math.nan] * n, [math.nan] * n  # the previous screened point
    below, above = [-math.inf] * n, [math.inf] * n
    nxt = [math.nan] * n
    hat = ahead = None
    for _ in range(max_iter):
        if hat is not None:  # the last root, with orders feasible there brought back
            j, eps_hat = hat
            hat = None
            v_hat = v[j]
            for i in range(lo, hi):
                r_i = eps_hat[i - lo] - conv[i]
                if (alive[i] and i != j and r_i > 0
                        and eps_hat[i - lo] + rtol[i] * r_i < epsilon):
                    state[i], v[i], g[i] = 1, v_hat, math.log(r_i) - log_room[i]
                    w[i] = _model_log_rdp(al[i], eta, _log1p_exp(v_hat))
                    slope[i], below[i] = 1.0, max(below[i], v_hat)
        win = [j for j in range(lo, hi) if state[j] != 2]
        best_below = max([below[j] for j in win], default=-math.inf)
        race = [j for j in win if above[j] > best_below]
        todo, v_new = [], []
        for j in race:
            # a Newton step on the model, its slope corrected by the secant of the
            # screened values against the model's
            u = (_model_step(al[j], eta, _log1p_exp(v[j]), g[j] / slope[j])
                 if 0.25 < slope[j] < 4.0 else None)
            if u is not None and u > 0.0:
                x = _log_expm1(u)
            else:  # the model is off (large η): the secant in v
                sv = (g[j] - gp[j]) / (v[j] - vp[j]) if v[j] != vp[j] else math.nan
                x = v[j] - max(-2.0, min(2.0, g[j] / sv if sv > 0 else g[j]))
            if state[j] == 1 and abs(x - v[j]) < xtol * dv_dt(v[j]):
                nxt[j] = x  # converged; the step not taken starts the steering
                continue
            if not below[j] < x < above[j] and below[j] > -math.inf and above[j] < math.inf:
                x = 0.5 * (below[j] + above[j])
            todo.append(j)
            v_new.append(x)
        if todo:  # leave out new orders whose model threshold is far below the best
            ref = math.log(mu_of(max(v_new + [v[j] for j in race if state[j] == 1])))
            keep = [k for k, j in enumerate(todo)
                    if state[j] == 1 or math.log(mu_of(v_new[k])) >= ref - 0.1]
            for k, j in enumerate(todo):
                if k not in keep:
                    state[j] = 2
            todo, v_new = [todo[k] for k in keep], [v_new[k] for k in keep]
        if not todo:
            cand = [j for j in race if state[j] == 1]
            if not cand:
                return None
            j = max(cand, key=lambda i: v[i])
            if j == lo and lo > 0:  # the best order on the window's edge: widen
                lo = max(0, lo - 3)
                continue
            if j == hi - 1 and hi < n:
                hi = min(n, hi + 3)
                continue
            # The screening at the root of the seven orders around the best: an order
            # clearly feasible there (one left out, or another's bracket) has a larger
            # threshold: search on.
            lo, hi = max(0, j - 3), min(n, j + 4)
            t_hat = math.log(mu_of(v[j]))
            if ahead is not None and ahead[:2] == (j, v[j]):
                eps = ahead[2]  # (screened in the order's last round, see below)
            else:
                eps = steps * _coarse_rdp(a[lo:hi], eta, math.exp(t_hat)) + conv[lo:hi]
            clear = eps + rtol[lo:hi] * (eps - conv[lo:hi]) < epsilon
            clear[j - lo] = False  # (its own gap is within xtol of the root)
            if not clear.any():
                break
            hat = (j, eps)
            continue
        if not all(v_lo < x < v_hi for x in v_new):
            return None
        j = todo[0]
        if (len(todo) == 1 and state[j] == 1
                and abs(math.log(mu_of(v_new[0])) - math.log(mu_of(v[j]))) < 1e-3):
            # One order left, moving by less than 1e-3: the next round almost always
            # finds it converged and screens the seven orders around it at this very
            # point, so screen them now, in the same call (one call instead of two).
            w_lo = max(0, j - 3)
            mu_check = math.exp(math.log(mu_of(v_new[0])))  # (as the check computes μ)
            with np.errstate(divide="ignore"):
                r = steps * _coarse_rdp(a[w_lo:j + 4], eta, mu_check)
            ahead = (j, v_new[0], r + conv[w_lo:j + 4])
            r = r[j - w_lo:j - w_lo + 1]
        else:
            with np.errstate(divide="ignore"):
                r = steps * _coarse_rdp(a[todo], eta, np.array([mu_of(x) for x in v_new]))
        for j, x, rj in zip(todo, v_new, r.tolist()):
            if not rj > 0:
                return None
            gj = math.log(rj) - log_room[j]
            wj = _model_log_rdp(al[j], eta, _log1p_exp(x))
            if state[j] == 1 and wj != w[j]:
                slope[j] = (gj - g[j]) / (wj - w[j])
            if state[j] == 1:
                vp[j], gp[j] = v[j], g[j]
            state[j], v[j], g[j], w[j] = 1, x, gj, wj
            if gj <= 0:
                below[j] = max(below[j], x)
            else:
                above[j] = min(above[j], x)
    else:
        return None
    # dε/d ln μ of the order found: d g/d w times the model's d w/d ln μ, times its
    # composed RDP (= its room, at the threshold)
    u = _log1p_exp(v[j])
    dw_dt = (_model_log_rdp(al[j], eta, u * math.exp(2e-5)) - w[j]) / 1e-5
    if not (slope[j] > 0 and dw_dt > 0):
        return None
    t_next = math.log(mu_of(nxt[j])) if math.isfinite(nxt[j]) else t_hat
    return (t_hat, slope[j] * dw_dt * float(room[j]),
            (float(eps.min()) - epsilon, lo, eps), t_next)


def _steered_threshold(a, conv, eta, steps, delta, epsilon, t_hat, screen, orders,
                       t_start=None):
    """μ* from the screening root ``t_hat``, with one full-precision integral in the
    common case; None when unsure (the caller then runs :func:`_screened_threshold`).
    The steering starts at ``t_start`` (default ``t_hat``).

    1. The candidates are the orders of the screening window at ``t_hat`` whose ε may be
       the minimum (within the screening's error bound); a candidate on the window's edge
       declines (the window may have cut a near-tie).
    2. For each candidate, Newton's method on the steering quadrature
       (:func:`_steer_rdp`, :func:`_steer_threshold`) finds its threshold to ~1e-12 in ln μ; μ* is the largest
       (candidates within 1e-8 of it are all computed exactly).
    3. The full-precision ε there is accepted if it lies within ``_EPS_RTOL`` below ε
       (the steering aims at the middle of that window, (1 − ``_EPS_RTOL``/2)ε); else one
       Newton step aimed at the middle, then the exact secant.
    4. The returned μ is checked with :func:`subsampled_gaussian_epsilon` itself: its ε
       must lie in [(1 − ``_EPS_RTOL``)ε, ε] (so μ is the threshold, not merely some
       feasible value: ε(μ) is increasing in μ).
    """
    _, lo, eps = screen
    rdp = eps - conv[lo:lo + len(eps)]
    margin = _coarse_rtol(a[lo:lo + len(eps)]) * rdp
    cand = lo + np.flatnonzero(eps - margin <= (eps + margin).min())
    if (cand[0] == lo and lo > 0) or (cand[-1] == lo + len(eps) - 1 and cand[-1] < len(a) - 1):
        return None
    t_lo, t_hi = math.log(_MU_LO), math.log(_MU_HI)
    found = []
    for j in cand:
        # aimed at the middle of the accepted window [(1 - _EPS_RTOL)ε, ε]: the steering
        # agrees with the full-precision ε to well within its half-width
        r = _steer_threshold(a[j], conv[j], eta, steps, epsilon * (1.0 - 0.5 * _EPS_RTOL),
                             t_hat if t_start is None else t_start)
        if r is None:
            return None
        found.append((r[0], r[1], int(j)))
    found.sort(reverse=True)
    best = -math.inf
    for t_s, slope_s, j in found:
        if t_s < found[0][0] - 1e-8:
            break
        t = _exact_threshold(a[j], eta, steps, delta, epsilon, t_s, slope_s, t_lo, t_hi)
        if t is None:
            return None
        best = max(best, t)
    mu = math.exp(best)
    # (the arguments were validated by the caller: the cache of the accounting itself)
    eps_acc = _epsilon_cached(eta, mu, steps, delta, orders)[0]
    if not (epsilon * (1.0 - _EPS_RTOL) - 1e-15 <= eps_acc <= epsilon):
        return None
    return mu


def _screened_threshold(a, conv, eta, steps, delta, epsilon, t_hat, slope, orders):
    """μ* by the exact secant at every order the all-order screening names at ``t_hat``
    (the path before the steering quadrature), or None."""
    t_lo, t_hi = math.log(_MU_LO), math.log(_MU_HI)
    best = -math.inf
    for j in _candidates(a, eta, math.exp(t_hat), steps, delta):
        t = _order_threshold(a[j], eta, steps, delta, epsilon, t_hat, t_lo, t_hi, slope)
        if t is not None:
            best = max(best, t)
    mu = math.exp(best) if best > -math.inf else None
    # Fail safe (cannot happen when the screening holds): μ must be feasible at full
    # precision, and the screening must find every order infeasible 5 % above it (μ is
    # the threshold, not just some feasible value).
    if (mu is None or subsampled_gaussian_epsilon(eta, mu, steps, delta, orders)[0] > epsilon
            or _screened_feasible(a, conv, eta, mu * math.exp(0.05), steps, epsilon)):
        return None
    return mu


def _steer_rdp(al, eta, mu):
    """(:func:`_rdp_one`, its derivative in ln μ) by the steering quadrature
    (``_STEER_UNIT``), or (nan, nan).

    The derivative differentiates under the integral: ∂δ_G(s)/∂μ = φ(μ/2 − s/μ) (the
    two terms' densities cancel, e^s φ(−μ/2 − s/μ) = φ(μ/2 − s/μ)); the moving upper
    limit adds the integrand there, e^{−100} of its peak. It only steers.
    """
    s_max = mu * mu / 2.0 + max(al - 1.0, 1.0) * mu * mu + 15.0 * mu
    s = s_max * _STEER_UNIT
    log_ws = _log_weight(al, eta, s)
    log_ws += s
    log_f = _log_gauss_curve_erfcx(mu, s)
    log_f += log_ws  # (_log_integrand)
    z = mu / 2.0 - s / mu
    log_d = 0.5 * z
    log_d *= z
    np.subtract(log_ws, log_d, out=log_d)  # ∂/∂μ of the integrand, less 1/√(2π)
    logs = []
    for f in (log_f, log_d):
        top = f.max()
        f -= top
        np.maximum(f, -700.0, out=f)  # (no subnormals: below 1e-300 of the peak)
        np.exp(f, out=f)
        integral = (f @ _STEER_WEIGHTS) * s_max
        if not integral > 0:
            return math.nan, math.nan
        logs.append(math.log(al * (al - 1.0)) + 2.0 * math.log(eta) + top + math.log(integral))
    log_b, log_db = logs
    log_1b = float(np.logaddexp(0.0, log_b))  # ln(1 + B); rdp = ln(1 + B)/(α − 1)
    slope = math.exp(log_db - _LN_SQRT_2PI + math.log(mu) - log_1b) / (al - 1.0)
    return log_1b / (al - 1.0), slope


def _steer_threshold(al, conv, eta, steps, epsilon, t0, max_iter=12):
    """(ln μ, dε/d ln μ) where the steering quadrature's ε at order ``al`` crosses
    ``epsilon`` (to ~1e-12), by Newton's method from ``t0`` on ln(steps·rdp) −
    ln(ε − conversion), which bends less than ε does; None if it fails."""
    room = epsilon - conv
    if not room > 0:
        return None
    log_room = math.log(room)
    x = t0
    for _ in range(max_iter):
        r, dr = _steer_rdp(al, eta, math.exp(x))
        if not (r > 0 and dr > 0 and math.isfinite(r) and math.isfinite(dr)):
            return None
        slope = dr / r  # of ln(steps·rdp) in ln μ
        step = max(-0.5, min(0.5, (math.log(steps * r) - log_room) / slope))
        x -= step
        # Newton's error after a step s is ~ s²·g''/(2g'): 1e-14 after a step of 1e-7
        if abs(step) < 1e-7:
            return x, slope * room  # (the composed RDP equals the room at the threshold)
    return None


def _exact_threshold(al, eta, steps, delta, epsilon, t_s, slope, t_lo, t_hi):
    """A ln μ with the exact ε at order ``al`` in [(1 − _EPS_RTOL)ε, ε], started at the
    steering root ``t_s`` (aimed at the window's middle): usually one exact integral."""
    def h(t):
        return _exact_eps(al, eta, math.exp(t), steps, delta) - epsilon

    tol = _EPS_RTOL * epsilon
    x = t_s
    hx = h(x)
    if -tol <= hx <= 0.0:
        return x
    x = x - (hx + 0.5 * tol) / slope  # one Newton step, aimed at the window's middle
    hx = h(x)
    if -tol <= hx <= 0.0:
        return x
    return _order_threshold(al, eta, steps, delta, epsilon, x, t_lo, t_hi, slope)


def _screened_feasible(a, conv, eta, mu, steps, epsilon):
    """Whether the screening quadrature finds some order feasible at ``mu``."""
    rdp = steps * _coarse_rdp(a, eta, mu)
    return bool((rdp + conv + _coarse_rtol(a) * rdp < epsilon).any())


def _order_threshold(al, eta, steps, delta, epsilon, t0, t_lo, t_hi, slope, max_iter=30):
    """Largest ``t = ln μ`` (to ~1e-10) with ε_α(e^t) <= ε at one order, by the secant
    method on the full-precision integral (first step along the screening's ``slope``);
    None if it does not converge."""
    def h(t):
        return _exact_eps(al, eta, math.exp(t), steps, delta) - epsilon

    x0, h0 = t0, h(t0)
    step = -h0 / slope if slope > 0 else -1e-4
    x1 = t0 + (step if 1e-12 < abs(step) < 0.1 else -1e-4)
    h1 = h(x1)
    feasible = [x for x, hx in ((x0, h0), (x1, h1)) if hx <= 0]
    for _ in range(max_iter):
        if h1 == h0:
            break
        x2 = min(max(x1 - h1 * (x1 - x0) / (h1 - h0), t_lo), t_hi)
        x0, h0, x1, h1 = x1, h1, x2, h(x2)
        if h1 <= 0:
            feasible.append(x1)
        if abs(x1 - x0) < 1e-10:
            break
    if feasible and max(feasible) >= x1 - 1e-9:
        return max(feasible)
    # The iterates approached the root from above: step down from the last until feasible.
    t, step = x1, 1e-12
    for _ in range(20):
        t -= step
        if h(t) <= 0:
            return max([t] + feasible)
        step *= 4.0
    return max(feasible) if feasible else None


def _calibrate_bisection(epsilon, delta, eta, steps, orders=DEFAULT_ORDERS):
    """The original calibration: bisection on ln μ to relative precision 1e-6 over the
    all-order full-precision ε (27 evaluations). The fallback of the fast path, and the
    reference its tests compare with."""
    def ok(m):
        return _subsampled_gaussian_epsilon_full(eta, m, steps, delta, orders)[0] <= epsilon

    hi = _MU_HI
    if ok(hi):
        return hi
    lo = _MU_LO
    if not ok(lo):
        raise _infeasible(epsilon, delta, eta, steps)
    while math.log(hi / lo) > 1e-6:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo
