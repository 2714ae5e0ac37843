"""Black-box audits of ParityTransfer through ``fit``, one per population.

*Curator row.* The curator's rows are the exact worst-case neighbouring pair and output
found by enumeration in test_parity_audit.py (d = 3, n = 6, one row replaced; the exact
log-ratio of the event is ε), plus one local agent that is the same on both sides. Each
run is a full ``fit`` with ``n_chunks=1``; the output is ``candidates_`` (⊥ when empty),
the event is the single worst output fixed by the enumeration. Mutation twin: a ⊥ floor
of 0.02, below the (1 − p)/(3 − p) the proof needs (exact worst loss ≈ 3.16), with the
estimator's refusal of such a floor patched out.

*Local agent.* Curator rows labelled by the parity 101, one local agent at x = 0 whose
label is 0 on D and 1 on D' (so every candidate mislabels it on exactly one side). With
three chunks almost every run has a candidate and the agent is the whole batch of the
first one, so ``target_error_estimates_`` is a function of its single randomized-response
report. The output is ``target_error_estimates_[0] > 0.5`` (nan: no candidate); the event
is chosen on the first half of the runs and the Clopper-Pearson bound is taken on the
second half. Mutation twin: agents keep their bit with the probability of 3ε while the
estimator still charges ε.

Measured at ε = 1, quick runs (each default test 2-4 s): curator ε_lb = 0.75 (2 × 1,500
fits), twin 2.12 (2 × 1,000 fits); local ε_lb = 0.63 (2 × 1,500 fits), twin 2.27
(2 × 1,000 fits). The twins' true losses are far above ε, so fewer runs show them. Slow runs (2 × 20,000 fits, 35 s and 75 s): curator 0.91, local 0.91.
"""

import math

import numpy as np
import pytest

from skhybrid.learners import _parity_core
from skhybrid.mechanisms import RandomizedResponse
from skhybrid.transfer import ParityTransfer
from skhybrid.transfer import _parity_transfer as pt

from ._stats import pure_dp_lower_bound
from .test_parity_audit import BOT, D, EPSILON, _worst_event

pytestmark = pytest.mark.filterwarnings("ignore::skhybrid.exceptions.DegenerateModelWarning")

CURATOR_RUNS = [pytest.param(1500, id="quick"),
                pytest.param(20_000, id="full", marks=pytest.mark.slow)]
LOCAL_RUNS = [pytest.param(1500, id="quick"),
              pytest.param(20_000, id="full", marks=pytest.mark.slow)]
TWIN_RUNS = 1000


def split_half_bound(a, b):
    """ε lower bound from outputs ``a`` (on D) and ``b`` (on D'), each a 1-d array.

    Events are "output == v" for every value v seen and "output > t" / "output <= t"
    for thresholds between seen values (at most 64 quantiles for continuous outputs).
    The event and its direction are chosen on the first half of each side's runs
    (empirical log-ratio, add-one smoothed); the Clopper-Pearson bound (total α = 1e-3)
    is computed on the second half only, so the choice costs no Bonferroni factor.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ha, hb = len(a) // 2, len(b) // 2
    seen = np.unique(np.r_[a[:ha], b[:hb]])
    seen = seen[~np.isnan(seen)]
    if seen.size > 64:
        seen = np.unique(np.quantile(seen, np.linspace(0, 1, 64)))
    events = [lambda v, s=s: v == s for s in seen]
    events += [lambda v, s=s: v > s for s in seen[:-1]]
    events += [lambda v, s=s: v <= s for s in seen[:-1]]
    events.append(np.isnan)

    def log_ratio(e, x, y):
        p = (np.count_nonzero(e(x)) + 1) / (len(x) + 2)
        q = (np.count_nonzero(e(y)) + 1) / (len(y) + 2)
        return abs(math.log(p / q))

    best = max(events, key=lambda e: log_ratio(e, a[:ha], b[:hb]))
    ta, tb = a[ha:], b[hb:]
    return pure_dp_lower_bound(np.count_nonzero(best(ta)), len(ta),
                               np.count_nonzero(best(tb)), len(tb))


# ------------------------------------------------------------------------- curator row

def _candidate_codes(X, y, seeds, floor=0.5):
    Xl, yl = np.zeros((1, D), dtype=int), np.zeros(1, dtype=int)
    Xf, yf = np.vstack([X, Xl]), np.r_[y, yl]
    mask = np.r_[np.ones(len(y), bool), False]
    codes = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        clf = ParityTransfer(epsilon=EPSILON, n_chunks=1, floor=floor, classes=[0, 1],
                             random_state=int(seed)).fit(Xf, yf, curator_mask=mask)
        c = clf.candidates_
        codes[i] = BOT if len(c) == 0 else int(c[0] @ (1 << np.arange(D)[::-1]))
    return codes


def _curator_audit(floor, runs):
    z1, z2, event, exact = _worst_event(floor)
    k1 = np.count_nonzero(_candidate_codes(*z1, range(runs), floor) == event)
    k2 = np.count_nonzero(_candidate_codes(*z2, range(runs, 2 * runs), floor) == event)
    return pure_dp_lower_bound(k1, runs, k2, runs, symmetric=False), exact


@pytest.mark.parametrize("runs", CURATOR_RUNS)
def test_curator_row_respects_epsilon(runs):
    eps_lb, exact = _curator_audit(0.5, runs)
    assert abs(exact - EPSILON) < 1e-9 and 0.5 < eps_lb <= EPSILON  # tight pair; power


def test_twin_with_a_low_floor_is_caught(monkeypatch):
    monkeypatch.setattr(pt, "parity_privacy_epsilon", lambda p, floor: EPSILON)
    monkeypatch.setattr(_parity_core, "_check_floor", lambda p, floor: floor)
    eps_lb, exact = _curator_audit(0.02, TWIN_RUNS)
    assert exact > 2 * EPSILON and eps_lb > EPSILON


# ------------------------------------------------------------------------- local agent

def _local_outputs(agent_label, seeds):
    rng = np.random.default_rng(0)
    Xc = rng.integers(0, 2, (24, D))
    yc = (Xc @ np.array([1, 0, 1])) & 1
    X = np.vstack([Xc, np.zeros((1, D), dtype=int)])
    y = np.r_[yc, agent_label]
    mask = np.r_[np.ones(len(yc), bool), False]
    out = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        clf = ParityTransfer(epsilon=EPSILON, n_chunks=3, classes=[0, 1],
                             random_state=int(seed)).fit(X, y, curator_mask=mask)
        est = clf.target_error_estimates_
        out[i] = np.nan if est.size == 0 else float(est[0] > 0.5)
    return out


def _local_audit(runs):
    return split_half_bound(_local_outputs(0, range(runs)),
                            _local_outputs(1, range(runs, 2 * runs)))


class _AgentsAtThreeEpsilon(RandomizedResponse):
    """Mutant agents: they keep their bit with the probability of 3ε; the charge is ε."""

    @property
    def flip_probability(self):
        return 1.0 / (1.0 + math.exp(3 * self.epsilon))


@pytest.mark.parametrize("runs", LOCAL_RUNS)
def test_local_agent_respects_local_epsilon(runs):
    assert 0.5 < _local_audit(runs) <= EPSILON


def test_twin_with_agents_at_three_epsilon_is_caught(monkeypatch):
    monkeypatch.setattr(pt, "RandomizedResponse", _AgentsAtThreeEpsilon)
    assert _local_audit(TWIN_RUNS) > EPSILON
