"""A throwaway PostgreSQL server for the tests and the ledger benchmark.

It runs the server binaries installed on the machine (Debian's ``postgresql`` package puts
them in ``/usr/lib/postgresql/<version>/bin``; ``SKHYBRID_PG_BINDIR`` overrides the
search) in a fresh temporary directory, listening on a free loopback port with ``trust``
authentication, and removes everything on :meth:`PostgresServer.stop`. ``initdb`` refuses
to run as root, so as root the server runs as the ``postgres`` OS user (``runuser``).

    server = PostgresServer.start()      # raises PostgresUnavailable with the reason
    url = server.url()                   # postgresql://postgres@127.0.0.1:<port>/postgres
    server.restart(mode="immediate")     # a crash: the restart replays the WAL
    server.stop()
"""

import atexit
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile

HOW_TO_GET = (
    "the PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found: install them "
    "with `apt install postgresql` (Debian/Ubuntu; the tests look in "
    "/usr/lib/postgresql/<version>/bin and on PATH) or point SKHYBRID_PG_BINDIR at the "
    "directory holding them"
)


class PostgresUnavailable(RuntimeError):
    """No server can be started here (the message says why and how to fix it)."""


def find_bindir():
    """The directory of ``initdb`` and ``pg_ctl``, or ``None``."""
    candidates = []
    if os.environ.get("SKHYBRID_PG_BINDIR"):
        candidates.append(os.environ["SKHYBRID_PG_BINDIR"])

    def version(path):
        m = re.search(r"postgresql/(\d+)", path)
        return int(m.group(1)) if m else 0

    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(os.path.dirname(on_path))
    for d in candidates:
        if all(os.access(os.path.join(d, exe), os.X_OK) for exe in ("initdb", "pg_ctl")):
            return d
    return None


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One running server in its own temporary directory (see the module docstring)."""

    def __init__(self, bindir, root, port, user):
        self.bindir, self.root, self.port, self.user = bindir, root, port, user
        self.data = os.path.join(root, "data")
        self.log = os.path.join(root, "server.log")

    @classmethod
    def start(cls, bindir=None):
        bindir = bindir or find_bindir()
        if bindir is None:
            raise PostgresUnavailable(HOW_TO_GET)
        as_root = os.geteuid() == 0
        # As root the directory must be reachable by the postgres user: /tmp, not a
        # private TMPDIR.
        root = tempfile.mkdtemp(prefix="skhybrid-pg-",
                                dir="/tmp" if as_root and os.path.isdir("/tmp") else None)
        user = None
        if as_root:  # initdb refuses root: run the server as the postgres user
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(root, ignore_errors=True)
                raise PostgresUnavailable(
                    "running as root, and there is no `postgres` OS user to run the server "
                    "as (initdb refuses root); `apt install postgresql` creates one"
                ) from None
            if shutil.which("runuser") is None:
                shutil.rmtree(root, ignore_errors=True)
                raise PostgresUnavailable("running as root without `runuser` (util-linux)")
            os.chown(root, pw.pw_uid, pw.pw_gid)
            user = "postgres"
        server = cls(bindir, root, _free_port(), user)
        # A run interrupted before its teardown (Ctrl-C, pytest -x) still stops the server.
        atexit.register(server.stop)
        try:
            server._run("initdb", "-D", server.data, "-A", "trust", "-U", "postgres",
                        "-E", "UTF8", "--locale=C", "--no-sync")
            server._pg_ctl_start()
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, exe, *args):
        cmd = [os.path.join(self.bindir, exe), *args]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.root)
        if proc.returncode != 0:
            raise PostgresUnavailable(
                f"{exe} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
                + (f"\nserver log:\n{self.log_tail()}" if os.path.exists(self.log) else "")
            )
        return proc.stdout

    def _pg_ctl_start(self):
        # Durable settings (fsync, synchronous_commit) stay at their defaults: the ledger's
        # crash tests and the benchmark measure the real thing.
        opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 "
                f"-c unix_socket_directories={self.root} -c max_connections=60")
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-o", opts, "-w", "-t", "60",
                  "start")

    def url(self, dbname="postgres", **query):
        extra = "&".join(f"{k}={v}" for k, v in query.items())
        return (f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"
                + (f"?{extra}" if extra else ""))

    def stop(self, mode="fast"):
        """Stop the server and delete its directory (a second call does nothing)."""
        if not os.path.isdir(self.root):
            return
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            try:
                self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")
            except (PostgresUnavailable, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    def pause(self, mode="fast"):
        """Stop the server but keep its data (``mode="immediate"`` is a crash)."""
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def resume(self):
        self._pg_ctl_start()

    def restart(self, mode="fast"):
        self.pause(mode)
        self.resume()

    def log_tail(self, n=20):
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""
