"""Black-box (ε, δ) audit of SubsampleTestReweigh's local test through ``fit``.

Neighbours: 200 curator rows (1-d, labels by sign) and one local agent at x = 1 whose
label is 1 on D and 0 on D'. ``max_iter=1`` and ``local_batch_size=1``, so the one round's
released ``target_error_estimates_[0]`` is the agent's single Gaussian randomized-response
report of its loss bit, and whatever the round's hypothesis, the loss bit differs between
D and D' (the label flips). The statistic is the report relabelled by the released
hypothesis (post-processing): z = estimate if the hypothesis is right on the agent's D
row, else 1 − estimate; z is then one discrete Gaussian report centred at 0 on D and at
1 on D'.

Claim: the local population's charge, a ρ-zCDP Gaussian randomized-response event at
(ε, δ) = (1, 0.05) (read from ``privacy_events_``), whose curve is δ(ε') =
:func:`zcdp_delta` (ρ, ε'). Events fixed from the claim before sampling, the same as in
test_adaptation_fit_audit.py: {z < 1/2 − ε'/μ²} and {z > 1/2 + ε'/μ²}, μ = √(2ρ), on six
ε' from 0 to where the claimed δ falls to 0.01; δ_lb (Clopper-Pearson, total α = 1e-3)
must not exceed δ(ε').

Power: the released discrete Gaussian is tighter than the zCDP conversion, so the
estimator's excess is negative; the mutation twin's agents add a tenth of the noise (the
charge unchanged). The curator side (subsampling, a DP learner per round, composition
over rounds) is not audited through ``fit`` here: one curator row moves a 200-row
subsample's DP learner too little for a black-box bound at test sizes.

The charged ρ is that of the released noise (the paper's σ = √(2 ln(2/δ))/ε, larger
than the zCDP calibration needs), so the excess comes from the zCDP-to-(ε, δ)
conversion only.

Measured (quick: 2 × 300 fits, a fit costs about 3.6 ms; about 3 s per test): δ excess
−0.128 for the estimator, +0.59 for the twin (at 2 × 1,000 fits: −0.047 and +0.66, the
twin's margin no larger for the extra runs). Slow (2 × 20,000 fits, 3 min): −0.018, from the last grid point ε' = 0.76, whose
claimed δ is 0.0102 while the released noise's Gaussian curve (μ = 0.37) gives 0.0038:
with more runs the excess tends to −0.006 from below, so the claim holds with a margin.
"""

import numpy as np
import pytest

from skhybrid.accounting import _composition as comp
from skhybrid.learners import DPLogisticRegression
from skhybrid.mechanisms import GaussianRandomizedResponse
from skhybrid.transfer import SubsampleTestReweigh
from skhybrid.transfer import _str

from ._stats import audit_events
from .test_adaptation_fit_audit import _events

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

EPS, DELTA = 1.0, 0.05
QUICK = 300
RUNS = [pytest.param(QUICK, id="quick"), pytest.param(20_000, id="full", marks=pytest.mark.slow)]


def _data(agent_label):
    rng = np.random.default_rng(0)
    xc = rng.uniform(-1, 1, 200)
    X = np.r_[xc, 1.0][:, None]
    y = np.r_[(xc > 0).astype(int), agent_label]
    return X, y, np.r_[np.ones(200, bool), False]


def _fit(agent_label, seed):
    X, y, curator = _data(agent_label)
    base = DPLogisticRegression(data_norm=1.0, classes=[0, 1])
    return SubsampleTestReweigh(base, epsilon=EPS, delta=DELTA, max_iter=1, local_batch_size=1,
                                subsample_size=10, kappa=1.0, classes=[0, 1],
                                random_state=int(seed)).fit(X, y, curator_mask=curator)


def _statistics(agent_label, seeds):
    out = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        clf = _fit(agent_label, seed)
        loss_on_D = float(clf.hypothesis_.predict([[1.0]])[0] != 1)
        # On D the agent's loss bit is loss_on_D; on D' it is the other bit. z is the
        # report centred at 0 on D and at 1 on D' (a fixed relabelling, given the public
        # hypothesis), so the audit reads one Gaussian shift of one unit.
        est = clf.target_error_estimates_[0]
        out[i] = est if loss_on_D == 0 else 1.0 - est
    return out


def _local_rho():
    (event,) = [e for e in _fit(1, 0).privacy_events_ if e.population == "local"]
    return event.rho


def _delta_excess(runs):
    rho = _local_rho()
    z_d = _statistics(1, range(runs))
    z_d2 = _statistics(0, range(runs, 2 * runs))
    return audit_events(z_d, z_d2, _events(rho)).delta_excess(
        lambda e: comp.zcdp_delta(rho, e))


class _TenthNoiseRR(GaussianRandomizedResponse):
    """Mutant agents: a tenth of the noise; the event (ρ) is the calibrated one."""

    def __init__(self, epsilon, delta):
        super().__init__(epsilon, delta)
        self.sigma_int = max(1, round(self.sigma_int / 10))


@pytest.mark.parametrize("runs", RUNS)
def test_local_test_respects_its_charged_curve(runs):
    assert _delta_excess(runs) <= 0


def test_twin_with_a_tenth_of_the_agents_noise_is_caught(monkeypatch):
    monkeypatch.setattr(_str, "GaussianRandomizedResponse", _TenthNoiseRR)
    assert _delta_excess(QUICK) > 0
