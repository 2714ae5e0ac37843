"""One ledger, one budget, one file, no secret shown: what an accountant cannot be made to
do by changing its own state, by a second accountant, by a worker's working directory or by
the ledger URL. Every test runs on the three ledgers where it applies (the PostgreSQL one
on the session's throwaway server, see tests/conftest.py)."""

import os
import pickle
import shutil

import pytest

from skhybrid.accounting import (
    BudgetExceededError,
    LedgerUnavailableError,
    PrivacyAccountant,
)
from skhybrid.accounting._ledger import make_ledger
from skhybrid.accounting._postgres import _parse, _reason
from skhybrid.mechanisms import LaplaceMechanism

SECRET = "Hunter2Secret"


def lap(eps):
    return LaplaceMechanism(eps).event()


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "memory":
        return None
    if request.param == "sqlite":
        return str(tmp_path / "b.sqlite")
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def durable(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "b.sqlite")
    return request.getfixturevalue("pg_url")


def _same_ledger(acc, location):
    """What a second accountant passes to open ``acc``'s ledger."""
    return acc._ledger if location is None else location


# ------------------------------------------------------------------ the stored budget rules


def test_budget_attributes_are_read_only_and_a_charge_checks_the_stored_budget(location):
    acc = PrivacyAccountant(epsilon=1.0, ledger=location)
    acc.spend([lap(0.5)])
    acc.spend([lap(0.5)])
    for name in ("budget_epsilon", "budget_delta", "slack"):
        with pytest.raises(AttributeError):
            setattr(acc, name, 100.0)
    with pytest.raises(BudgetExceededError):
        acc.spend([lap(0.5)])
    # The accountant's own copy altered behind the properties: the charge reads the
    # ledger's budget inside its transaction and refuses, nothing recorded.
    for key in [k for k in vars(acc) if k.endswith("budget_epsilon")]:
        acc.__dict__[key] = 100.0
    assert acc.budget() == (100.0, 1.0)
    with pytest.raises(RuntimeError, match="not the budget stored in its ledger"):
        acc.spend([lap(0.5)])
    with pytest.raises(RuntimeError, match="not the budget stored in its ledger"):
        acc.can_spend([lap(0.5)])
    assert len(acc.events) == 2


def test_a_pickled_copy_cannot_carry_another_budget_to_the_ledger(durable):
    acc = PrivacyAccountant(epsilon=1.0, ledger=durable)
    acc.spend([lap(0.5)])
    state = acc.__getstate__()
    for key in [k for k in state if k.endswith("budget_epsilon")]:
        state[key] = 1e6  # what a worker would receive from a tampered pickle
    copy = PrivacyAccountant.__new__(PrivacyAccountant)
    copy.__setstate__(state)
    for worker in (copy, pickle.loads(pickle.dumps(copy))):
        with pytest.raises(RuntimeError, match="not the budget stored in its ledger"):
            worker.spend([lap(0.5)])
    # An honest copy charges the one budget.
    honest = pickle.loads(pickle.dumps(acc))
    honest.spend([lap(0.5)])
    with pytest.raises(BudgetExceededError):
        honest.spend([lap(0.5)])
    fresh = PrivacyAccountant.from_ledger(durable)
    assert len(fresh.events) == 2 and fresh.spent() == (1.0, 0.0)


def test_slack_is_part_of_the_stored_budget(location, tmp_path, request):
    owner = PrivacyAccountant(epsilon=1.0, ledger=location)
    same = _same_ledger(owner, location)
    # The red team's case: delta budget 1, a second accountant with slack=0.5 would have
    # been granted pure charges up to 8x the budget under a delta = 0.5 "guarantee".
    with pytest.raises(ValueError, match="created for the budget"):
        PrivacyAccountant(ledger=same, slack=0.5)
    owner.spend([lap(1.0)])
    with pytest.raises(BudgetExceededError):
        owner.spend([lap(0.01)])
    assert len(owner.events) == 1

    # A ledger created with a slack: reopening adopts it, another one is refused.
    if location is None:
        other = None
    elif location.startswith("postgresql"):
        other = request.getfixturevalue("postgres_server").url(
            ledger="slack_" + os.urandom(4).hex())
    else:
        other = str(tmp_path / "slack.sqlite")
    tight = PrivacyAccountant(epsilon=1.0, delta=1e-5, slack=1e-6, ledger=other)
    again = _same_ledger(tight, other)
    assert PrivacyAccountant(ledger=again).slack == 1e-6
    for declared in ({"slack": 1e-3}, {"epsilon": 1.0, "delta": 1e-5}):
        with pytest.raises(ValueError, match="created for the budget"):
            PrivacyAccountant(ledger=again, **declared)
    if other is not None:
        assert PrivacyAccountant.from_ledger(other).slack == 1e-6
        with pytest.raises(ValueError, match="created for the budget"):
            PrivacyAccountant.from_ledger(other, slack=0.5)


# ------------------------------------------------------------------ one file, one ledger


def test_a_relative_sqlite_path_is_resolved_when_the_accountant_is_made(tmp_path,
                                                                        monkeypatch):
    project, copy = tmp_path / "project", tmp_path / "project_copy"
    project.mkdir()
    monkeypatch.chdir(project)
    acc = PrivacyAccountant(epsilon=1.0, ledger="budget.sqlite")
    acc.spend([lap(0.5)])
    shutil.copytree(project, copy)  # a synced or copied project directory
    real = os.path.realpath(project / "budget.sqlite")
    assert acc.ledger == f"sqlite:{real}"
    worker = pickle.loads(pickle.dumps(acc))
    monkeypatch.chdir(copy)  # a worker started in the copy charges the real ledger
    worker.spend([lap(0.5)])
    with pytest.raises(BudgetExceededError):
        worker.spend([lap(0.1)])
    assert len(PrivacyAccountant.from_ledger(real).events) == 2
    assert len(PrivacyAccountant.from_ledger(copy / "budget.sqlite").events) == 1


# ------------------------------------------------------------------ no secret shown


@pytest.mark.parametrize("url", [
    f"postgresql://ana:{SECRET}@db:5432/dp?ledger=team",
    f"postgresql://ana@db/dp?password={SECRET}&ledger=team",
    f"postgresql://ana@db/dp?sslpassword={SECRET}&sslmode=require",
    f"postgresql://ana@db/dp?pasword={SECRET}",  # a mistyped key: its value is a secret
    f"postgresql://ana@db/dp?{SECRET}",
    f"postgresql://ana:{SECRET}/x@db/dp",  # an unescaped '/' cuts the netloc short
    f"postgresql://ana@db/dp?sslmode=require#{SECRET}",
])
def test_the_printable_url_keeps_only_allowed_keys(url):
    dsn, name, shown = _parse(url)
    assert SECRET not in shown
    assert shown.startswith("postgresql://") and "ledger=" in shown
    if "sslmode" in url:
        assert "sslmode=require" in shown


def test_allowed_keys_are_shown_and_the_ledger_name_is_matched_in_full():
    shown = _parse("postgresql://ana@db:5433/dp?sslmode=verify-full&connect_timeout=5"
                   "&options=-csearch_path%3Dprivacy&ledger=team")[2]
    assert shown == ("postgresql://ana@db:5433/dp?sslmode=verify-full&connect_timeout=5"
                     "&options=-csearch_path%3Dprivacy&ledger=team")
    for bad in ("team%0A", "team%0D%0A", "te%0Aam"):
        with pytest.raises(ValueError, match=r"ledger name"):
            _parse(f"postgresql://db/dp?ledger={bad}")


@pytest.mark.parametrize("url", [
    f"postgresql://postgres:{SECRET}%zz@127.0.0.1:1/postgres?ledger=d",  # bad %-escape
    f"postgresql://postgres@127.0.0.1:1/postgres?pasword={SECRET}",  # mistyped key
])
def test_libpq_parse_errors_are_not_quoted(url):
    pytest.importorskip("psycopg")
    with pytest.raises(LedgerUnavailableError) as info:
        PrivacyAccountant(epsilon=1.0, ledger=url)
    assert SECRET not in str(info.value) and "could not parse the URL" in str(info.value)


def test_a_driver_message_quoting_a_hidden_value_is_withheld():
    dsn = _parse(f"postgresql://ana:{SECRET}@db/dp?sslpassword=K3y%21pass")[0]
    assert "withheld" not in _reason(OSError("connection refused"), dsn)
    for text in (f'invalid token: "{SECRET}"', "bad key passphrase K3y!pass",
                 "bad key passphrase K3y%21pass"):
        reason = _reason(OSError(text), dsn)
        assert SECRET not in reason and "K3y" not in reason
        assert "not repeated" in reason


def test_reports_and_reprs_of_a_postgres_ledger_hide_every_secret(pg_url):
    url = pg_url.replace("@", f":{SECRET}@") + f"&sslpassword={SECRET}"
    acc = PrivacyAccountant(epsilon=1.0, ledger=url)
    acc.spend([lap(0.5)], source="worker")
    for text in (repr(acc), acc.ledger, acc.report()):
        assert SECRET not in text
    assert "ledger=" in acc.ledger


@pytest.mark.parametrize("location", [
    f"postgresql:/postgres:{SECRET}@127.0.0.1:5432/postgres",  # one slash
    f"postgresql+psycopg://postgres:{SECRET}@127.0.0.1:5432/postgres",  # SQLAlchemy's
    f"postgres//postgres:{SECRET}@db/dp",
])
def test_a_mistyped_url_is_never_echoed(location, capsys, tmp_path, monkeypatch):
    from skhybrid.__main__ import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as info:
        PrivacyAccountant.from_ledger(location)
    assert SECRET not in str(info.value)
    assert main(["budget", location]) == 1
    captured = capsys.readouterr()
    assert SECRET not in captured.err + captured.out and "budget:" in captured.err
    if "://" in location:
        with pytest.raises(ValueError) as info:
            make_ledger(location)
        assert SECRET not in str(info.value)
    assert os.listdir(tmp_path) == []  # nothing created
