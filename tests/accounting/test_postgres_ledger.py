"""The PostgreSQL ledger against a real server started by the test session.

The same guarantees as the SQLite ledger: atomic check-and-spend across processes, the
budget and a ledger id in the database, durability, and failing closed when the server
cannot be reached. Searches over process workers charging it: tests/test_cluster.py.
"""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sklearn.datasets import make_classification

from skhybrid.accounting import (
    BudgetExceededError,
    LedgerUnavailableError,
    PrivacyAccountant,
)
from skhybrid.accounting._ledger import make_ledger
from skhybrid.accounting._postgres import PostgreSQLLedger, _parse
from skhybrid.learners import DPLogisticRegression
from skhybrid.mechanisms import LaplaceMechanism
from skhybrid.mechanisms._noise import record_noise

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Child processes import this checkout's skhybrid, whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


def lap(eps):
    return LaplaceMechanism(eps).event()


def _admin(url):
    import psycopg

    return psycopg.connect(_parse(url)[0], autocommit=True)


def _stored(url):
    """(n_events in the ledger row, number of event rows, their positions) read directly."""
    name = _parse(url)[1]
    with _admin(url) as con:
        n = con.execute("SELECT n_events FROM skhybrid_ledger WHERE name = %s",
                        (name,)).fetchone()[0]
        pos = [p for (p,) in con.execute(
            "SELECT pos FROM skhybrid_ledger_event WHERE ledger = %s ORDER BY pos", (name,))]
    return n, pos


def _data(n=90, seed=0):
    return make_classification(n_samples=n, n_features=4, random_state=seed)


# ------------------------------------------------------------------ without a server


def test_url_selects_the_backend_and_the_password_is_never_shown():
    dsn, name, shown = _parse("postgres://ana:s3cret@db.example:5433/dp?ledger=team&sslmode=require")
    assert name == "team" and "s3cret" not in shown and "ledger=team" in shown
    assert shown.startswith("postgres://ana@db.example:5433/dp?")
    assert "ledger=" not in dsn and "sslmode=require" in dsn and "s3cret" in dsn
    assert _parse("postgresql://db/dp")[1] == "default"
    assert "hidden" not in _parse("postgresql://ana@db/dp?password=hidden")[2]
    with pytest.raises(ValueError, match=r"ledger name .*\?ledger="):
        _parse("postgresql://db/dp?ledger=a;drop")


def test_missing_psycopg_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # makes `import psycopg` fail
    with pytest.raises(ImportError, match=r"skhybrid\[cluster\]"):
        make_ledger("postgresql://nobody@127.0.0.1:1/none")


# ------------------------------------------------------------------ with a server


def test_round_trip_budget_stored_and_mismatch_refused(pg_url):
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6, ledger=pg_url)
    assert isinstance(acc._ledger, PostgreSQLLedger) and acc.ledger == pg_url
    acc.spend([lap(0.5)], source="first")
    again = PrivacyAccountant(ledger=pg_url)  # no budget given: the stored one
    assert again.budget() == (1.0, 1e-6)
    assert [(e.source, e.epsilon) for e in again.events] == [("first", 0.5)]
    with pytest.raises(ValueError, match="created for the budget"):
        PrivacyAccountant(epsilon=100.0, delta=1e-6, ledger=pg_url)
    with pytest.raises(BudgetExceededError):
        again.spend([lap(0.6)])
    again.spend([lap(0.5)])
    assert acc.spent() == (1.0, 0.0) and _stored(pg_url) == (2, [0, 1])
    assert PrivacyAccountant.from_ledger(pg_url).budget() == (1.0, 1e-6)


def test_from_ledger_refuses_a_missing_ledger_and_creates_nothing(pg_url):
    PrivacyAccountant(epsilon=1.0, ledger=pg_url)  # the tables exist; this name does not:
    missing = pg_url + "_typo"
    with pytest.raises(ValueError, match="No ledger named"):
        PrivacyAccountant.from_ledger(missing)
    with _admin(pg_url) as con:
        assert con.execute("SELECT count(*) FROM skhybrid_ledger WHERE name = %s",
                           (_parse(missing)[1],)).fetchone()[0] == 0


def test_pickles_as_url_and_id_and_a_foreign_ledger_is_refused(pg_url):
    acc = PrivacyAccountant(epsilon=1.0, ledger=pg_url)
    assert acc._ledger.__getstate__() == {"url": pg_url, "ledger_id": acc._ledger.ledger_id,
                                          "server_id": acc._ledger.server_id}
    copy = pickle.loads(pickle.dumps(acc))
    copy.spend([lap(0.25)])
    assert len(acc.events) == 1
    # A copy whose URL reaches another ledger (another server seen from the worker's host,
    # or the ledger dropped and recreated) must not charge it.
    other = pickle.loads(pickle.dumps(acc))
    other._ledger.ledger_id = "not-this-ledger"
    with pytest.raises(RuntimeError, match="not the ledger this accountant was created with"):
        other.spend([lap(0.25)])
    assert len(acc.events) == 1


_HAMMER = textwrap.dedent(
    """
    import multiprocessing, sys
    from skhybrid.accounting import BudgetExceededError, PrivacyAccountant
    from skhybrid.mechanisms import LaplaceMechanism

    def hammer(acc, barrier, out):
        barrier.wait()
        granted = refused = 0
        try:
            for _ in range(20):
                try:
                    acc.spend([LaplaceMechanism(0.125).event()], source="hammer")
                    granted += 1
                except BudgetExceededError:
                    refused += 1
        except Exception as exc:  # reported, so that the parent does not wait forever
            out.put(repr(exc))
            raise
        out.put((granted, refused))

    if __name__ == "__main__":
        # The parent's connection is open and cached before the fork: the children must
        # open their own and leave the parent's alone.
        acc = PrivacyAccountant(epsilon=6.25, ledger=sys.argv[1])
        ctx = multiprocessing.get_context("fork")
        barrier, out = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=hammer, args=(acc, barrier, out)) for _ in range(8)]
        for p in procs:
            p.start()
        results = [out.get(timeout=100) for _ in procs]
        for p in procs:
            p.join()
        errors = [r for r in results if isinstance(r, str)]
        if errors or any(p.exitcode != 0 for p in procs):
            sys.exit(f"a child failed: {errors}")
        try:
            acc.spend([LaplaceMechanism(0.125).event()])  # the parent's connection still works
            print("overspent")
        except BudgetExceededError:
            pass
        print(sum(g for g, _ in results), sum(r for _, r in results))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="needs fork")
def test_eight_processes_never_overspend_and_lose_nothing(pg_url, tmp_path):
    script = tmp_path / "hammer.py"
    script.write_text(_HAMMER)
    proc = subprocess.run([sys.executable, str(script), pg_url], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env=ENV)
    assert proc.returncode == 0, proc.stderr
    granted, refused = map(int, proc.stdout.split())
    assert (granted, refused) == (50, 8 * 20 - 50)  # exactly 6.25 / 0.125, never more
    acc = PrivacyAccountant(ledger=pg_url)
    assert len(acc.events) == 50 and acc.spent()[0] <= 6.25
    assert _stored(pg_url) == (50, list(range(50)))  # no lost and no duplicate position


_HOLD = textwrap.dedent(
    """
    import os, signal, sys, time
    from skhybrid.accounting import LedgerUnavailableError, PrivacyAccountant, _postgres
    from skhybrid.mechanisms import LaplaceMechanism
    _postgres._IDLE_IN_TRANSACTION_TIMEOUT = "1s"  # 60 s in production
    acc = PrivacyAccountant(epsilon=10.0, ledger=sys.argv[1])
    acc.spend([LaplaceMechanism(0.25).event()], source="committed")
    try:
        with acc._ledger.transaction() as ledger:  # a charge caught half-way
            ledger.read()
            ledger.append([LaplaceMechanism(0.5).event()])
            print("inside", flush=True)
            if sys.argv[2] == "freeze":
                os.kill(os.getpid(), signal.SIGSTOP)  # the host freezes ... and wakes up
            else:
                time.sleep(300)
    except LedgerUnavailableError:
        print("refused", flush=True)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("how", ["kill -9", "freeze"])
def test_a_worker_dying_or_freezing_mid_charge_keeps_committed_charges_and_frees_the_ledger(
        pg_url, how):
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, pg_url, how.split()[0]],
                            stdout=subprocess.PIPE, text=True, cwd=REPO, env=ENV)
    try:
        assert proc.stdout.readline().strip() == "inside"
        assert _stored(pg_url) == (1, [0])  # the half-made charge is invisible
        if how == "kill -9":
            proc.kill()
            proc.wait(timeout=60)
        acc = PrivacyAccountant(ledger=pg_url)
        # The server rolled the dead (or silent) session back and released its lock: this
        # spend goes through (a generous deadline instead of hanging if it never does).
        pool = ThreadPoolExecutor(1)
        try:
            pool.submit(acc.spend, [lap(1.0)], source="after").result(timeout=90)
        finally:
            pool.shutdown(wait=False)  # a stuck spend ends when the child is killed below
        if how == "freeze":
            proc.send_signal(signal.SIGCONT)
            # the woken worker cannot commit its charge: it fails closed
            assert proc.stdout.readline().strip() == "refused"
            assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert [(e.source, e.epsilon) for e in acc.events] == [("committed", 0.25), ("after", 1.0)]
    assert _stored(pg_url) == (2, [0, 1])


_SEARCH = textwrap.dedent(
    """
    import sys
    from sklearn.datasets import make_classification
    from sklearn.model_selection import GridSearchCV
    from skhybrid.accounting import PrivacyAccountant
    from skhybrid.learners import DPLogisticRegression
    X, y = make_classification(n_samples=90, n_features=4, random_state=0)
    acc = PrivacyAccountant(epsilon=1000.0, ledger=sys.argv[1])
    clf = DPLogisticRegression(epsilon=0.5, accountant=acc, random_state=0)
    GridSearchCV(clf, {"C": [0.01 * (i + 1) for i in range(400)]}, cv=3).fit(X, y)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_kill_9_mid_search_loses_no_charge(pg_url):
    proc = subprocess.Popen([sys.executable, "-c", _SEARCH, pg_url], cwd=REPO, env=ENV)
    seen = 0
    try:
        deadline = time.monotonic() + 120
        while seen < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            try:
                seen = _stored(pg_url)[0]
            except Exception:  # noqa: BLE001 - the ledger is not created yet
                seen = 0
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        proc.kill()
    assert seen >= 5
    n, pos = _stored(pg_url)
    assert n >= seen and pos == list(range(n))  # every charge seen committed is still there
    acc = PrivacyAccountant(ledger=pg_url)
    assert acc.spent()[0] == pytest.approx(0.5 * n)
    acc.spend([lap(1.0)])  # and the ledger is usable
    assert _stored(pg_url) == (n + 1, list(range(n + 1)))


def test_server_crash_keeps_history_and_a_stopped_server_fails_closed(pg_url, postgres_server):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=10.0, ledger=pg_url)
    acc.spend([lap(0.5)], source="before crash")
    postgres_server.restart(mode="immediate")  # a crash: recovery replays the WAL
    assert [e.source for e in PrivacyAccountant.from_ledger(pg_url).events] == ["before crash"]
    acc.spend([lap(0.5)], source="after restart")  # its stale connection is replaced
    postgres_server.pause()
    try:
        clf = DPLogisticRegression(epsilon=1.0, accountant=acc, random_state=0)
        with record_noise() as draws, pytest.raises(LedgerUnavailableError,
                                                    match="Nothing was charged"):
            clf.fit(X, y)
        assert draws == [] and not hasattr(clf, "coef_")
    finally:
        postgres_server.resume()
    clf.fit(X, y)
    assert [e.source for e in acc.events] == ["before crash", "after restart",
                                              "DPLogisticRegression"]


@pytest.mark.parametrize("when", ["before the insert", "at commit"])
def test_connection_lost_during_a_charge_fails_closed(pg_url, monkeypatch, when):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=10.0, ledger=pg_url)
    acc.spend([lap(0.5)], source="earlier")
    ledger = acc._ledger
    real_append = PostgreSQLLedger.append

    def terminate_own_session():
        with _admin(pg_url) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)",
                          (ledger._local.tx[0].info.backend_pid,))

    def append(self, events):
        if when == "before the insert":
            terminate_own_session()
        real_append(self, events)
        if when == "at commit":
            terminate_own_session()

    monkeypatch.setattr(PostgreSQLLedger, "append", append)
    clf = DPLogisticRegression(epsilon=1.0, accountant=acc, random_state=0)
    with record_noise() as draws, pytest.raises(LedgerUnavailableError) as info:
        clf.fit(X, y)
    assert draws == [] and not hasattr(clf, "coef_")
    if when == "at commit":
        assert "may or may not have been recorded" in str(info.value)
    monkeypatch.setattr(PostgreSQLLedger, "append", real_append)
    # The server rolled the charge back; the ledger stays consistent and usable.
    assert [e.source for e in acc.events] == ["earlier"]
    clf.fit(X, y)
    assert _stored(pg_url) == (2, [0, 1])


def test_threads_share_a_postgres_ledger_safely(pg_url):
    from concurrent.futures import ThreadPoolExecutor

    acc = PrivacyAccountant(epsilon=3.75, ledger=pg_url)

    def charge(_):
        try:
            acc.spend([lap(0.125)])
            return True
        except BudgetExceededError:
            return False

    with ThreadPoolExecutor(8) as pool:
        granted = sum(pool.map(charge, range(40)))
    assert granted == 30 and len(acc.events) == 30
    assert acc.spent()[0] == 3.75


def test_budget_cli_reads_a_postgres_ledger(pg_url, capsys):
    from skhybrid.__main__ import main

    PrivacyAccountant(epsilon=2.0, ledger=pg_url).spend([lap(0.5)], source="cli")
    assert main(["budget", pg_url]) == 0
    out = capsys.readouterr().out
    assert "cli" in out and "spent (epsilon=0.5" in out
    assert main(["budget", pg_url + "_typo"]) == 1
    assert "No ledger named" in capsys.readouterr().err


def test_a_role_with_the_documented_grants_can_charge_and_no_more(postgres_server):
    """The docs' set-up: an administrator creates the tables; the workers' role has
    SELECT, INSERT, UPDATE on the ledger table and SELECT, INSERT on the events."""
    from skhybrid.accounting._postgres import SCHEMA_SQL

    import psycopg

    schema = "s_" + os.urandom(4).hex()
    admin_url = postgres_server.url()
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f"CREATE ROLE {schema} LOGIN")
        con.execute(f"CREATE SCHEMA {schema}")
        con.execute(f"SET search_path = {schema}")
        con.execute(SCHEMA_SQL)
        con.execute(f"GRANT USAGE ON SCHEMA {schema} TO {schema}")
        con.execute(f"GRANT SELECT, INSERT, UPDATE ON skhybrid_ledger TO {schema}")
        con.execute(f"GRANT SELECT, INSERT ON skhybrid_ledger_event TO {schema}")
    url = (f"postgresql://{schema}@127.0.0.1:{postgres_server.port}/postgres"
           f"?options=-csearch_path%3D{schema}&ledger=team")
    acc = PrivacyAccountant(epsilon=1.0, ledger=url)
    acc.spend([lap(0.4)], source="worker")
    assert [e.source for e in PrivacyAccountant.from_ledger(url).events] == ["worker"]
    with psycopg.connect(_parse(url)[0]) as con, pytest.raises(
            psycopg.errors.InsufficientPrivilege):
        con.execute("DELETE FROM skhybrid_ledger_event")  # no budget handed back
    # Without the grants: a clear error, nothing charged.
    with psycopg.connect(admin_url, autocommit=True) as con:
        con.execute(f"REVOKE UPDATE ON {schema}.skhybrid_ledger FROM {schema}")
    with pytest.raises(LedgerUnavailableError, match="may not"):
        acc.spend([lap(0.4)])
    assert len(acc.events) == 1


def test_every_charge_commits_synchronously_whatever_the_url_says(pg_url, monkeypatch):
    """``synchronous_commit = off`` (here from the URL; a role or database setting or the
    server default does the same) would let a crash forget charges whose spend returned:
    each charge's transaction sets it back on for itself."""
    import psycopg

    url = pg_url + "&options=-csynchronous_commit%3Doff"
    acc = PrivacyAccountant(epsilon=10.0, ledger=url)
    seen = []
    real_append = PostgreSQLLedger.append

    def append(self, events):
        seen.append(self._local.tx[0].execute("SHOW synchronous_commit").fetchone()[0])
        real_append(self, events)

    monkeypatch.setattr(PostgreSQLLedger, "append", append)
    acc.spend([lap(0.5)])
    acc.spend([lap(0.5)])
    assert seen == ["on", "on"]
    with psycopg.connect(_parse(url)[0]) as con:  # the URL's option does take effect
        assert con.execute("SHOW synchronous_commit").fetchone()[0] == "off"


def test_a_copy_of_the_ledger_elsewhere_is_refused(pg_url):
    """The ledger id alone passes on every copy of the ledger; the identity pinned at open
    (cluster, database, table) does not: here a copy of the tables in another schema, and a
    cluster with another system identifier (a restored dump on another server)."""
    acc = PrivacyAccountant(epsilon=1.0, ledger=pg_url)
    acc.spend([lap(0.5)])
    schema = "copy_" + os.urandom(4).hex()
    with _admin(pg_url) as con:
        con.execute(f"CREATE SCHEMA {schema}")
        for table in ("skhybrid_ledger", "skhybrid_ledger_event"):
            con.execute(f"CREATE TABLE {schema}.{table} AS SELECT * FROM public.{table}")
    elsewhere = pickle.loads(pickle.dumps(acc))
    elsewhere._ledger.__setstate__({**acc._ledger.__getstate__(),
                                    "url": pg_url + f"&options=-csearch_path%3D{schema}"})
    assert elsewhere._ledger.ledger_id == acc._ledger.ledger_id
    with pytest.raises(RuntimeError, match="not the ledger this accountant was created with"):
        elsewhere.spend([lap(0.5)])
    cluster, rest = acc._ledger.server_id.split(":", 1)
    other = pickle.loads(pickle.dumps(acc))
    other._ledger.server_id = f"{int(cluster) + 1}:{rest}"
    with pytest.raises(RuntimeError, match="not the ledger this accountant was created with"):
        other.spend([lap(0.5)])
    pickle.loads(pickle.dumps(acc)).spend([lap(0.5)])  # the real ledger, from a copy
    assert _stored(pg_url) == (2, [0, 1])
    with _admin(pg_url) as con:  # the copy took no charge
        assert con.execute(f"SELECT count(*) FROM {schema}.skhybrid_ledger_event WHERE "
                           "ledger = %s", (_parse(pg_url)[1],)).fetchone()[0] == 1
