"""Where an accountant keeps its events: in memory, or in a SQLite file shared by processes."""

import json
import os
import sqlite3
import threading
from contextlib import contextmanager

from ._events import PrivacyEvent

__all__ = ["MemoryLedger", "SQLiteLedger", "DetachedLedgerError", "make_ledger"]


class DetachedLedgerError(RuntimeError):
    """An in-memory ledger was copied into another process (or unpickled): charges made
    there would never reach the original accountant, so it refuses to record them."""


class MemoryLedger:
    """Events in a list guarded by a lock (threads of one process share it safely).

    A pickled copy is *detached*: it can still be read, but refuses to record new
    events, because the charge would be lost when the copy dies (e.g. in a joblib
    worker process). Use :class:`SQLiteLedger` for multi-process work.
    """

    durable = False

    def __init__(self):
        self._events = []
        self._lock = threading.RLock()
        self._detached = False

    def __getstate__(self):
        return {"events": list(self._events)}

    def __setstate__(self, state):
        self._events = state["events"]
        self._lock = threading.RLock()
        self._detached = True

    @contextmanager
    def transaction(self):
        """Hold the ledger while the caller reads its events and appends new ones."""
        with self._lock:
            yield self

    def read(self):
        return list(self._events)

    def append(self, events):
        if self._detached:
            raise DetachedLedgerError(
                "This PrivacyAccountant keeps its ledger in memory and was copied into another "
                f"process or unpickled (pid {os.getpid()}); a charge recorded here would be lost. "
                "Create the accountant with a file ledger, e.g. "
                "PrivacyAccountant(..., ledger='budget.sqlite'), so that every process charges "
                "the same budget, or run the search with n_jobs=1."
            )
        self._events.extend(events)

    def describe(self):
        return "memory"


class SQLiteLedger:
    """Events in a SQLite file; every check-and-charge is one ``BEGIN IMMEDIATE`` transaction.

    ``BEGIN IMMEDIATE`` takes the database's write lock before the events are read, so
    two processes cannot both pass the budget check on the same remaining budget.
    ``synchronous=FULL`` makes a committed charge survive a crash (``kill -9``) of the
    process that made it.
    """

    durable = True

    def __init__(self, path):
        self.path = os.fspath(path)
        with self._connect() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS events ("
                "id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)"
            )

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.path = state["path"]

    def _connect(self):
        con = sqlite3.connect(self.path, timeout=120, isolation_level=None)
        con.execute("PRAGMA synchronous=FULL")
        return con

    @contextmanager
    def transaction(self):
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            self._con = con
            try:
                yield self
            except BaseException:
                con.execute("ROLLBACK")
                raise
            else:
                con.execute("COMMIT")
            finally:
                self._con = None
        finally:
            con.close()

    def read(self):
        con = getattr(self, "_con", None)
        if con is None:
            with self._connect() as own:
                rows = own.execute("SELECT body FROM events ORDER BY id").fetchall()
            own.close()
        else:
            rows = con.execute("SELECT body FROM events ORDER BY id").fetchall()
        return [PrivacyEvent.from_dict(json.loads(body)) for (body,) in rows]

    def append(self, events):
        con = getattr(self, "_con", None)
        if con is None:
            raise RuntimeError("SQLiteLedger.append must be called inside transaction().")
        con.executemany(
            "INSERT INTO events (body) VALUES (?)",
            [(json.dumps(e.to_dict(), default=float),) for e in events],
        )

    def describe(self):
        return f"sqlite:{self.path}"


def make_ledger(ledger):
    """Build a ledger from the accountant's ``ledger`` parameter."""
    if ledger is None or ledger == "memory":
        return MemoryLedger()
    if isinstance(ledger, (MemoryLedger, SQLiteLedger)):
        return ledger
    if isinstance(ledger, (str, os.PathLike)):
        return SQLiteLedger(ledger)
    raise ValueError(
        f"ledger must be None (in memory), a path to a SQLite file, or a ledger object; "
        f"got {ledger!r}."
    )
