"""Running sums from which every composition view is computed in O(1) per event.

:func:`~skhybrid.accounting.compose_events` used to expand every event into per-use lists
and recompose the whole history on each charge (quadratic in the number of charges, and
a ``count=10**6`` event built million-element lists). Every view only needs a few sums:

- basic: ``Σ kε``, ``Σ kδ`` (``k`` the event's count);
- Kairouz-Oh-Viswanath: ``Σ kε²``, ``Σ kε·tanh(ε/2)`` and ``Σ k·ln(1 − δ)``;
- optimal homogeneous: whether every use shares one (ε, δ), and the number of uses;
- zCDP: ``Σ kρ`` over events with a zCDP view, basic sums over the others;
- exact Gaussian: ``Σ kμ²`` over Gaussian events, basic sums over the others.

The sums are kept exactly (as rationals: every float is one) and rounded once, upward,
when a view is read, so a view does not depend on the order in which events were added and
is never below its theorem's value; basic composition is tested against a budget on the
exact sums themselves (:meth:`Tally.basic_fits`).
"""

import math
from fractions import Fraction

from ..utils._rounding import float_at_least, float_at_most, float_sqrt_at_least
from . import _composition as comp

__all__ = ["Tally"]


class _Sum:
    """An exact sum of floats (``+inf`` allowed), rounded once when read."""

    __slots__ = ("total", "inf")

    def __init__(self):
        self.total = Fraction(0)
        self.inf = False

    def add(self, value, count=1):
        if isinstance(value, Fraction):  # an exact value (a square of a float, say)
            self.total += value * count
            return
        value = float(value)  # numpy scalars (float32 too) are read as the float they round to
        if math.isinf(value):
            self.inf = True
        elif value:
            self.total += Fraction(value) * count

    def value(self):
        return math.inf if self.inf else float(self.total)

    def upper(self):
        """The sum rounded up to a float (never below the exact sum)."""
        return math.inf if self.inf else float_at_least(self.total)

    def copy(self):
        out = _Sum()
        out.total, out.inf = self.total, self.inf
        return out


def rho_of(e):
    """ρ-zCDP of one use of ``e`` (exact: a float or a rational), or None when the
    event has no zCDP view."""
    if e.rho is not None:
        return float(e.rho)
    if e.kind == "gaussian":
        return _exact_square(e.mu) / 2  # μ²/2 (Bun & Steinke 2016, Prop. 1.6)
    if e.kind == "pure":
        return _exact_square(e.epsilon) / 2  # ε²/2 (Bun & Steinke 2016, Prop. 1.4)
    return None


def _exact_square(x):
    x = float(x)
    return x if math.isinf(x) else Fraction(x) ** 2


_SUMS = ("eps", "delta", "log_keep", "eps_sq", "drift",
         "rho", "zrest_eps", "zrest_delta", "mu_sq", "grest_eps", "grest_delta")


def _up_sum(x, s):
    """``x + s`` (a float plus an exact sum), rounded up."""
    if math.isinf(x) or s.inf:
        return math.inf
    return float_at_least(Fraction(x) + s.total)


def _sqrt_up(x):
    """The smallest float >= sqrt(x), for a float ``x >= 0``."""
    return x if math.isinf(x) else float_sqrt_at_least(Fraction(x))


class Tally:
    """The composition state of one population's events (see the module docstring).

    ``add(event)`` costs O(1) whatever the event's count; ``views(target_delta)`` returns
    the same dict as a full recomposition, ``{name: (epsilon, delta)}``.
    """

    def __init__(self):
        self.n_events = 0
        self.uses = 0
        self.nonprivate = False
        self.pair = None  # the one (ε, δ) shared by every use, if any
        self.homogeneous = True
        self.n_zcdp = 0
        self.n_gaussian = 0
        for name in _SUMS:
            setattr(self, name, _Sum())

    def copy(self):
        out = Tally.__new__(Tally)
        for name in ("n_events", "uses", "nonprivate", "pair", "homogeneous", "n_zcdp",
                     "n_gaussian"):
            setattr(out, name, getattr(self, name))
        for name in _SUMS:
            setattr(out, name, getattr(self, name).copy())
        return out

    def add(self, e):
        k = int(e.count)
        self.n_events += 1
        self.uses += k
        if e.is_nonprivate:
            self.nonprivate = True
        epsilon, delta = float(e.epsilon), float(e.delta)
        pair = (epsilon, delta)
        if self.pair is None and self.homogeneous:
            self.pair = pair
        elif self.pair != pair:
            self.homogeneous, self.pair = False, None
        self.eps.add(epsilon, k)
        self.delta.add(delta, k)
        # Σ k·ln(1 − δ) is kept negated (a sum of non-negative terms, +inf at δ = 1).
        self.log_keep.add(-math.log1p(-delta) if delta < 1 else math.inf, k)
        self.eps_sq.add(epsilon * epsilon, k)  # (inf past ~1e154, where ** would raise)
        self.drift.add(epsilon * math.tanh(epsilon / 2.0) if math.isfinite(epsilon)
                       else math.inf, k)
        rho = rho_of(e)
        if rho is not None:
            self.n_zcdp += 1
            self.rho.add(rho, k)
        else:
            self.zrest_eps.add(epsilon, k)
            self.zrest_delta.add(delta, k)
        if e.kind == "gaussian":
            self.n_gaussian += 1
            self.mu_sq.add(_exact_square(e.mu), k)
        else:
            self.grest_eps.add(epsilon, k)
            self.grest_delta.add(delta, k)
        return self

    def basic_fits(self, budget_epsilon, budget_delta, rtol=0):
        """Whether basic composition fits ``(budget_epsilon, budget_delta)``, exactly.

        The sums are exact rationals: ``Σ kε <= ε_budget·(1 + rtol)`` and
        ``Σ kδ <= δ_budget·(1 + rtol)`` as real numbers (not after rounding the sums).
        """
        def fits(s, budget):
            if math.isinf(budget):
                return True
            return not s.inf and s.total <= Fraction(budget) * (1 + Fraction(rtol))

        # A δ budget of 1 admits any δ (the basic view's δ is min(1, Σ kδ)).
        return fits(self.eps, float(budget_epsilon)) and (
            float(budget_delta) >= 1 or fits(self.delta, float(budget_delta)))

    def basic(self):
        """Basic composition (Dwork & Roth 2014, Thm 3.16): ``(Σ kε, min(1, Σ kδ))``."""
        return self.eps.upper(), min(1.0, self.delta.upper())

    def views(self, target_delta=None):
        """Every valid view at ``target_delta`` (see :func:`compose_events`)."""
        if self.n_events == 0:
            return {"basic": (0.0, 0.0)}
        if self.nonprivate:
            return {"basic": (math.inf, 0.0)}
        views = {"basic": self.basic()}
        if target_delta is None or target_delta >= 1:
            return views

        # Kairouz-Oh-Viswanath closed form, with all the δ headroom given to its slack.
        # slack = 1 − (1 − target)/Π(1 − δ), in logs so that the view's total δ lands on
        # the target to rounding (a ratio of products loses ~1e-10 relative).
        log_keep = -self.log_keep.value()
        slack = -math.expm1(math.log1p(-target_delta) - log_keep) if log_keep > -math.inf else 0.0
        if slack > 0:
            kov = comp.kov_from_sums(
                self.eps.upper(), self.eps_sq.upper(), self.drift.upper(), log_keep, slack)
            # The view's δ is computed in float: give up slack (an ulp at a time, then
            # doubling) until it is at most the target, so the exact budget test holds.
            step = 0
            while kov[1] > target_delta and slack > 0:
                slack = max(0.0, slack - math.ulp(slack) * 2.0**step)
                step += 1
                kov = comp.kov_from_sums(
                    self.eps.upper(), self.eps_sq.upper(), self.drift.upper(), log_keep, slack)
            views["kov"] = kov
            if self.homogeneous:
                eps0, delta0 = self.pair
                opt = comp.optimal_homogeneous_epsilon(eps0, delta0, self.uses, target_delta)
                if math.isfinite(opt):
                    views["optimal"] = (opt, target_delta)

        # zCDP and exact-Gaussian views: events with that characterisation compose in it
        # (their calibration δ plays no part), the rest by basic composition.
        # Rounded outward: ρ, μ² and the other events' ε up, the δ left to the
        # conversion down, and the final sum up, so the view never falls below its theorem.
        if self.n_zcdp:
            left = self._delta_left(self.zrest_delta, target_delta)
            if left > 0:
                views["zcdp"] = (_up_sum(comp.zcdp_epsilon(self.rho.upper(), left),
                                         self.zrest_eps), target_delta)
        if self.n_gaussian:
            left = self._delta_left(self.grest_delta, target_delta)
            if left > 0:
                mu = _sqrt_up(self.mu_sq.upper())
                views["gaussian"] = (_up_sum(comp.gaussian_epsilon(mu, left), self.grest_eps),
                                     target_delta)
        return views

    @staticmethod
    def _delta_left(rest_delta, target_delta):
        """``target_delta − Σ kδ`` of the other events, rounded down (0 if none left)."""
        if rest_delta.inf:
            return 0.0
        return max(0.0, float_at_most(Fraction(target_delta) - rest_delta.total))
