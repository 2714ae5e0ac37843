"""Shared fixtures: a real PostgreSQL server for the ledger tests (started on first use)."""

import os
import re
import uuid

import pytest

from tests._pg_server import PostgresServer, PostgresUnavailable


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server in a temporary directory, for the whole session.

    Skipped (with how to get it) where psycopg or the server binaries are missing;
    ``SKHYBRID_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) turns the skip into a failure.
    """
    required = os.environ.get("SKHYBRID_REQUIRE_POSTGRES") == "1"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        reason = 'psycopg is not installed: pip install "skhybrid[cluster]"'
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        if required:
            pytest.fail(f"PostgreSQL tests cannot run: {exc}")
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres_server, request):
    """The URL of a fresh ledger (its own name) on the session's server."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60] + "_" + uuid.uuid4().hex[:8]
    return postgres_server.url(ledger=name)
