"""Statistics for white-box differential-privacy audits (docs/notes/auditing.rst, layer C).

An audit runs a mechanism ``N`` times on each of two neighbouring inputs ``D`` and
``D'``, counts how often a few events -- fixed *before* sampling -- occur, and turns
the counts into a lower bound on the privacy loss that holds with probability at
least ``1 - alpha``:

* pure DP, event ``E`` (Dwork & Roth 2014, Def. 2.4)::

      eps_lb = ln(CP_lo(P_D[E]) / CP_hi(P_D'[E]))

* approximate DP at a given ``eps``::

      delta_lb = CP_lo(P_D[E]) - exp(eps) * CP_hi(P_D'[E])

where ``CP_lo`` / ``CP_hi`` are one-sided Clopper-Pearson bounds (Clopper & Pearson
1934), computed from the beta distribution. A mechanism that is (eps, delta)-DP has
``P_D[E] <= exp(eps) P_D'[E] + delta`` for every event, so ``eps_lb > eps`` (or
``delta_lb > delta``) can only happen when one of the confidence bounds misses.

False-alarm rate
----------------
Every one-sided Clopper-Pearson bound at level ``a`` misses with probability at most
``a`` (exact, conservative coverage). :func:`audit_events` splits the total
``alpha`` (default 1e-3) evenly over two bounds per (event, direction) pair
(Bonferroni), so by the union bound a *correct* mechanism fails an audit with
probability at most ``alpha = 1e-3``, whatever the number of events, and even when
the events are chosen badly. The tests use fixed seeds, so each audit is
deterministic: 1e-3 bounds the chance that the chosen seed is an unlucky one.
"""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

__all__ = [
    "ALPHA",
    "cp_lower",
    "cp_upper",
    "clopper_pearson",
    "pure_dp_lower_bound",
    "approx_dp_delta_lower_bound",
    "Event",
    "AuditRow",
    "AuditResult",
    "audit_events",
]

#: Total error probability of one audit (false-alarm rate of a correct mechanism).
ALPHA = 1e-3


def cp_lower(k, n, alpha):
    """One-sided Clopper-Pearson lower bound on p from ``k`` successes in ``n`` trials.

    ``P[p < cp_lower] <= alpha``: the ``alpha`` quantile of Beta(k, n - k + 1).
    """
    k, n = int(k), int(n)
    if k == 0:
        return 0.0
    return float(stats.beta.ppf(alpha, k, n - k + 1))


def cp_upper(k, n, alpha):
    """One-sided Clopper-Pearson upper bound on p (``P[p > cp_upper] <= alpha``)."""
    k, n = int(k), int(n)
    if k == n:
        return 1.0
    return float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))


def clopper_pearson(k, n, alpha):
    """Two-sided Clopper-Pearson interval with coverage at least ``1 - alpha``."""
    return cp_lower(k, n, alpha / 2), cp_upper(k, n, alpha / 2)


def _log_ratio(lo, hi):
    if lo <= 0.0:
        return -math.inf
    return math.log(lo) - math.log(hi)


def pure_dp_lower_bound(k1, n1, k2, n2, alpha=ALPHA, symmetric=True):
    """Lower confidence bound on ε from one event's counts on two neighbours.

    Parameters
    ----------
    k1, n1 : int
        Occurrences of the event in ``n1`` runs on ``D``.
    k2, n2 : int
        Occurrences in ``n2`` runs on ``D'``.
    alpha : float, default=1e-3
        Total error probability, split evenly over the one-sided bounds used
        (two per direction).
    symmetric : bool, default=True
        Also bound ``ln(CP_lo(p2) / CP_hi(p1))`` and return the larger bound.

    Returns
    -------
    eps_lb : float
        ``max`` over directions of ``ln(CP_lo(p1) / CP_hi(p2))``; ``-inf`` when the
        event is too rare to say anything. ``eps_lb <= ε`` with probability at least
        ``1 - alpha`` for an ε-DP mechanism.
    """
    a = alpha / (4 if symmetric else 2)
    out = _log_ratio(cp_lower(k1, n1, a), cp_upper(k2, n2, a))
    if symmetric:
        out = max(out, _log_ratio(cp_lower(k2, n2, a), cp_upper(k1, n1, a)))
    return out


def approx_dp_delta_lower_bound(k1, n1, k2, n2, eps, alpha=ALPHA, symmetric=False):
    """Lower confidence bound on δ(ε): ``CP_lo(p1) − e^ε · CP_hi(p2)``.

    Parameters
    ----------
    k1, n1, k2, n2 : int
        Counts of the event on ``D`` and ``D'`` (see :func:`pure_dp_lower_bound`).
    eps : float
        The ε at which δ is bounded.
    alpha : float, default=1e-3
        Total error probability, split evenly over the one-sided bounds.
    symmetric : bool, default=False
        Also bound ``CP_lo(p2) − e^ε CP_hi(p1)`` and return the larger bound.

    Returns
    -------
    delta_lb : float
        ``<= δ(ε)`` with probability at least ``1 - alpha`` for a mechanism whose
        privacy curve is δ(·). May be negative (no evidence).
    """
    a = alpha / (4 if symmetric else 2)
    out = cp_lower(k1, n1, a) - math.exp(eps) * cp_upper(k2, n2, a)
    if symmetric:
        out = max(out, cp_lower(k2, n2, a) - math.exp(eps) * cp_upper(k1, n1, a))
    return out


@dataclass(frozen=True)
class Event:
    """An output event, fixed before sampling.

    Parameters
    ----------
    name : str
    indicator : callable
        Maps an array of outputs (first axis = runs) to a boolean array of shape (N,).
    direction : {"both", "forward", "reverse"}, default="both"
        ``"forward"`` bounds ``P_D[E] / P_D'[E]``, ``"reverse"`` the inverse.
    epsilon : float or None, default=None
        ``None`` for a pure-DP bound on ε; a float for a bound on δ at this ε.
    """

    name: str
    indicator: object
    direction: str = "both"
    epsilon: float = None

    @property
    def n_directions(self):
        if self.direction not in ("both", "forward", "reverse"):
            raise ValueError(f"direction must be 'both', 'forward' or 'reverse'; got {self.direction!r}.")
        return 2 if self.direction == "both" else 1


@dataclass(frozen=True)
class AuditRow:
    """Counts and bound of one (event, direction): ``k1/n1`` is the numerator side."""

    event: str
    direction: str
    k1: int
    n1: int
    k2: int
    n2: int
    epsilon: float
    bound: float


@dataclass
class AuditResult:
    """All rows of one audit, with the Bonferroni level each bound was computed at."""

    rows: list
    alpha: float
    n_tests: int
    per_bound_alpha: float = field(init=False)

    def __post_init__(self):
        self.per_bound_alpha = self.alpha / (2 * self.n_tests)

    @property
    def epsilon_lb(self):
        """Largest pure-DP lower bound on ε over all events and directions."""
        vals = [r.bound for r in self.rows if r.epsilon is None]
        return max(vals) if vals else -math.inf

    def delta_excess(self, claimed_delta):
        """Largest ``delta_lb − claimed_delta(ε)`` over the approximate-DP rows.

        Positive means the claimed privacy curve is refuted (at level ``alpha``).
        """
        vals = [r.bound - claimed_delta(r.epsilon) for r in self.rows if r.epsilon is not None]
        return max(vals) if vals else -math.inf

    def summary(self):
        return "\n".join(
            f"{r.event:>24} {r.direction:>7} k1={r.k1:>7}/{r.n1} k2={r.k2:>7}/{r.n2} "
            f"eps={r.epsilon} bound={r.bound:.4f}" for r in self.rows
        )


def audit_events(samples_D, samples_D2, events, *, alpha=ALPHA):
    """Count fixed events on two neighbours' outputs and bound the privacy loss.

    Parameters
    ----------
    samples_D, samples_D2 : ndarray
        Outputs of independent runs on ``D`` and on ``D'`` (first axis = runs).
    events : sequence of Event
        Fixed before sampling (typically by thresholding the *claimed* privacy loss).
    alpha : float, default=1e-3
        Total error probability of the whole audit, Bonferroni-split over the
        ``2 × Σ directions`` one-sided Clopper-Pearson bounds.

    Returns
    -------
    result : AuditResult
        ``result.epsilon_lb`` (pure DP) and ``result.delta_excess(curve)`` (approx.
        DP); either exceeding the claim refutes it with confidence ``1 - alpha``.
    """
    n_tests = sum(e.n_directions for e in events)
    a = alpha / (2 * n_tests)
    n_a, n_b = len(samples_D), len(samples_D2)
    rows = []
    for e in events:
        k_a = int(np.count_nonzero(e.indicator(samples_D)))
        k_b = int(np.count_nonzero(e.indicator(samples_D2)))
        pairs = {"forward": (k_a, n_a, k_b, n_b), "reverse": (k_b, n_b, k_a, n_a)}
        for direction in ("forward", "reverse"):
            if e.direction not in (direction, "both"):
                continue
            k1, n1, k2, n2 = pairs[direction]
            lo, hi = cp_lower(k1, n1, a), cp_upper(k2, n2, a)
            if e.epsilon is None:
                bound = _log_ratio(lo, hi)
            else:
                bound = lo - math.exp(e.epsilon) * hi
            rows.append(AuditRow(e.name, direction, k1, n1, k2, n2, e.epsilon, bound))
    return AuditResult(rows, alpha, n_tests)
