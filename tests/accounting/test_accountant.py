"""PrivacyAccountant: atomic check-and-spend, views, ledgers, durability (AUDITING layer A)."""

import math
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.base import clone

from skhybrid.accounting import (
    BudgetExceededError,
    PrivacyAccountant,
    PrivacyEvent,
    compose_events,
)
from skhybrid.accounting import _composition as comp
from skhybrid.learners import DPLogisticRegression
from skhybrid.mechanisms import GaussianMechanism, LaplaceMechanism
from skhybrid.mechanisms._noise import record_noise


def lap(eps, count=1, population="central"):
    return LaplaceMechanism(eps).event(count=count, population=population)


def test_basic_spend_and_refusal_records_nothing():
    acc = PrivacyAccountant(epsilon=1.0)
    acc.spend([lap(0.4), lap(0.4)])
    assert acc.spent() == pytest.approx((0.8, 0.0))
    with pytest.raises(BudgetExceededError, match="central.*Nothing was computed"):
        acc.spend([lap(0.1), lap(0.2)])  # all or nothing
    assert len(acc.events) == 2
    assert acc.remaining()[0] == pytest.approx(0.2)
    assert acc.can_spend([lap(0.2)]) and not acc.can_spend([lap(0.21)])


def test_populations_have_separate_budgets():
    acc = PrivacyAccountant(epsilon={"central": 1.0, "local": 2.0})
    acc.spend([lap(1.0), lap(2.0, population="local")])
    assert acc.spent("central") == (1.0, 0.0)
    assert acc.spent("local") == (2.0, 0.0)
    with pytest.raises(BudgetExceededError, match="'local'"):
        acc.spend([lap(0.1, population="local")])


def test_self_composition_count_equals_copies():
    target = 1e-6
    many = compose_events([lap(0.1)] * 100, target)
    counted = compose_events([lap(0.1, count=100)], target)
    assert many.keys() == counted.keys()
    for name in many:
        assert many[name] == pytest.approx(counted[name])


def test_tighter_views_never_exceed_basic_and_are_used():
    acc = PrivacyAccountant(epsilon=8.0, delta=1e-6)
    acc.spend([lap(0.1, count=100)])
    views = acc.views()
    assert views["basic"] == pytest.approx((10.0, 0.0))
    assert views["optimal"][0] <= views["kov"][0] <= 10.0
    assert acc.spent()[0] == pytest.approx(views["optimal"][0])
    assert acc.spent()[0] < 8.0  # basic composition alone would have refused this


def test_epsilon_monotone_in_count():
    values = [compose_events([lap(0.1, count=k)], 1e-6) for k in (10, 20, 40)]
    best = [min(v.values())[0] for v in values]
    assert best == sorted(best)


def test_k_gaussians_compose_exactly_to_one():
    k, sigma = 10, 4.0
    events = [PrivacyEvent("g", "gaussian", 1.0, 1e-5, mu=1 / sigma)] * k
    views = compose_events(events, 1e-5)
    one = comp.gaussian_epsilon(math.sqrt(k) / sigma, 1e-5)
    assert views["gaussian"][0] == pytest.approx(one)


def test_no_delta_budget_reports_basic_only():
    acc = PrivacyAccountant()
    acc.spend([lap(0.1, count=100)])
    assert set(acc.views()) == {"basic"}
    acc_slack = PrivacyAccountant(slack=1e-6)
    acc_slack.spend([lap(0.1, count=100)])
    assert acc_slack.spent()[0] < 10.0


def test_unknown_event_kind_fails_closed():
    with pytest.raises(ValueError, match="Unknown privacy event kind"):
        PrivacyEvent("mystery", "rdp-curve", 1.0)


def test_refusal_happens_before_any_noise_is_drawn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X[:, 0] > 0).astype(int)
    acc = PrivacyAccountant(epsilon=0.5)
    with record_noise() as draws, pytest.raises(BudgetExceededError):
        DPLogisticRegression(epsilon=1.0, accountant=acc, random_state=0).fit(X, y)
    assert draws == [] and acc.events == []


def test_nonprivate_fit_is_refused_by_a_finite_budget_and_recorded_otherwise():
    X = np.random.default_rng(0).normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(BudgetExceededError):
        DPLogisticRegression(epsilon=np.inf, accountant=PrivacyAccountant(10.0)).fit(X, y)
    acc = PrivacyAccountant()
    clf = DPLogisticRegression(epsilon=np.inf, accountant=acc).fit(X, y)
    assert acc.spent() == (math.inf, 0.0) and clf.privacy_spent_["central"][0] == math.inf
    # every row public: nothing private was touched, nothing is charged
    acc = PrivacyAccountant(1.0)
    DPLogisticRegression(epsilon=np.inf, accountant=acc).fit(X, y, public_mask=np.ones(40, bool))
    assert acc.events == []


def test_clone_returns_the_accountant_itself():
    acc = PrivacyAccountant(epsilon=1.0)
    assert clone(acc) is acc


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "1"])
def test_invalid_budget(bad):
    with pytest.raises(ValueError, match="epsilon budget"):
        PrivacyAccountant(epsilon=bad)


def test_report_names_sources_and_views():
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    acc.spend([GaussianMechanism(1.0, 1e-6).event()], source="Demo")
    text = acc.report()
    assert "Demo" in text and "gaussian" in text and "central: spent" in text


def test_sqlite_ledger_round_trip(tmp_path):
    path = tmp_path / "b.sqlite"
    acc = PrivacyAccountant(epsilon=2.0, ledger=path)
    acc.spend([lap(0.5), GaussianMechanism(1.0, 1e-6).event(population="local")], source="x")
    again = PrivacyAccountant(epsilon=2.0, ledger=path)
    assert again.events == acc.events
    assert again.events[1].mu == pytest.approx(acc.events[1].mu)
    with pytest.raises(BudgetExceededError):
        again.spend([lap(1.6)])


_KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from skhybrid.accounting import PrivacyAccountant
    from skhybrid.mechanisms import LaplaceMechanism
    acc = PrivacyAccountant(epsilon=10.0, ledger=sys.argv[1])
    acc.spend([LaplaceMechanism(0.25).event()], source="victim")
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_charge_survives_kill_9(tmp_path):
    path = tmp_path / "crash.sqlite"
    proc = subprocess.run([sys.executable, "-c", _KILL_SCRIPT, str(path)], timeout=120)
    assert proc.returncode == -signal.SIGKILL
    events = PrivacyAccountant(ledger=path).events
    assert [(e.source, e.epsilon) for e in events] == [("victim", 0.25)]


_RACE_SCRIPT = textwrap.dedent(
    """
    import sys
    from skhybrid.accounting import BudgetExceededError, PrivacyAccountant
    from skhybrid.mechanisms import LaplaceMechanism
    acc = PrivacyAccountant(epsilon=5.0, ledger=sys.argv[1])
    ok = 0
    for _ in range(40):
        try:
            acc.spend([LaplaceMechanism(0.1).event()])
            ok += 1
        except BudgetExceededError:
            pass
    print(ok)
    """
)


def test_concurrent_processes_cannot_overspend(tmp_path):
    path = str(tmp_path / "race.sqlite")
    PrivacyAccountant(ledger=path)  # create the table first
    procs = [subprocess.Popen([sys.executable, "-c", _RACE_SCRIPT, path], stdout=subprocess.PIPE)
             for _ in range(2)]
    granted = sum(int(p.communicate(timeout=300)[0]) for p in procs)
    assert granted == 50  # 5.0 / 0.1, never more
    assert PrivacyAccountant(ledger=path).spent()[0] <= 5.0 * (1 + 1e-9)
