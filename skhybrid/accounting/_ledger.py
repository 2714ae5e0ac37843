"""Where an accountant keeps its events: in memory, in a SQLite file shared by the processes
of one host, or in a PostgreSQL database shared by every host (``_postgres.py``).

The ledger interface (what :class:`~skhybrid.accounting.PrivacyAccountant` uses):

- ``transaction()``: a context manager holding the ledger exclusively while the caller
  reads the events and appends new ones (the atomic check-and-spend); an exception inside
  rolls the append back;
- ``read(start=0)`` (inside or outside a transaction): the events from position
  ``start`` on, oldest first. The ledger is append-only and positions are stable (a
  rolled-back append leaves no trace), so the accountant reads only the events it has
  not seen and keeps running composition sums (O(1) per event, however long the
  history); ``append(events)`` (inside a transaction only);
- ``budget()`` / ``bind(budget)``: the budget stored with the ledger, ``None`` when the
  ledger has none yet; ``bind`` stores it (first accountant) or checks it (later ones) and
  raises ``ValueError`` on a mismatch; ``ledger_id`` identifies the ledger. Inside a
  transaction ``budget()`` is read under the lock: every charge is checked against it;
- ``describe()``: a short string for reports;
- pickling: a durable ledger pickles as its location (a worker reopens it); an in-memory
  ledger pickles *detached* and refuses to record, and so does a copy that a ``fork``
  carried into another process without pickling (checked against the creating pid).
"""

import json
import os
import re
import sqlite3
import threading
import uuid
from contextlib import contextmanager

from ._events import PrivacyEvent

__all__ = ["MemoryLedger", "SQLiteLedger", "DetachedLedgerError", "LedgerUnavailableError",
           "make_ledger"]


class DetachedLedgerError(RuntimeError):
    """An in-memory ledger was copied into another process and refuses to record.

    The copy was pickled, or carried by a ``fork``: charges made there would never reach
    the original accountant. Use a durable ledger (a SQLite path) to charge from worker
    processes.
    """


class LedgerUnavailableError(RuntimeError):
    """A database ledger could not be reached, or lost its connection during a charge.

    Raised out of :meth:`~skhybrid.accounting.PrivacyAccountant.spend` before the fit
    runs: no noise is drawn without a committed charge. The message says whether the
    charge may nevertheless have been recorded (a connection lost at ``COMMIT``).
    """


class MemoryLedger:
    """Events in a list guarded by a lock (threads of one process share it safely).

    A pickled copy is *detached*: it can still be read, but refuses to record new
    events, because the charge would be lost when the copy dies (e.g. in a joblib
    worker process). So does the copy a ``fork`` (e.g. a ``ProcessPoolExecutor`` with the
    fork start method) leaves in a child process, which inherits memory without pickling:
    the ledger remembers the pid that created it. Use :class:`SQLiteLedger` for
    multi-process work.
    """

    durable = False

    def __init__(self):
        self._events = []
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._detached = False
        self._budget = None
        self.ledger_id = uuid.uuid4().hex

    def __getstate__(self):
        return {"events": list(self._events), "budget": self._budget,
                "ledger_id": self.ledger_id}

    def __setstate__(self, state):
        self._events = state["events"]
        self._budget = state.get("budget")
        self.ledger_id = state.get("ledger_id", "")
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._detached = True

    @contextmanager
    def transaction(self):
        """Hold the ledger while the caller reads its events and appends new ones."""
        with self._lock:
            yield self

    def read(self, start=0):
        return self._events[start:]

    def append(self, events):
        if self._detached or os.getpid() != self._pid:
            copy = ("this is an unpickled (or deep) copy of it" if self._detached else
                    f"this process ({os.getpid()}) holds the copy that fork carried from "
                    f"process {self._pid}")
            raise DetachedLedgerError(
                f"This PrivacyAccountant keeps its ledger in memory, and {copy}: a charge "
                "recorded here would not reach the original, so it is "
                "refused. Create the accountant with a file ledger, e.g. "
                "PrivacyAccountant(..., ledger='budget.sqlite'), so that every process and "
                "copy charges the same budget, or run the search with n_jobs=1."
            )
        self._events.extend(events)

    def budget(self):
        return self._budget

    def bind(self, budget):
        self._budget = _check_same_budget(self._budget, budget, self.describe())

    def describe(self):
        return "memory"


def _check_same_budget(stored, budget, where):
    if stored is None or stored == budget:
        return budget
    raise ValueError(
        f"The ledger {where} was created for the budget {_show(stored)}, but this "
        f"accountant declares {_show(budget)}. One ledger has one budget: open it with "
        "PrivacyAccountant(ledger=...) and no epsilon/delta/slack to adopt the stored "
        "budget, or use a new ledger for a new budget."
        + ("" if "slack" in stored else
           " (This ledger was written by a development version of skhybrid that did not "
           "store slack with the budget: start a new ledger.)")
    )


def _show(budget):
    return ", ".join(f"{k}={v}" for k, v in sorted(budget.items()))


class SQLiteLedger:
    """Events in a SQLite file; every check-and-charge is one ``BEGIN IMMEDIATE`` transaction.

    ``BEGIN IMMEDIATE`` takes the database's write lock before the events are read, so
    two processes cannot both pass the budget check on the same remaining budget.
    ``synchronous=FULL`` makes a committed charge survive a crash (``kill -9``) of the
    process that made it. Each thread uses its own connection (SQLite connections are not
    shared across threads), so threaded searches charge safely. The budget and a ledger id
    live in a ``meta`` table written by the first accountant.

    SQLite's locking is reliable on a local disk, not on network file systems: for several
    hosts use a database server (see the docs page on running on a cluster).
    """

    durable = True

    def __init__(self, path):
        # Resolved once, here: a pickled copy must reach this very file from a worker
        # whose working directory differs (a relative path would name another file there,
        # e.g. a copy of the project directory holding a copy of the ledger).
        self.path = sqlite_ledger_path(path)
        self._local = threading.local()
        where = _where(path, self.path)
        con = None
        try:
            con = self._connect()
            with con:
                tables = {name for (name,) in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                if tables - _LEDGER_TABLES:
                    # Never add a ledger's tables to someone else's database.
                    raise ValueError(
                        f"ledger={where} is a SQLite database but not a privacy ledger (it "
                        "holds other tables); nothing was written to it. Give the path of a "
                        "new file (e.g. 'budget.sqlite') or of a ledger an accountant wrote.")
                con.execute(
                    "CREATE TABLE IF NOT EXISTS events ("
                    "id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)"
                )
                con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                con.execute("INSERT OR IGNORE INTO meta VALUES ('ledger_id', ?)",
                            (uuid.uuid4().hex,))
                self.ledger_id = con.execute(
                    "SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()[0]
        except sqlite3.Error as exc:  # "file is not a database", a read-only file, ...
            # SQLite's own message names no path and no data: it is kept.
            raise ValueError(
                f"ledger={where}: SQLite cannot use this file as a ledger ({exc}); no "
                "ledger was opened. Give the path of a new file (e.g. 'budget.sqlite') or "
                "of a ledger an accountant wrote, in a directory this process may "
                "write to.") from None
        finally:
            if con is not None:
                con.close()

    def __getstate__(self):
        return {"path": self.path, "ledger_id": self.ledger_id}

    def __setstate__(self, state):
        self.path = state["path"]
        self.ledger_id = state.get("ledger_id")
        self._local = threading.local()

    def _connect(self):
        con = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        con.execute("PRAGMA synchronous=FULL")
        return con

    @contextmanager
    def transaction(self):
        if not os.path.exists(self.path):
            # A copy unpickled on another host (or after the file was deleted): connecting
            # would create an empty file there.
            raise RuntimeError(self._not_this_ledger())
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            self._check_identity(con)
            self._local.con = con
            try:
                yield self
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
            finally:
                self._local.con = None
        finally:
            con.close()

    def _check_identity(self, con):
        """A worker that reopens the path must find the same ledger (not a new file)."""
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
        except sqlite3.OperationalError:  # no meta table: not a ledger file
            row = None
        if self.ledger_id is not None and (row is None or row[0] != self.ledger_id):
            raise RuntimeError(self._not_this_ledger())

    def _not_this_ledger(self):
        return (
            f"The SQLite ledger at {self.path!r} is not the ledger this accountant was "
            "created with (missing on this host, another file, or it was replaced); "
            "refusing to charge. Every process must see the same file on one host's local "
            "disk; for workers on several hosts use a PostgreSQL ledger "
            "(ledger='postgresql://...', see the docs page 'Running on a cluster')."
        )

    def _query(self, sql, args=()):
        con = getattr(self._local, "con", None)
        if con is not None:
            return con.execute(sql, args).fetchall()
        own = self._connect()
        try:
            return own.execute(sql, args).fetchall()
        finally:
            own.close()

    def read(self, start=0):
        rows = self._query("SELECT body FROM events ORDER BY id LIMIT -1 OFFSET ?",
                           (int(start),))
        return [PrivacyEvent.from_dict(json.loads(body)) for (body,) in rows]

    def append(self, events):
        con = getattr(self._local, "con", None)
        if con is None:
            raise RuntimeError("SQLiteLedger.append must be called inside transaction().")
        con.executemany(
            "INSERT INTO events (body) VALUES (?)",
            [(json.dumps(e.to_dict(), default=float),) for e in events],
        )

    def budget(self):
        rows = self._query("SELECT value FROM meta WHERE key = 'budget'")
        return json.loads(rows[0][0]) if rows else None

    def bind(self, budget):
        with self.transaction():
            stored = self.budget()
            _check_same_budget(stored, budget, self.describe())
            if stored is None:
                self._local_con().execute("INSERT INTO meta VALUES ('budget', ?)",
                                          (json.dumps(budget),))

    def _local_con(self):
        return self._local.con

    def describe(self):
        return f"sqlite:{self.path}"


_LEDGER_TABLES = {"events", "meta", "sqlite_sequence"}
_SQLITE_HEADER = b"SQLite format 3\x00"


def _where(given, resolved):
    """How a message names a SQLite ledger path: the resolved path, unless what was given
    looks like a (mistyped) URL, which may hold a password and is never repeated."""
    if looks_like_url(given):
        return "<a location that looks like a URL; not repeated, it may hold a password>"
    return repr(resolved)


def sqlite_ledger_path(path):
    """The absolute path of a SQLite ledger given as ``ledger=``, with ``~`` expanded.

    Raises ``ValueError`` (naming ``ledger=``, the path and the fix) when no ledger can be
    created there: a directory, a missing parent directory, or a new file given as a bare
    name with no suffix and no directory (``ledger="Memory"`` would otherwise create a
    file called ``Memory`` in the working directory). An existing file is opened
    whatever its name.
    """
    given = os.fspath(path)
    given = given if isinstance(given, str) else os.fsdecode(given)
    resolved = os.path.realpath(os.path.expanduser(given))
    where = _where(given, resolved)
    if os.path.isdir(resolved):
        raise ValueError(f"ledger={where} is a directory; give the path of a file in it, "
                         "e.g. os.path.join(directory, 'budget.sqlite').")
    if os.path.isfile(resolved) and os.path.getsize(resolved):
        try:
            with open(resolved, "rb") as file:
                header = file.read(len(_SQLITE_HEADER))
        except OSError as exc:
            raise ValueError(f"ledger={where}: this process cannot read the file "
                             f"({exc.strerror}). Check its permissions.") from None
        if header != _SQLITE_HEADER:
            # SQLite would take a file shorter than its header for an empty database and
            # overwrite it: check the magic string first.
            raise ValueError(f"ledger={where} is not a SQLite file (it exists and holds "
                             "something else); nothing was written to it. Give the path of "
                             "a new file (e.g. 'budget.sqlite') or of a ledger an "
                             "accountant wrote.")
    if not os.path.exists(resolved):
        parent = os.path.dirname(resolved)
        if not os.path.isdir(parent):
            raise ValueError(f"ledger={where}: its directory does not exist, so no ledger "
                             "can be created there (nothing was created). Create the "
                             "directory first (os.makedirs) or give another path.")
        if os.path.basename(given) == given and not os.path.splitext(given)[1]:
            name = (where if looks_like_url(given) else repr(given))
            raise ValueError(
                f"ledger={name} is a bare name with no suffix: it would create a file of "
                "that name in the working directory (nothing was created). For an "
                "in-memory ledger pass ledger=None or ledger='memory'; for a SQLite file "
                "give a name with a suffix (e.g. 'budget.sqlite') or a path with a "
                "directory (e.g. './budget').")
    return resolved


def looks_like_url(ledger):
    """Whether ``ledger`` (a path-like) looks like a URL rather than a file path: it has
    ``scheme:/``, ``://`` or an ``@``. Such a string is never repeated in a message, as it
    may hold a password."""
    text = os.fspath(ledger) if isinstance(ledger, (str, os.PathLike)) else ""
    text = text if isinstance(text, str) else os.fsdecode(text)
    return "://" in text or "@" in text or bool(re.match(r"[A-Za-z][A-Za-z0-9+.-]+:/", text))


def make_ledger(ledger):
    """Build a ledger from the accountant's ``ledger`` parameter.

    ``None`` or ``"memory"``: in memory; a ``postgresql://`` or ``postgres://`` URL: a
    :class:`~skhybrid.accounting._postgres.PostgreSQLLedger`; any other string or path: a
    SQLite file; a ledger object is used as it is.
    """
    from ._postgres import PostgreSQLLedger, is_postgres_url

    if ledger is None or ledger == "memory":
        return MemoryLedger()
    if isinstance(ledger, (MemoryLedger, SQLiteLedger, PostgreSQLLedger)):
        return ledger
    if is_postgres_url(ledger):
        return PostgreSQLLedger(ledger)
    if isinstance(ledger, str) and "://" in ledger:
        # Not a file path (and not echoed: it may hold a password), e.g. SQLAlchemy's
        # postgresql+psycopg:// scheme.
        raise ValueError(
            "ledger looks like a URL but does not start with postgresql:// or postgres:// "
            "(it is not repeated here: it may hold a password). Use a postgresql:// URL "
            "or a file path.")
    if isinstance(ledger, (str, os.PathLike)):
        return SQLiteLedger(ledger)
    raise ValueError(
        f"ledger must be None (in memory), a path to a SQLite file, a postgresql:// URL, "
        f"or a ledger object; got a {type(ledger).__name__}."
    )
