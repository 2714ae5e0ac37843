"""A privacy ledger in a PostgreSQL database, shared by every process on every host.

The same interface and guarantees as :class:`~skhybrid.accounting._ledger.SQLiteLedger`
(see that module's docstring), for a team whose searches run on a cluster. It needs
psycopg 3 (``pip install "skhybrid[cluster]"``), imported only when a PostgreSQL ledger
is opened.

Storage: two tables in the connection's schema (the first of its ``search_path``),
created on first use when the role may create tables::

    skhybrid_ledger        one row per ledger: name, ledger_id, budget, n_events
    skhybrid_ledger_event  (ledger, pos) -> the event as JSON text, append-only

Several ledgers share one database by name (``?ledger=<name>`` in the URL; default
``default``). The budget and a random ledger id live in the ledger's row.
"""

import json
import os
import re
import threading
import uuid
from contextlib import contextmanager
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urlsplit, urlunsplit

from ._events import PrivacyEvent
from ._ledger import LedgerUnavailableError, _check_same_budget

__all__ = ["PostgreSQLLedger", "is_postgres_url"]

_SCHEMES = ("postgresql://", "postgres://")
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,128}")  # used with fullmatch (no trailing newline)
# Arbitrary constant key of the advisory lock that serialises table creation.
_SCHEMA_LOCK_KEY = 0x736B6879
# A session that holds a ledger lock and stops talking (its host froze, the network
# split) is ended by the server after this long, which releases the lock.
_IDLE_IN_TRANSACTION_TIMEOUT = "60s"
# Defaults for connection parameters the URL does not set.
_CONNECT_DEFAULTS = {"connect_timeout": "10", "keepalives": "1", "keepalives_idle": "30",
                     "keepalives_interval": "10", "keepalives_count": "3",
                     "application_name": "skhybrid-ledger"}
# The only libpq parameters whose values reports and messages show: none is a secret. Any
# other key (password, sslpassword, a mistyped name) is left out of the printable URL.
_SHOWN_KEYS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "sslmode", "sslrootcert", "sslcert",
    "sslkey", "sslcrl", "sslcrldir", "sslsni", "sslcompression", "requiressl",
    "ssl_min_protocol_version", "ssl_max_protocol_version", "gssencmode", "channel_binding",
    "require_auth", "target_session_attrs", "load_balance_hosts", "application_name",
    "fallback_application_name", "connect_timeout", "client_encoding", "options",
    "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
    "tcp_user_timeout", "service", "krbsrvname", "gsslib", "gssdelegation"})
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._%-]*)(:[0-9]*)?")
# Which cluster, database and table the ledger's row lives in: a copy of the ledger (a
# dump restored on another cluster, a CREATE DATABASE ... TEMPLATE copy, the tables copied
# into another schema) has the same ledger id but another identity. pg_control_system()
# is executable by every role; it reads a file, so the cluster and database part is read
# once per connection (a connection never changes either), the table's OID every charge.
_CLUSTER_SQL = ("SELECT (SELECT system_identifier FROM pg_control_system())::text || ':' || "
                "(SELECT oid FROM pg_database WHERE datname = current_database())::text")
_TABLE_SQL = "'skhybrid_ledger'::regclass::oid::text"

SCHEMA_SQL = """\
CREATE TABLE IF NOT EXISTS skhybrid_ledger (
    name      text PRIMARY KEY,
    ledger_id text NOT NULL,
    budget    text,
    n_events  bigint NOT NULL DEFAULT 0,
    created   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS skhybrid_ledger_event (
    ledger    text NOT NULL REFERENCES skhybrid_ledger (name),
    pos       bigint NOT NULL,
    body      text NOT NULL,
    recorded  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (ledger, pos)
);
"""


def is_postgres_url(ledger):
    """Whether ``ledger`` is a ``postgresql://`` (or ``postgres://``) URL."""
    return isinstance(ledger, str) and ledger.startswith(_SCHEMES)


def _psycopg():
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            "A PostgreSQL ledger needs psycopg 3, which is not installed: "
            "pip install \"skhybrid[cluster]\" (or pip install \"psycopg[binary]\")."
        ) from exc
    return psycopg


# ------------------------------------------------------------------ connections
# Each thread of each process keeps its own idle connections per DSN (a libpq connection
# must not be used by two threads at once, nor by a process that inherited it from fork:
# both would interleave messages on one socket). A forked child never touches, and never
# closes, the connections it inherited: closing them would end the parent's sessions.

_LOCAL = threading.local()
_INHERITED = []  # connections a fork carried into this process: kept, never used


class _Idle:
    """The idle connections of one thread, closed when the thread ends."""

    def __init__(self):
        self.pid = os.getpid()
        self.by_dsn = {}

    def __del__(self):
        if self.pid != os.getpid():
            return
        for cons in self.by_dsn.values():
            for con in cons:
                try:
                    con.close()
                except Exception:  # noqa: BLE001 - closing at thread exit is best effort
                    pass


def _idle(dsn):
    pool = getattr(_LOCAL, "pool", None)
    if pool is None or pool.pid != os.getpid():
        if pool is not None:
            for cons in pool.by_dsn.values():
                _INHERITED.extend(cons)
            pool.by_dsn = {}
        pool = _LOCAL.pool = _Idle()
    return pool.by_dsn.setdefault(dsn, [])


def _checkout(dsn, where):
    psycopg = _psycopg()
    idle = _idle(dsn)
    while idle:
        con = idle.pop()
        if not con.closed and not con.broken and (
                con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE):
            return con
        _discard(con)
    try:
        con = psycopg.connect(dsn, autocommit=True)
        con.execute("SET idle_in_transaction_session_timeout = "
                    f"'{_IDLE_IN_TRANSACTION_TIMEOUT}'")
    except psycopg.Error as exc:
        reason = ("libpq could not parse the URL (a mistyped parameter name or a bad "
                  "%-escape; its message is not repeated, as it quotes the URL)"
                  if isinstance(exc, psycopg.ProgrammingError) else _reason(exc, dsn))
        raise LedgerUnavailableError(
            f"Cannot reach the PostgreSQL ledger {where}: {reason}. Nothing was "
            "charged and nothing was computed. Check that the server is up and that this "
            "host may connect (URL, role, password in ~/.pgpass or PGPASSWORD)."
        ) from exc
    return con


def _server_id(con, table_oid):
    """``cluster:database:table`` for a connection, the first two cached on it."""
    cluster = getattr(con, "_skhybrid_cluster", None)
    if cluster is None:
        cluster = con._skhybrid_cluster = con.execute(_CLUSTER_SQL).fetchone()[0]
    return f"{cluster}:{table_oid}"


def _checkin(dsn, con):
    psycopg = _psycopg()
    idle = _idle(dsn)
    if (not con.closed and not con.broken and len(idle) < 2
            and con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE):
        idle.append(con)
    else:
        _discard(con)


def _discard(con):
    try:
        con.close()
    except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone
        pass


def _no_rights(where, exc):
    return LedgerUnavailableError(
        f"The role in {where} may not create or use the ledger tables ({_reason(exc)}). "
        "Nothing was charged and nothing computed. Have an administrator create them (the "
        "SQL is in skhybrid.accounting._postgres.SCHEMA_SQL and on the docs page 'Running on "
        "a cluster') and grant SELECT, INSERT, UPDATE on skhybrid_ledger and SELECT, INSERT "
        "on skhybrid_ledger_event to this role."
    )


def _reason(exc, dsn=None):
    """The first line of a driver error; withheld when it quotes a secret of ``dsn``."""
    text = str(exc).strip().splitlines()
    text = text[0] if text else type(exc).__name__
    if dsn is not None and any(secret in text for secret in _secrets(dsn)):
        return (f"{type(exc).__name__} (the driver's message is not repeated: it quotes a "
                "part of the URL that is not shown)")
    return text


def _secrets(dsn):
    """Every value of ``dsn`` that a printable URL leaves out (the password, the values
    of keys outside ``_SHOWN_KEYS``), raw and decoded."""
    parts = urlsplit(dsn)
    found = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        if unquote_plus(key) not in _SHOWN_KEYS:
            found += [key, value]
    return {t for raw in found for t in (raw, unquote(raw), unquote_plus(raw)) if t}


class PostgreSQLLedger:
    """Events in a PostgreSQL database; every check-and-charge locks the ledger's row.

    Parameters
    ----------
    url : str
        ``postgresql://[user[:password]@]host[:port]/dbname[?ledger=name&...]``
        (``postgres://`` too). ``ledger`` names the ledger inside the database (default
        ``"default"``; letters, digits and ``_.:-``); the other query parameters go to
        libpq (``sslmode``, ``options=-csearch_path%3Dmyschema``, ...). Keep passwords
        out of the URL (it travels with every pickled accountant): use ``~/.pgpass``,
        ``PGPASSWORD`` or a service file on each host.
    create : bool, default=True
        Create the tables and the ledger's row when missing. ``False`` (used by
        :meth:`PrivacyAccountant.from_ledger`) raises ``ValueError`` instead and
        creates nothing.

    Notes
    -----
    **Atomic check-and-spend.** A charge is one ``READ COMMITTED`` transaction that
    first takes the row lock of the ledger's row in ``skhybrid_ledger``
    (``SELECT ... FOR UPDATE``), then reads the events it has not seen, checks the
    budget, inserts the new events at the next positions and advances ``n_events``,
    and commits. Every writer takes that lock first, so two writers on any hosts never
    pass the check on the same remaining budget; the lock is released by the commit,
    by a rollback, or by the server when the session dies (a client killed with
    ``kill -9``, a session ended after 60 s idle inside a transaction). Why a row lock
    rather than the alternatives: ``SERIALIZABLE`` would give the same result but
    abort one of two racing charges, which would then need a retry loop in every
    client; an advisory lock needs an integer key per ledger (hash collisions between
    ledger names) and is invisible in the table it protects; the row lock serialises
    exactly the charges of one ledger, leaves other ledgers in the database
    independent, and under ``READ COMMITTED`` each statement after the lock sees every
    charge committed before it.

    **Fails closed.** An error reaching the server before or during a charge (server
    down, connection lost, session terminated) raises
    :class:`~skhybrid.accounting.LedgerUnavailableError` out of
    :meth:`PrivacyAccountant.spend`, so the fit does not run and no noise is drawn. A
    connection lost at ``COMMIT`` leaves the outcome unknown to the client: the charge
    may have been recorded (the error says so; the ledger shows it) — the accountant
    may then hold a charge for a fit that never ran, never the reverse. A stale
    connection found at the start of a charge (e.g. after a server restart) is replaced
    once, since nothing has been written yet.

    **Durable.** Every charge's transaction sets ``synchronous_commit = on`` for itself
    (``SET LOCAL``; a stronger ``remote_apply`` is kept), whatever the URL's
    ``options``, the role, the database or the server default say: a charge that has
    returned is flushed to disk (and to the synchronous standbys) before ``spend``
    returns. The server's ``fsync`` must stay on.

    **Processes and threads.** The ledger pickles as its URL, its ledger id and the
    identity of where it was opened: the cluster's ``system_identifier``, the
    database's OID and the ledger table's OID. A worker reconnects, and every charge
    checks that the row it locks carries that id and sits in that table of that
    database of that cluster. A recreated ledger, another database, or a copy of the
    ledger (a dump restored on another server, a ``CREATE DATABASE ... TEMPLATE`` copy,
    the tables copied into another schema) is refused. What passes is the same cluster
    seen through another address, and a physical replica of it promoted after a failover
    (it shares the identifier: with asynchronous replication the charges it had not
    received are lost, see the docs page "Running on a cluster"). Each thread of each
    process uses its own connection, and a process made by ``fork`` opens new ones (it
    never touches the parent's).
    """

    durable = True

    def __init__(self, url, *, create=True):
        if not is_postgres_url(url):
            # Not echoed: the string may hold a password.
            raise ValueError("url must start with postgresql:// or postgres://.")
        self.url = url
        self._dsn, self.name, self._where = _parse(url)
        self._local = threading.local()
        self.ledger_id, self.server_id = self._open(create)

    def __getstate__(self):
        return {"url": self.url, "ledger_id": self.ledger_id, "server_id": self.server_id}

    def __setstate__(self, state):
        self.url = state["url"]
        self._dsn, self.name, self._where = _parse(self.url)
        self.ledger_id = state["ledger_id"]
        self.server_id = state["server_id"]
        self._local = threading.local()

    # ------------------------------------------------------------------ setup
    def _open(self, create):
        return self._retrying(lambda con: self._open_on(con, create), " while opening it")

    def _retrying(self, action, during=""):
        """``action(con)`` on a pooled connection; a stale one (a restarted server) is
        replaced once. Only for work that writes nothing before it can fail."""
        psycopg = _psycopg()
        for attempt in (0, 1):
            con = _checkout(self._dsn, self._where)
            try:
                return action(con)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise _no_rights(self._where, exc) from exc
            except psycopg.OperationalError as exc:
                _discard(con)
                if attempt:
                    raise LedgerUnavailableError(
                        f"Lost the connection to the PostgreSQL ledger {self._where}"
                        f"{during}: {_reason(exc, self._dsn)}."
                    ) from exc
            finally:
                _checkin(self._dsn, con)

    def _open_on(self, con, create):
        with con.transaction():
            exists = con.execute("SELECT to_regclass('skhybrid_ledger') IS NOT NULL, "
                                 "to_regclass('skhybrid_ledger_event') IS NOT NULL").fetchone()
            if not all(exists):
                if not create:
                    raise ValueError(self._missing())
                con.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
                con.execute(SCHEMA_SQL)
            if create:
                con.execute("INSERT INTO skhybrid_ledger (name, ledger_id) VALUES (%s, %s) "
                            "ON CONFLICT (name) DO NOTHING", (self.name, uuid.uuid4().hex))
            row = con.execute(f"SELECT ledger_id, {_TABLE_SQL} FROM skhybrid_ledger "
                              "WHERE name = %s", (self.name,)).fetchone()
            if row is None:
                raise ValueError(self._missing())
            return row[0], _server_id(con, row[1])

    def _missing(self):
        return (f"No ledger named {self.name!r} in {self._where}: nothing was created. Check "
                "the URL and the ledger name (?ledger=...).")

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self):
        """Hold the ledger's row lock while the caller reads events and appends new ones."""
        psycopg = _psycopg()
        con, n_events, budget = self._begin()
        self._local.tx = [con, n_events, budget]
        try:
            try:
                yield self
            except BaseException:
                try:
                    con.execute("ROLLBACK")
                except psycopg.Error:
                    _discard(con)  # the connection is gone; the server rolled back
                raise
            try:
                con.execute("COMMIT")
            except psycopg.Error as exc:
                _discard(con)
                raise LedgerUnavailableError(
                    f"The PostgreSQL ledger {self._where} could not commit this charge: "
                    f"{_reason(exc, self._dsn)}. The fit did not run (nothing was computed "
                    "on private data). The connection was lost at COMMIT, so the charge may "
                    "or may not have been recorded: the ledger's events show which."
                ) from exc
        finally:
            self._local.tx = None
            _checkin(self._dsn, con)

    def _begin(self):
        """A connection inside a transaction holding this ledger's row lock.

        A failure here has written nothing, so a stale connection (a restarted server,
        a session the server ended) is replaced once before giving up.
        """
        psycopg = _psycopg()
        for attempt in (0, 1):
            con = _checkout(self._dsn, self._where)
            try:
                # A charge that has returned must be on disk: no URL option, role or
                # database setting, or server default may weaken this transaction's
                # commit (SET LOCAL: it ends with the transaction).
                con.execute("BEGIN ISOLATION LEVEL READ COMMITTED; "
                            "SELECT set_config('synchronous_commit', 'on', true) WHERE "
                            "current_setting('synchronous_commit') <> 'remote_apply'")
                row = con.execute(
                    f"SELECT ledger_id, n_events, budget, {_TABLE_SQL} "
                    "FROM skhybrid_ledger WHERE name = %s FOR UPDATE",
                    (self.name,)).fetchone()
                where = None if row is None else _server_id(con, row[3])
            except psycopg.errors.UndefinedTable:
                _discard(con)
                row = None
            except psycopg.errors.InsufficientPrivilege as exc:
                _discard(con)
                raise _no_rights(self._where, exc) from exc
            except psycopg.OperationalError as exc:
                _discard(con)
                if attempt == 0:
                    continue
                raise LedgerUnavailableError(
                    f"Lost the connection to the PostgreSQL ledger {self._where} before "
                    f"charging: {_reason(exc, self._dsn)}. Nothing was charged and nothing "
                    "computed."
                ) from exc
            if row is None or row[0] != self.ledger_id or where != self.server_id:
                if not con.closed:
                    con.execute("ROLLBACK")
                    _checkin(self._dsn, con)
                raise RuntimeError(
                    f"The PostgreSQL ledger {self._where} is not the ledger this accountant "
                    "was created with (missing, recreated, another database, or a copy of "
                    "the ledger on another server or in another schema that the URL "
                    "reaches from this host); refusing to charge. Every worker must reach "
                    "the same database: use a host name that resolves to the server on "
                    "every host (not localhost)."
                )
            return con, row[1], None if row[2] is None else json.loads(row[2])
        raise AssertionError("unreachable")  # pragma: no cover

    def _run(self, sql, args=()):
        """Run a query on this thread's transaction, or on a connection of its own."""
        psycopg = _psycopg()
        tx = getattr(self._local, "tx", None)
        if tx is not None:
            try:
                return tx[0].execute(sql, args).fetchall()
            except psycopg.errors.InsufficientPrivilege as exc:
                raise _no_rights(self._where, exc) from exc
            except psycopg.OperationalError as exc:
                raise LedgerUnavailableError(
                    f"Lost the connection to the PostgreSQL ledger {self._where} during a "
                    f"charge: {_reason(exc, self._dsn)}. Nothing was charged and nothing computed."
                ) from exc
        # A read changes nothing: a stale connection may be replaced.
        return self._retrying(lambda con: con.execute(sql, args).fetchall())

    # ------------------------------------------------------------------ interface
    def read(self, start=0):
        """The events from position ``start`` on, oldest first."""
        rows = self._run("SELECT body FROM skhybrid_ledger_event WHERE ledger = %s AND "
                         "pos >= %s ORDER BY pos", (self.name, int(start)))
        tx = getattr(self._local, "tx", None)
        if tx is not None and int(start) + len(rows) != tx[1]:
            raise RuntimeError(
                f"The PostgreSQL ledger {self._where} is inconsistent (its event count does "
                "not match its events); refusing to charge. Were rows deleted by hand?")
        return [PrivacyEvent.from_dict(json.loads(body)) for (body,) in rows]

    def append(self, events):
        """Record ``events`` (inside :meth:`transaction` only)."""
        tx = getattr(self._local, "tx", None)
        if tx is None:
            raise RuntimeError("PostgreSQLLedger.append must be called inside transaction().")
        con, n = tx[0], tx[1]
        bodies = [json.dumps(e.to_dict(), default=float) for e in events]
        if not bodies:
            return
        psycopg = _psycopg()
        try:
            with con.cursor() as cur:
                cur.executemany(
                    "INSERT INTO skhybrid_ledger_event (ledger, pos, body) VALUES (%s, %s, %s)",
                    [(self.name, n + i, body) for i, body in enumerate(bodies)])
            con.execute("UPDATE skhybrid_ledger SET n_events = %s WHERE name = %s",
                        (n + len(bodies), self.name))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise _no_rights(self._where, exc) from exc
        except psycopg.OperationalError as exc:
            raise LedgerUnavailableError(
                f"Lost the connection to the PostgreSQL ledger {self._where} during a "
                f"charge: {_reason(exc, self._dsn)}. Nothing was charged and nothing computed."
            ) from exc
        tx[1] = n + len(bodies)

    def budget(self):
        """The budget stored with the ledger, or ``None`` (inside :meth:`transaction`:
        the one read with the row lock)."""
        tx = getattr(self._local, "tx", None)
        if tx is not None and tx[2] is not None:
            return tx[2]
        rows = self._run("SELECT budget FROM skhybrid_ledger WHERE name = %s", (self.name,))
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    def bind(self, budget):
        """Store ``budget`` (first accountant) or check it (``ValueError`` on a mismatch)."""
        with self.transaction():
            stored = self.budget()
            _check_same_budget(stored, budget, self.describe())
            if stored is None:
                self._run("UPDATE skhybrid_ledger SET budget = %s WHERE name = %s "
                          "RETURNING name", (json.dumps(budget), self.name))

    def describe(self):
        """The URL without its password, e.g. ``postgresql://ana@db:5432/dp?ledger=team``."""
        return self._where


def _parse(url):
    """(libpq URL without ``ledger``, ledger name, printable URL).

    The printable URL keeps the user name, the hosts, the database and the query keys in
    ``_SHOWN_KEYS`` (and ``ledger``): a password, an ``sslpassword``, a mistyped key and
    anything that does not parse as a host or a database name are left out.
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = [v for k, v in query if k == "ledger"]
    name = names[-1] if names else "default"
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"The ledger name in the URL (?ledger=...) must be 1-128 letters, digits or "
            f"'_.:-'; got {name!r}.")
    rest = [(k, v) for k, v in query if k != "ledger"]
    defaults = [(k, v) for k, v in _CONNECT_DEFAULTS.items() if k not in dict(rest)]
    dsn = urlunsplit(parts._replace(query=urlencode(rest + defaults)))
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if not all(_HOST.fullmatch(h) for h in hosts.split(",")):
        hosts = "..."  # e.g. a password with an unescaped '/' cut the netloc short
    netloc = f"{userinfo.split(':', 1)[0]}{at}{hosts}"
    path = parts.path if "@" not in parts.path and ":" not in parts.path else "/..."
    public = [(k, v) for k, v in rest if k in _SHOWN_KEYS]
    shown = urlunsplit((parts.scheme, netloc, path,
                        urlencode(public + [("ledger", name)]), ""))
    return dsn, name, shown
