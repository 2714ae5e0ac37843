"""White-box statistical DP audit of the private parity learner (docs/notes/auditing.rst, layer C).

1. Worst-case pair and event: exact enumeration (d = 3, n = 6) of the output law of
   the mechanism under audit over many neighbouring pairs; the pair, direction and
   single output (a parity or ⊥) with the largest exact log-ratio are fixed before
   any sampling.
2. N seeded runs per side of the real code.
3. Clopper–Pearson bounds, total α = 1e-3 Bonferroni-split over the two bounds
   (one event, one direction, fixed in step 1); ε_lb = ln(CP_lo(p1) / CP_hi(p2)).
4. Assert ε_lb ≤ ε for the shipped floor, and ε_lb > ε for a mutation twin whose
   floor (0.02) is well below (1-p)/(3-p) ≈ 0.21.

False-alarm rate: by construction ≤ 1e-3 per run of the audit (CP bounds are exact
coverage-conservative); the true worst log-ratio equals ε exactly here, so the
shipped version sits at the boundary, the hardest case. The twin's exact worst
log-ratio is ≈ 3.16 at ε = 1, far beyond what N = 1e4 needs to detect (measured ε_lb:
0.88 for the shipped floor, 2.9 for the twin at N = 2e4).
"""

import itertools
import math

import numpy as np
from scipy import stats

from skhybrid.learners._parity_core import _private_parity_unchecked, private_parity

D, N_ROWS, EPSILON = 3, 6, 1.0
P_RATE = math.tanh(EPSILON / 2)
N_RUNS = 20_000
ALPHA = 1e-3
PARITIES = np.array(list(itertools.product((0, 1), repeat=D)), dtype=np.uint8)
BOT = len(PARITIES)  # index of ⊥ in an output law


def _exact_law(X, y, p, floor):
    subsets = np.array(list(itertools.product((0, 1), repeat=len(y))), dtype=np.int64)
    sizes = subsets.sum(axis=1)
    weights = p**sizes * (1 - p) ** (len(y) - sizes)
    wrong = (((PARITIES.astype(int) @ X.T) & 1) != y).astype(np.int64)
    in_v = (subsets @ wrong.T) == 0
    size_v = in_v.sum(axis=1)
    ok = size_v > 0
    law = np.zeros(BOT + 1)
    law[:BOT] = (weights[ok, None] * in_v[ok] / size_v[ok, None]).sum(axis=0)
    law[BOT] = weights[~ok].sum()
    law *= 1 - floor
    law[BOT] += floor
    return law


def _candidate_pairs():
    rng = np.random.default_rng(0)
    r_star = np.array([1, 0, 1])
    X_indep = rng.integers(0, 2, (N_ROWS, D))
    X_indep[:, 0] = 0
    X_indep[0] = [1, 0, 0]
    X_rand = rng.integers(0, 2, (N_ROWS, D))
    bases = [X_indep, np.tile([1, 1, 0], (N_ROWS, 1)), X_rand]
    for X in bases:
        y = (X @ r_star) & 1
        for i in range(N_ROWS):
            for x_new in PARITIES:
                for y_new in (0, 1):
                    X2, y2 = X.copy(), y.copy()
                    X2[i], y2[i] = x_new, y_new
                    yield (X, y), (X2, y2)


def _worst_event(floor):
    """(z1, z2, event, exact log-ratio): z1 is the side where the event is more likely."""
    best = None
    for z, z2 in _candidate_pairs():
        P, Q = _exact_law(*z, P_RATE, floor), _exact_law(*z2, P_RATE, floor)
        for A, B, s1, s2 in ((P, Q, z, z2), (Q, P, z2, z)):
            mask = B > 0
            ratio = np.full(A.shape, -np.inf)
            ratio[mask] = np.log(A[mask] / B[mask])
            o = int(np.argmax(ratio + 1e-12 * B))  # ties: the more frequent event
            key = (round(ratio[o], 9), B[o])
            if best is None or key > best[0]:
                best = (key, s1, s2, o, ratio[o])
    _, z1, z2, event, log_ratio = best
    return z1, z2, event, log_ratio


def _count(mechanism, X, y, event, seed, n_runs):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_runs):
        r = mechanism(X, y, rng)
        code = BOT if r is None else int(r @ (1 << np.arange(D)[::-1]))
        hits += code == event
    return hits


def _epsilon_lower_bound(k1, k2, n):
    a = ALPHA / 2  # Bonferroni over the two one-sided bounds
    p1_lo = stats.beta.ppf(a, k1, n - k1 + 1) if k1 > 0 else 0.0
    p2_hi = stats.beta.ppf(1 - a, k2 + 1, n - k2) if k2 < n else 1.0
    return math.log(p1_lo / p2_hi) if p1_lo > 0 else -math.inf


def _audit(mechanism, floor, seed, n_runs=N_RUNS):
    z1, z2, event, exact = _worst_event(floor)
    k1 = _count(mechanism, *z1, event, seed, n_runs)
    k2 = _count(mechanism, *z2, event, seed + 1, n_runs)
    return _epsilon_lower_bound(k1, k2, n_runs), exact


def test_audit_shipped_floor_passes():
    def mechanism(X, y, rng):
        return private_parity(X, y, EPSILON, rng)  # rate="tanh", floor=0.5

    eps_lb, exact = _audit(mechanism, 0.5, seed=10)
    assert abs(exact - EPSILON) < 1e-9  # the pair found is tight
    assert eps_lb <= EPSILON
    # Power sanity check: the bound is not vacuous on this tight pair.
    assert eps_lb > 0.5 * EPSILON


def test_audit_mutation_twin_low_floor_fails():
    floor = 0.02  # well below (1 - p)/(3 - p) ≈ 0.21

    def mechanism(X, y, rng):
        return _private_parity_unchecked(X, y, P_RATE, floor, rng)

    # Half the runs: the twin's gap (exact loss ≈ 3.16 vs ε = 1) needs far fewer.
    eps_lb, exact = _audit(mechanism, floor, seed=20, n_runs=N_RUNS // 2)
    assert exact > 2 * EPSILON
    assert eps_lb > EPSILON
