"""PrivacyAccountant: atomic check-and-spend, views, ledgers, durability.

Layer A of docs/notes/auditing.rst.
"""

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
    best_view,
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
    # The check is exact to a relative 2^-52: 2·fl(0.4) + fl(0.2) exceeds 1 by 5.6e-17
    # (the rounding of 0.4 and 0.2) and fits, as does the exact remainder 1 − 2·fl(0.4).
    assert acc.can_spend([lap(acc.remaining()[0])]) and acc.can_spend([lap(0.2)])
    assert not acc.can_spend([lap(0.2 + 2.0**-50)])


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


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "1"])
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
    acc = PrivacyAccountant(epsilon=6.25, ledger=sys.argv[1])
    ok = 0
    for _ in range(40):
        try:
            acc.spend([LaplaceMechanism(0.125).event()])
            ok += 1
        except BudgetExceededError:
            pass
    print(ok)
    """
)


def test_concurrent_processes_cannot_overspend(tmp_path):
    path = str(tmp_path / "race.sqlite")
    PrivacyAccountant(epsilon=6.25, ledger=path)  # create the tables and store the budget
    procs = [subprocess.Popen([sys.executable, "-c", _RACE_SCRIPT, path], stdout=subprocess.PIPE)
             for _ in range(2)]
    granted = sum(int(p.communicate(timeout=300)[0]) for p in procs)
    assert granted == 50  # 6.25 / 0.125, never more
    assert PrivacyAccountant(ledger=path).spent()[0] <= 6.25


# ------------------------------------------------------------ charges cannot be lost


def test_a_population_left_out_of_a_budget_dict_gets_nothing():
    acc = PrivacyAccountant(epsilon={"central": 1.0}, delta={"central": 1e-6})
    assert acc.budget("local") == (0.0, 0.0)
    with pytest.raises(BudgetExceededError):
        acc.spend([lap(0.1, population="local")])
    acc.spend([lap(0.5)])
    assert acc.spent("central") == (0.5, 0.0)


def test_budget_is_stored_in_the_ledger_and_a_different_one_is_refused(tmp_path):
    path = tmp_path / "b.sqlite"
    first = PrivacyAccountant(epsilon=1.0, delta=1e-6, ledger=path)
    first.spend([lap(0.8)])
    # The measured attack: a second accountant with budget 100 on the same file.
    with pytest.raises(ValueError, match="created for the budget"):
        PrivacyAccountant(epsilon=100.0, delta=1e-6, ledger=path)
    adopted = PrivacyAccountant(ledger=path)  # no budget given: the stored one
    assert adopted.budget() == (1.0, 1e-6)
    with pytest.raises(BudgetExceededError):
        adopted.spend([lap(0.3)])
    assert adopted.spent() == (0.8, 0.0)
    assert PrivacyAccountant.from_ledger(path).budget() == (1.0, 1e-6)


def test_from_ledger_refuses_a_missing_path_and_creates_nothing(tmp_path):
    path = tmp_path / "typo.sqlite"
    with pytest.raises(ValueError, match="No ledger at"):
        PrivacyAccountant.from_ledger(path)
    assert not path.exists()


def _spend_in_child(acc):
    acc.spend([lap(0.1)])
    return "spent"


@pytest.mark.skipif(sys.platform == "win32", reason="needs fork")
def test_fork_carried_memory_ledger_refuses_to_spend():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from skhybrid.accounting import DetachedLedgerError

    acc = PrivacyAccountant(epsilon=1.0)
    global _FORK_ACCOUNTANT
    _FORK_ACCOUNTANT = acc  # inherited by fork, never pickled
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        futures = [pool.submit(_spend_inherited) for _ in range(4)]
        for f in futures:
            with pytest.raises(DetachedLedgerError, match="fork"):
                f.result(timeout=60)
    assert acc.events == []  # and nothing was charged silently in a child's copy


_FORK_ACCOUNTANT = None


def _spend_inherited():
    return _spend_in_child(_FORK_ACCOUNTANT)


@pytest.mark.parametrize("where", ["sqlite", "memory"])
def test_threads_share_a_ledger_safely(tmp_path, where):
    from concurrent.futures import ThreadPoolExecutor

    # Measured before per-thread connections: 3 of 200 threaded fits raised RuntimeError.
    ledger = tmp_path / "t.sqlite" if where == "sqlite" else None
    acc = PrivacyAccountant(epsilon=12.5, ledger=ledger)

    def charge(_):
        try:
            acc.spend([lap(0.125)])
            return True
        except BudgetExceededError:
            return False

    with ThreadPoolExecutor(16) as pool:
        granted = sum(pool.map(charge, range(200)))
    assert granted == 100  # exactly 12.5 / 0.125; any other exception would propagate
    assert acc.spent()[0] == 12.5
    assert len(acc.events) == 100


def test_one_rule_for_the_reported_spend():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    X = X / np.linalg.norm(X, axis=1).max()
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    clf = DPLogisticRegression(epsilon=1.0, delta=1e-5, accountant=acc, classes=[0, 1, 2],
                               random_state=0).fit(X, y)
    # Measured before: privacy_spent_ 0.99999999 vs spent() 1.0000051 for this fit.
    assert clf.privacy_spent_["central"] == acc.spent("central") == (1.0, 0.0)
    assert f"epsilon={acc.spent('central')[0]:.4g}" in acc.report()


def _fits():
    from sklearn.datasets import load_breast_cancer, load_wine

    from skhybrid.transfer import NoisySGDClassifier

    Xw, yw = load_wine(return_X_y=True)
    Xw = Xw / np.linalg.norm(Xw, axis=1).max()
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xb = Xb / np.linalg.norm(Xb, axis=1).max()
    yield (DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1, 2], random_state=0),
           Xw, yw, 1e-5)
    yield (DPLogisticRegression(epsilon=0.7, delta=0.5, classes=[0, 1], random_state=0),
           Xb, yb, 0.5)
    yield (NoisySGDClassifier(epsilon=1.0, delta=1e-6, n_steps=300, random_state=0),
           Xb, yb, 1e-6)


@pytest.mark.parametrize("case", range(3))
def test_every_view_of_the_spend_agrees(tmp_path, case, capsys):
    from skhybrid.__main__ import main

    est, X, y, delta = list(_fits())[case]
    path = tmp_path / f"fit{case}.sqlite"
    acc = PrivacyAccountant(epsilon=5.0, delta=delta, ledger=path)
    est.set_params(accountant=acc).fit(X, y)
    spent = acc.spent("central")
    # privacy_spent_, spent(), and the events composed at the budget's δ by the one rule
    assert est.privacy_spent_["central"] == spent
    assert best_view(compose_events(acc.events, delta))[1] == spent
    assert best_view(compose_events(est.privacy_events_, delta))[1] == spent
    line = f"central: spent (epsilon={spent[0]:.4g}, delta={spent[1]:.3g})"
    assert line in acc.report()
    # ... and the command line, reading the ledger from another accountant.
    assert main(["budget", str(path)]) == 0
    out = capsys.readouterr().out
    assert line in out and "budget: central (epsilon=5," in out  # the stored budget
    assert spent[0] <= est.epsilon * (1 + 1e-9) and spent[1] <= delta


def test_budget_cli_refuses_a_missing_ledger_and_creates_nothing(tmp_path, capsys):
    from skhybrid.__main__ import main

    path = tmp_path / "typo.sqlite"
    assert main(["budget", str(path)]) == 1
    assert "No ledger at" in capsys.readouterr().err
    assert not path.exists()


def test_sqlite_ledger_unpickled_where_its_file_is_missing_refuses_and_creates_nothing(
        tmp_path):
    import pickle

    # What a worker on another host sees: the path of a file that is not there.
    path = tmp_path / "b.sqlite"
    acc = PrivacyAccountant(epsilon=1.0, ledger=path)
    state = pickle.dumps(acc)
    path.unlink()
    remote = pickle.loads(state)
    with pytest.raises(RuntimeError, match="not the ledger this accountant was created"):
        remote.spend([lap(0.1)])
    assert not path.exists()
    # a file at that path that is not a ledger (no meta table) is refused too
    import sqlite3

    sqlite3.connect(path).execute("CREATE TABLE other (x)").connection.close()
    with pytest.raises(RuntimeError, match="not the ledger this accountant was created"):
        remote.spend([lap(0.1)])


def test_unpickled_memory_ledger_refuses_and_says_it_is_a_copy():
    import copy
    import pickle

    from skhybrid.accounting import DetachedLedgerError

    acc = PrivacyAccountant(epsilon=5.0)
    for clone_of in (pickle.loads(pickle.dumps(acc)), copy.deepcopy(acc)):
        with pytest.raises(DetachedLedgerError, match="unpickled \\(or deep\\) copy") as info:
            clone_of.spend([PrivacyEvent("x", "pure", 1.0, 0.0)])
        assert "fork" not in str(info.value)  # same process: no fork was involved
    acc.spend([PrivacyEvent("x", "pure", 1.0, 0.0)])  # the original still charges
    assert acc.spent() == (1.0, 0.0)


@pytest.mark.parametrize("budget", [dict(epsilon={"central": 5.0}),
                                    dict(epsilon={"central": 5.0}, delta=0.5),
                                    dict(epsilon=5.0, delta={"central": 0.5})])
def test_a_population_left_out_of_a_budget_dict_cannot_be_spent(budget):
    # Zeroing only its ε left the scalar δ (default 1) open to (0, δ) events on it.
    from skhybrid.accounting import BudgetExceededError

    acc = PrivacyAccountant(**budget)
    assert acc.budget("local") == (0.0, 0.0)
    for event in (PrivacyEvent("x", "approx", 0.0, 0.1, population="local"),
                  PrivacyEvent("x", "pure", 0.1, 0.0, population="local")):
        with pytest.raises(BudgetExceededError):
            acc.spend([event])
    acc.spend([PrivacyEvent("x", "pure", 1.0, 0.0)])  # the named population still spends
    assert acc.spent("local") == (0.0, 0.0)
    assert [e.population for e in acc.events] == ["central"]


def test_an_estimators_events_are_labelled_as_in_the_ledger():
    # red team 3: privacy_events_ had source="" where the ledger named the estimator
    from skhybrid.datasets import make_label_determined_halfspace
    from skhybrid.learners import DPLogisticRegression
    from skhybrid.ppm import PPMHalfspaceClassifier

    X, y, public = make_label_determined_halfspace(300, random_state=0)
    for est in (DPLogisticRegression(classes=[0, 1]), PPMHalfspaceClassifier(private_class=1)):
        acc = PrivacyAccountant(epsilon=5.0)
        est.set_params(accountant=acc).fit(X, y, public_mask=public)
        assert [e.source for e in est.privacy_events_] == [e.source for e in acc.events] \
            == [type(est).__name__] * len(acc.events)
