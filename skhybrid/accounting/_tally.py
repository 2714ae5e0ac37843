"""Running sums from which every composition view is computed in O(1) per event.

:func:`~skhybrid.accounting.compose_events` used to expand every event into per-use lists
and recompose the whole history on each charge (quadratic in the number of charges, and
a ``count=10**6`` event built million-element lists). Every view only needs a few sums:

- basic: ``Σ kε``, ``Σ kδ`` (``k`` the event's count);
- Kairouz-Oh-Viswanath: ``Σ kε²``, ``Σ kε·tanh(ε/2)`` and ``Σ k·ln(1 − δ)``;
- optimal homogeneous: whether every use shares one (ε, δ), and the number of uses;
- zCDP: ``Σ kρ`` over events with a zCDP view, basic sums over the others;
- exact Gaussian: ``Σ kμ²`` over Gaussian events, basic sums over the others.

The sums are kept exactly (as rationals: every float is one) and rounded once when a view
is read, so a view does not depend on the order in which events were added.
"""

import math
from fractions import Fraction

from . import _composition as comp

__all__ = ["Tally"]


class _Sum:
    """An exact sum of floats (``+inf`` allowed), rounded once when read."""

    __slots__ = ("total", "inf")

    def __init__(self):
        self.total = Fraction(0)
        self.inf = False

    def add(self, value, count=1):
        value = float(value)  # numpy scalars (float32 too) are read as the float they round to
        if math.isinf(value):
            self.inf = True
        elif value:
            self.total += Fraction(value) * count

    def value(self):
        return math.inf if self.inf else float(self.total)

    def copy(self):
        out = _Sum()
        out.total, out.inf = self.total, self.inf
        return out


def rho_of(e):
    """ρ-zCDP of one use of ``e``, or None when the event has no zCDP view."""
    if e.rho is not None:
        return float(e.rho)
    if e.kind == "gaussian":
        return float(e.mu) ** 2 / 2
    if e.kind == "pure":
        return comp.pure_to_zcdp(float(e.epsilon))
    return None


_SUMS = ("eps", "delta", "log_keep", "eps_sq", "drift",
         "rho", "zrest_eps", "zrest_delta", "mu_sq", "grest_eps", "grest_delta")


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
            self.mu_sq.add(float(e.mu) ** 2, k)
        else:
            self.grest_eps.add(epsilon, k)
            self.grest_delta.add(delta, k)
        return self

    def basic(self):
        """Basic composition (Dwork & Roth 2014, Thm 3.16): ``(Σ kε, min(1, Σ kδ))``."""
        return self.eps.value(), min(1.0, self.delta.value())

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
            views["kov"] = comp.kov_from_sums(
                self.eps.value(), self.eps_sq.value(), self.drift.value(), log_keep, slack)
            if self.homogeneous:
                eps0, delta0 = self.pair
                opt = comp.optimal_homogeneous_epsilon(eps0, delta0, self.uses, target_delta)
                if math.isfinite(opt):
                    views["optimal"] = (opt, target_delta)

        # zCDP and exact-Gaussian views: events with that characterisation compose in it
        # (their calibration δ plays no part), the rest by basic composition.
        if self.n_zcdp:
            r_eps, r_del = self.zrest_eps.value(), min(1.0, self.zrest_delta.value())
            if r_del < target_delta:
                views["zcdp"] = (comp.zcdp_epsilon(self.rho.value(), target_delta - r_del)
                                 + r_eps, target_delta)
        if self.n_gaussian:
            r_eps, r_del = self.grest_eps.value(), min(1.0, self.grest_delta.value())
            if r_del < target_delta:
                mu = math.sqrt(self.mu_sq.value())
                views["gaussian"] = (comp.gaussian_epsilon(mu, target_delta - r_del) + r_eps,
                                     target_delta)
        return views
