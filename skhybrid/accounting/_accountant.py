"""The privacy accountant shared by every skhybrid estimator."""

import math
import os
import threading
from fractions import Fraction
from numbers import Real

import numpy as np

from ..utils._rounding import float_at_most
from . import _composition as comp
from ._events import POPULATIONS, PrivacyEvent
from ._ledger import _show, looks_like_url, make_ledger
from ._tally import Tally

__all__ = ["PrivacyAccountant", "BudgetExceededError", "compose_events", "best_view"]

#: A budget holds to a relative 2^-52 (two units in the last place), checked in exact
#: arithmetic: the rounding of the ε values themselves. k charges of fl(ε/k) (or any
#: charges whose real values add up to ε) sum to at most ε(1 + 2^-53) as floats, so they
#: fit; a real overspend (the 1e-9 the old tolerance let through) does not.
_BUDGET_RTOL = 2.0**-52


class BudgetExceededError(RuntimeError):
    """Raised by :meth:`PrivacyAccountant.spend` when a charge would exceed the budget.

    It is raised before the mechanism runs: nothing has been computed on private data.
    """


def compose_events(events, target_delta=None):
    """All valid composition views of a list of events, as ``{name: (epsilon, delta)}``.

    Each view is a valid (ε, δ) guarantee for the adaptive composition of ``events``;
    which one is tightest depends on the events, so all are returned and
    :func:`best_view` picks the one to report.

    Parameters
    ----------
    events : list of PrivacyEvent
        Events of one population, composed adaptively.
    target_delta : float or None
        The total δ at which the tighter views are evaluated. ``None`` computes only
        basic composition (a tighter view needs a δ to trade ε against).

    Returns
    -------
    views : dict
        ``"basic"`` always (Dwork & Roth 2014, Thm 3.16); ``"kov"`` (Kairouz, Oh &
        Viswanath 2015, Thm 3.5, heterogeneous closed form); ``"optimal"`` when all events
        share one (ε, δ) (KOV Thm 3.3, the exact optimum for homogeneous composition);
        ``"zcdp"`` (Bun & Steinke 2016: ρ adds up; converted with Canonne, Kamath &
        Steinke 2020, events without a zCDP view added by basic composition);
        ``"gaussian"`` (Gaussian mechanisms compose exactly into one Gaussian with
        μ = sqrt(Σ μᵢ²), Dong, Roth & Su 2019 Cor. 2; converted with Balle & Wang 2018
        Thm 8; other events added by basic composition). Views whose δ would exceed
        ``target_delta`` are left out.

    Notes
    -----
    The views are computed from running sums (:class:`~skhybrid.accounting._tally.Tally`):
    O(1) per event whatever its ``count``, and independent of the events' order (the
    sums are exact, rounded once).
    """
    tally = Tally()
    for e in events:
        tally.add(e)
    return tally.views(target_delta)


def best_view(views):
    """Pick the view to report: the smallest ε, then the smallest δ among near ties.

    Among the views within a relative ``REPORT_RTOL`` (1e-4) of the smallest ε, the one
    with the smallest δ is returned. Every view is a valid (ε, δ) guarantee at the target δ it was computed for (the
    accountant's δ budget, or a fit's own ``delta``); the tolerance stops a report from
    spending a whole δ budget for a negligible saving in ε, and
    :func:`~skhybrid.accounting.calibrate_pure_epsilon` uses the same tolerance, so a fit
    calibrated to ε reports ε. ``privacy_spent_``, :meth:`PrivacyAccountant.spent`, the
    budget check's message, :meth:`PrivacyAccountant.report` and the command-line report
    all use this rule: the same events at the same target δ give the same numbers.

    Parameters
    ----------
    views : dict
        ``{name: (epsilon, delta)}``, as returned by :func:`compose_events`.

    Returns
    -------
    name : str
        The name of the chosen view.
    (epsilon, delta) : tuple of float
        Its guarantee.
    """
    eps_min = min(eps for eps, _ in views.values())
    close = [k for k in views if views[k][0] <= eps_min * (1 + comp.REPORT_RTOL)]
    name = min(close, key=lambda k: (views[k][1], views[k][0]))
    return name, views[name]



def _budget_pair(epsilon, delta, population):
    e = epsilon[population] if isinstance(epsilon, dict) else epsilon
    d = delta[population] if isinstance(delta, dict) else delta
    return e, d


class PrivacyAccountant:
    """A privacy budget per population, shared by every estimator that fits on private data.

    Each fit declares the events it will spend (mechanism, ε, δ, population), and the
    accountant checks and records them **atomically, before** any noise is drawn; a
    charge that would exceed the budget raises :class:`BudgetExceededError` and records
    nothing. The spend reported is the minimum over every valid composition view
    (basic composition always; Kairouz–Oh–Viswanath, optimal homogeneous, zCDP and exact
    Gaussian composition where they apply — see :func:`compose_events`).

    Parameters
    ----------
    epsilon : float, dict or None, default=None
        Total ε budget, for both populations or as ``{"central": ε_c, "local": ε_l}``; a
        population left out of the dict gets ε = 0 (it may not be spent). ``None``: the
        budget stored in ``ledger`` when it has one, else no limit (``np.inf``).
    delta : float, dict or None, default=None
        Total δ budget, likewise (a population left out gets δ = 0; ``None``: the stored
        one, else 1.0). With δ = 1 (no δ budget) only basic composition is reported,
        because a tighter view needs a δ to trade against; pass ``slack`` to see tighter
        views anyway.
    slack : float or None, default=None
        The extra δ the tighter views may use on top of the events' own δ. ``None`` lets
        them use the whole δ budget. It changes what a charge is allowed, so it is part of
        the budget stored in the ledger: ``None`` with no ``epsilon``/``delta`` adopts the
        stored one, and a different one is refused like a different budget.
    ledger : None, str or path-like, default=None
        ``None`` keeps events in memory (one process). A file path keeps them in a SQLite
        ledger, which every process of a joblib search (``n_jobs > 1``) and every thread
        of one host charges transactionally. A ``postgresql://user@host:port/db`` URL
        (optionally ``?ledger=<name>``) keeps them in a PostgreSQL database that the
        workers of a cluster on any host charge transactionally (needs
        ``pip install "skhybrid[cluster]"``; see the docs page "Running on a cluster").
        The budget (with ``slack``) is stored in the ledger by the first accountant;
        another accountant declaring a different budget on the same ledger is refused
        (``ValueError``), and every charge is checked against the stored budget. An
        in-memory accountant copied into a worker process (pickled, or by ``fork``)
        refuses to spend rather than lose the charge. A SQLite path has ``~`` expanded
        and is resolved to an absolute path once, here. A new ledger needs an existing
        directory and, given as a bare name, a suffix (``"budget.sqlite"``, not
        ``"budget"`` or ``"Memory"``, which would silently create a file in the working
        directory; ``"./budget"`` is accepted); an existing file that is not a ledger is
        refused (``ValueError``) and left unchanged.

    Attributes
    ----------
    budget_epsilon : float or dict
        The ε budget (read-only: it is the ledger's).
    budget_delta : float or dict
        The δ budget (read-only).
    slack : float or None
        As the parameter (read-only).
    events : list of PrivacyEvent
        Every event recorded so far, in order.

    Notes
    -----
    The budget check is exact to a relative 2^-52: basic composition is tested on the
    exact sums of the events' floats, every tighter view is rounded outward, and a total
    may exceed the budget only by the rounding of the ε values themselves (30 charges of
    ``0.1``, each 0.1000000000000000055..., fit a budget of ``3.0``; see the docs page
    "Privacy accounting").

    ``clone`` returns the accountant itself (``__sklearn_clone__``), so every fold and
    candidate of a search charges the same budget — which is the point: a search over
    k candidates with 5 folds spends 5k + 1 fits of privacy.

    Examples
    --------
    >>> from skhybrid.accounting import PrivacyAccountant
    >>> from skhybrid.accounting import PrivacyEvent
    >>> acc = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    >>> acc.spend([PrivacyEvent("laplace", "pure", epsilon=0.5)])
    >>> acc.spent("central")
    (0.5, 0.0)
    """

    def __init__(self, epsilon=None, delta=None, *, slack=None, ledger=None):
        if slack is not None and not (isinstance(slack, Real) and 0 < slack < 1):
            raise ValueError(f"slack must be None or a float in (0, 1); got {slack!r}.")
        self._ledger = make_ledger(ledger)
        stored = self._ledger.budget()
        if epsilon is None and delta is None and stored is not None:
            epsilon, delta = _unpack_budget(stored)
            if slack is None:
                slack = stored.get("slack")
        self._slack = None if slack is None else float(slack)
        budget_epsilon = self._check_budget(
            np.inf if epsilon is None else epsilon, "epsilon", lo=0, hi=math.inf)
        budget_delta = self._check_budget(1.0 if delta is None else delta, "delta",
                                          lo=0, hi=1)
        # A population that either dict leaves out cannot be spent at all, (0, 0): with
        # only ε zeroed, the scalar δ (default 1) would still admit (0, δ) events on it.
        named = [set(b) for b in (epsilon, delta) if isinstance(b, dict)]
        if named:
            closed = set(POPULATIONS) - set.intersection(*named)

            def per_population(budget):
                return {p: 0.0 if p in closed else
                        (budget[p] if isinstance(budget, dict) else budget)
                        for p in POPULATIONS}

            budget_epsilon = per_population(budget_epsilon)
            budget_delta = per_population(budget_delta)
        self._budget_epsilon, self._budget_delta = budget_epsilon, budget_delta
        self._ledger.bind(self._packed_budget())
        self._reset_cache()

    # Read-only: a charge is checked against the budget stored in the ledger, and these
    # are the accountant's copy of it (an assignment would only make them disagree).
    @property
    def budget_epsilon(self):
        """The ε budget: a float, or ``{population: ε}``."""
        return self._budget_epsilon

    @property
    def budget_delta(self):
        """The δ budget: a float, or ``{population: δ}``."""
        return self._budget_delta

    @property
    def slack(self):
        """The extra δ the tighter views may use, or ``None`` (part of the stored budget)."""
        return self._slack

    def _reset_cache(self):
        # Running composition state of the events read so far (the ledger is append-only,
        # so only the events past ``_n_seen`` are ever read again).
        self._cache_lock = threading.RLock()
        self._n_seen = 0
        self._tallies = {p: Tally() for p in POPULATIONS}

    def __getstate__(self):
        state = self.__dict__.copy()
        for key in ("_cache_lock", "_n_seen", "_tallies"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reset_cache()

    def _refresh(self, ledger):
        """Fold the events appended since the last read into the running tallies."""
        with self._cache_lock:
            new = ledger.read(self._n_seen)
            for e in new:
                self._tallies[e.population].add(e)
            self._n_seen += len(new)
            return self._tallies

    def _packed_budget(self):
        """The budget as stored in the ledger: every number that decides what a charge
        may spend (ε and δ per population, and ``slack``)."""
        out = {}
        for population in POPULATIONS:
            e, d = self.budget(population)
            out[f"epsilon_{population}"], out[f"delta_{population}"] = float(e), float(d)
        out["slack"] = self._slack
        return out

    def _enforced_budget(self, ledger):
        """The budget stored in ``ledger`` (read under its lock inside a charge), which is
        what a charge is checked against; an accountant whose own copy disagrees (its
        state was altered, or a pickled copy carried another one) is refused."""
        stored = ledger.budget()
        if stored != self._packed_budget():
            raise RuntimeError(
                f"This accountant's budget ({_show(self._packed_budget())}) is not the "
                f"budget stored in its ledger {ledger.describe()} "
                f"({'none' if stored is None else _show(stored)}); refusing to "
                "charge, nothing was computed. Open the ledger with "
                "PrivacyAccountant(ledger=...) to use the stored budget.")
        return stored

    @staticmethod
    def _check_budget(value, name, lo, hi):
        values = value.values() if isinstance(value, dict) else [value]
        if isinstance(value, dict) and set(value) - set(POPULATIONS):
            raise ValueError(f"{name} budget keys must be among {POPULATIONS}; got {sorted(value)}.")
        for v in values:
            if not isinstance(v, Real) or math.isnan(v) or not (lo <= v <= hi):
                raise ValueError(
                    f"The accountant's {name} budget must be a number in "
                    f"{'[0, inf]' if name == 'epsilon' else '[0, 1]'}; got {v!r}."
                )
        if isinstance(value, dict):
            # A population the dict leaves out may not be spent at all: failing closed.
            return {p: float(value.get(p, 0.0)) for p in POPULATIONS}
        return float(value)

    # sklearn: every clone of an estimator shares this very accountant.
    def __sklearn_clone__(self):
        return self

    @property
    def ledger(self):
        """Where the events are kept.

        ``"memory"``, ``"sqlite:<path>"`` or the PostgreSQL URL without its password.
        """
        return self._ledger.describe()

    @property
    def events(self):
        """Every event recorded so far (all populations), oldest first."""
        return self._ledger.read()

    def budget(self, population="central"):
        """Return the (ε, δ) budget of ``population``.

        Parameters
        ----------
        population : {"central", "local"}, default="central"
            The population whose budget is returned.

        Returns
        -------
        (epsilon, delta) : tuple of float
            The budget; a population left out of a budget dict has ``(0.0, 0.0)``.
        """
        self._check_population(population)
        return _budget_pair(self.budget_epsilon, self.budget_delta, population)

    def _target_delta(self, tally, population):
        return _target_delta(tally, self.budget(population)[1], self._slack)

    def views(self, population="central"):
        """Return every valid composition view of ``population``'s events.

        Parameters
        ----------
        population : {"central", "local"}, default="central"
            The population whose events are composed.

        Returns
        -------
        views : dict
            ``{name: (epsilon, delta)}`` at the budget's δ (see :func:`compose_events`).
        """
        self._check_population(population)
        with self._cache_lock:
            tally = self._refresh(self._ledger)[population]
            return tally.views(self._target_delta(tally, population))

    def spent(self, population="central"):
        """Return the tightest valid (ε, δ) spent so far by ``population``.

        Parameters
        ----------
        population : {"central", "local"}, default="central"
            The population whose spend is returned.

        Returns
        -------
        (epsilon, delta) : tuple of float
            The view chosen by :func:`best_view`.
        """
        return best_view(self.views(population))[1]

    def remaining(self, population="central"):
        """Return the budget minus the spend, per coordinate.

        Composition is not additive under the tighter views, so this is an indication;
        the exact test of whether a fit fits is :meth:`can_spend`.

        Parameters
        ----------
        population : {"central", "local"}, default="central"
            The population whose remaining budget is returned.

        Returns
        -------
        (epsilon, delta) : tuple of float
            ``max(0, budget - spent)`` for ε and for δ.
        """
        b_eps, b_delta = self.budget(population)
        s_eps, s_delta = self.spent(population)
        return _left(b_eps, s_eps), _left(b_delta, s_delta)

    def _check(self, tallies, new, budget):
        """Raise BudgetExceededError unless ``tallies + new`` fits every touched population
        of ``budget`` (the packed budget stored in the ledger)."""
        for population in {e.population for e in new}:
            tally = tallies[population].copy()
            for e in new:
                if e.population == population:
                    tally.add(e)
            b_eps, b_delta = budget[f"epsilon_{population}"], budget[f"delta_{population}"]
            target = _target_delta(tally, b_delta, budget["slack"])
            # Exact, to a relative 2^-52 (docs/accounting.rst, "How a charge is checked"):
            # basic composition is tested on its exact rational sums; every other view is
            # an upper bound already rounded outward.
            if tally.basic_fits(b_eps, b_delta, _BUDGET_RTOL):
                continue
            views = tally.views(target)
            if any(_within(e, b_eps) and _within(d, b_delta)
                   for name, (e, d) in views.items() if name != "basic"):
                continue
            name, (eps, delta) = best_view(views)
            prev = best_view(tallies[population].views(target))[1]
            raise BudgetExceededError(
                f"Privacy budget exceeded for the {population!r} population: spending "
                f"{', '.join(sorted({e.mechanism for e in new if e.population == population}))} "
                f"would bring the total to "
                f"(epsilon={eps:.4g}, delta={delta:.3g}) under {name} composition, over the "
                f"budget (epsilon={b_eps:.4g}, delta={b_delta:.3g}); already spent "
                f"(epsilon={prev[0]:.4g}, delta={prev[1]:.3g}). Nothing was computed."
                + _rounding_hint(eps, delta, b_eps, b_delta)
            )

    def can_spend(self, events):
        """Tell whether ``events`` would fit in the remaining budget (nothing is recorded).

        Parameters
        ----------
        events : list of PrivacyEvent
            The events of one release.

        Returns
        -------
        fits : bool
            True if :meth:`spend` would accept them now.
        """
        try:
            with self._cache_lock:
                self._check(self._refresh(self._ledger), list(events),
                            self._enforced_budget(self._ledger))
        except BudgetExceededError:
            return False
        return True

    def spend(self, events, *, source=None):
        """Atomically check the budget and record ``events``.

        Parameters
        ----------
        events : list of PrivacyEvent
            All the events of one release; either all are recorded or none.
        source : str, optional
            Overrides each event's ``source`` label (usually the estimator's name).

        Raises
        ------
        BudgetExceededError
            If the events do not fit; nothing is recorded.
        """
        events = list(events)
        for e in events:
            if not isinstance(e, PrivacyEvent):
                raise ValueError(f"spend takes PrivacyEvent objects; got {type(e).__name__}.")
        if source is not None:
            events = [_relabel(e, source) for e in events]
        if not events:
            return
        # Lock order: the ledger's transaction, then the cache (every path takes them so).
        # The budget is read inside the transaction: the check and the append see the
        # ledger's own budget, not attributes of this object.
        with self._ledger.transaction() as ledger, self._cache_lock:
            self._check(self._refresh(ledger), events, self._enforced_budget(ledger))
            ledger.append(events)

    def report(self):
        """Return a plain-text table of the events and the spend per population.

        Returns
        -------
        report : str
            The budget, one line per event, and each population's spend (by
            :func:`best_view`).
        """
        lines = [f"PrivacyAccountant (ledger: {self.ledger})"]
        lines.append("budget: " + "; ".join(
            f"{p} (epsilon={self.budget(p)[0]:.4g}, delta={self.budget(p)[1]:.3g})"
            for p in POPULATIONS))
        events = self.events
        lines.append(f"{'source':<32} {'mechanism':<24} {'pop':<8} {'count':>6} {'epsilon':>10} {'delta':>10}")
        for e in events:
            lines.append(
                f"{e.source[:32]:<32} {e.mechanism[:24]:<24} {e.population:<8} {e.count:>6} "
                f"{e.epsilon:>10.4g} {e.delta:>10.3g}"
            )
        for population in POPULATIONS:
            if not any(e.population == population for e in events):
                continue
            views = self.views(population)
            name, (eps, delta) = best_view(views)
            b_eps, b_delta = self.budget(population)
            lines.append(
                f"{population}: spent (epsilon={eps:.4g}, delta={delta:.3g}) by {name} composition "
                f"of budget (epsilon={b_eps:.4g}, delta={b_delta:.3g})"
            )
        return "\n".join(lines)

    @classmethod
    def from_ledger(cls, ledger, *, slack=None):
        """Open an existing durable ledger with the budget stored in it.

        Parameters
        ----------
        ledger : str, path-like or ledger object
            A SQLite path, a PostgreSQL URL or a ledger back end (see the ``ledger``
            parameter of the class).
        slack : float or None, default=None
            ``None`` adopts the ``slack`` stored with the budget; another value than the
            stored one is refused (``ValueError``), as in the class.

        Returns
        -------
        accountant : PrivacyAccountant
            An accountant bound to ``ledger`` with the stored budget.

        Raises
        ------
        ValueError
            If ``ledger`` does not exist (nothing is created) or holds no budget.
        """
        from ._postgres import PostgreSQLLedger, is_postgres_url

        if is_postgres_url(ledger):
            backend = PostgreSQLLedger(ledger, create=False)
        elif isinstance(ledger, (str, os.PathLike)) and not os.path.exists(
                os.path.expanduser(ledger)):
            if looks_like_url(ledger):
                # Not echoed: a mistyped URL may carry a password.
                raise ValueError(
                    "No ledger at the given location, which looks like a URL but does not "
                    "start with postgresql:// or postgres:// (it is not repeated here: it "
                    "may hold a password). Check the URL's scheme.")
            raise ValueError(f"No ledger at {os.fspath(ledger)!r} (given as ledger=): "
                             "nothing was created. Check the path.")
        else:
            backend = make_ledger(ledger)
        if backend.budget() is None:
            raise ValueError(f"The ledger {backend.describe()} holds no budget; it was not "
                             "written by a PrivacyAccountant.")
        return cls(slack=slack, ledger=backend)

    def _check_population(self, population):
        if population not in POPULATIONS:
            raise ValueError(f"population must be one of {POPULATIONS}; got {population!r}.")

    def __repr__(self):
        return (
            f"PrivacyAccountant(epsilon={self.budget_epsilon!r}, delta={self.budget_delta!r}, "
            f"ledger={self.ledger!r})"
        )


def _target_delta(tally, b_delta, slack):
    """The δ at which the tighter views of ``tally`` are evaluated (None: basic only)."""
    if slack is not None:
        basic_delta = tally.basic()[1]
        return min(b_delta, basic_delta + slack) if b_delta < 1 else basic_delta + slack
    return b_delta if b_delta < 1 else None


def _within(value, budget):
    """``value <= budget·(1 + 2^-52)``, exactly."""
    return value <= budget or (math.isfinite(value)
                               and Fraction(value) <= Fraction(budget) * (1 + Fraction(_BUDGET_RTOL)))


def _rounding_hint(eps, delta, b_eps, b_delta):
    """A refusal by a few units in the last place (past the 2^-52 the check allows, within
    2^-48) is rounding: say so, with the numbers in full. (Beyond that the views do not
    add up, e.g. ``remaining()`` of a tight view spent under another: no hint.)"""
    rtol = 2.0**-48
    if not (eps <= b_eps * (1 + rtol) and (delta <= b_delta * (1 + rtol) or b_delta >= 1)):
        return ""
    return (f" The excess is floating-point rounding (total epsilon {eps!r} against "
            f"{b_eps!r}, delta {delta!r} against {b_delta!r}): decimal values such as 0.1 "
            "are not exact in binary and the budget is checked exactly. Split a budget "
            "with skhybrid.accounting.calibrate_pure_epsilon, or leave a margin.")


def _left(budget, spent):
    """``max(0, budget − spent)`` rounded down (when the spend is basic composition's,
    spending it fits)."""
    if math.isinf(budget) or math.isinf(spent):
        return max(0.0, budget - spent)
    left = Fraction(budget) - Fraction(spent)
    return float_at_most(left) if left > 0 else 0.0


def _unpack_budget(stored):
    eps = {p: stored[f"epsilon_{p}"] for p in POPULATIONS}
    dlt = {p: stored[f"delta_{p}"] for p in POPULATIONS}
    return eps, dlt


def _relabel(event, source):
    data = event.to_dict()
    data["source"] = source
    return PrivacyEvent.from_dict(data)
