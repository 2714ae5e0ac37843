"""A SQLite ledger path that cannot hold a ledger is refused with a ``ValueError`` naming
``ledger=``, the path and the fix, before anything is written; ``~`` is expanded."""

import os
import sqlite3
import subprocess
import sys

import pytest

from skhybrid.accounting import PrivacyAccountant
from skhybrid.mechanisms import LaplaceMechanism


def test_tilde_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    acc = PrivacyAccountant(epsilon=1.0, ledger="~/budget.sqlite")
    acc.spend([LaplaceMechanism(0.25).event()])
    assert acc.ledger == f"sqlite:{os.path.realpath(tmp_path / 'budget.sqlite')}"
    assert not os.path.exists("~")
    assert PrivacyAccountant.from_ledger("~/budget.sqlite").spent()[0] == 0.25


def test_missing_directory_is_refused_and_nothing_is_created(tmp_path):
    where = tmp_path / "nodir" / "budget.sqlite"
    with pytest.raises(ValueError, match=r"ledger=.*nodir.*directory does not exist.*makedirs"):
        PrivacyAccountant(epsilon=1.0, ledger=where)
    assert not (tmp_path / "nodir").exists()


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"ledger=.* is a directory"):
        PrivacyAccountant(epsilon=1.0, ledger=tmp_path)


@pytest.mark.parametrize("text", ["x", "not a database\n", "y" * 5000])
def test_a_file_that_is_not_sqlite_is_refused_and_left_unchanged(text, tmp_path):
    # SQLite itself would take a file shorter than its header for an empty database and
    # overwrite it.
    where = tmp_path / "notes.txt"
    where.write_text(text)
    with pytest.raises(ValueError, match=r"ledger='.*notes\.txt' is not a SQLite"):
        PrivacyAccountant(epsilon=1.0, ledger=where)
    with pytest.raises(ValueError, match="ledger="):
        PrivacyAccountant.from_ledger(where)
    assert where.read_text() == text


def test_another_sqlite_database_is_refused_and_left_unchanged(tmp_path):
    where = tmp_path / "app.db"
    con = sqlite3.connect(where)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match=r"ledger=.*app\.db.* not a privacy ledger"):
        PrivacyAccountant(epsilon=1.0, ledger=where)
    con = sqlite3.connect(where)
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    assert tables == {"users"}


@pytest.mark.parametrize("name", ["Memory", "MEMORY", ":memory:", "budget"])
def test_a_new_bare_name_without_suffix_is_refused(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"bare name with no suffix.*ledger=None or "
                                         r"ledger='memory'"):
        PrivacyAccountant(epsilon=1.0, ledger=name)
    assert os.listdir(tmp_path) == []


def test_a_bare_name_with_a_suffix_or_a_directory_or_that_exists_is_accepted(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    PrivacyAccountant(epsilon=1.0, ledger="budget.sqlite")
    PrivacyAccountant(epsilon=1.0, ledger="./budget")
    reopened = PrivacyAccountant(ledger="budget")  # exists now: opened whatever its name
    assert reopened.budget_epsilon == {"central": 1.0, "local": 1.0}
    assert sorted(os.listdir(tmp_path)) == ["budget", "budget.sqlite"]


def test_a_url_like_path_is_not_repeated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for location in ("dp:Hunter2@db", "dp:Hunter2@db/budget.sqlite"):
        with pytest.raises(ValueError) as info:
            PrivacyAccountant(epsilon=1.0, ledger=location)
        assert "Hunter2" not in str(info.value) and "ledger=" in str(info.value)


def test_cli_budget_names_the_path_of_a_non_ledger(tmp_path):
    where = tmp_path / "notes.txt"
    where.write_text("x")
    run = subprocess.run([sys.executable, "-m", "skhybrid", "budget", str(where)],
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(
                             os.path.dirname(os.path.abspath(__file__))))})
    assert run.returncode == 1
    assert "ledger=" in run.stderr and "notes.txt" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
