"""The cost of one charge on each ledger back end: memory, SQLite, PostgreSQL.

1. Sequential: ``PrivacyAccountant.spend`` of one small Laplace event, in blocks of
   ``--block`` calls, the back ends interleaved (rotating order) for ``--repeats``
   rounds; per back end the median cost of one charge, charges per second, and ratios to
   memory and to SQLite.
2. Concurrency: ``--procs`` processes (fork) released together by a barrier, each
   spending 0.1 until refused, on one budget of 5.0 (exactly 50 charges fit), on SQLite
   and on PostgreSQL: charges granted and refused (granted must be exactly 50), ledger
   events, and the wall time. Then the same processes with an unbounded budget, each
   making ``--charges`` charges: aggregate charges per second.

Both durable back ends are at their crash-safe settings (SQLite ``synchronous=FULL``;
PostgreSQL ``fsync`` and ``synchronous_commit`` on, over TCP on the loopback). Without
``--url`` the script starts its own temporary PostgreSQL server (the tests' helper:
Debian's ``postgresql`` binaries, run as the ``postgres`` user when root). BLAS is
pinned to one thread (no linear algebra is timed). Timings on a shared machine are
noisy: compare ratios, not seconds.

    python benchmarks/bench_ledger.py [--repeats 7] [--block 200] [--procs 8]
        [--charges 100] [--url postgresql://user@host/db]
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from skhybrid.accounting import BudgetExceededError, PrivacyAccountant  # noqa: E402
from skhybrid.mechanisms import LaplaceMechanism  # noqa: E402


def _event(eps=0.001):
    return LaplaceMechanism(eps).event()


def sequential(ledgers, repeats, block):
    accs = {name: PrivacyAccountant(epsilon=1e12, ledger=where) for name, where in ledgers}
    for acc in accs.values():  # warm up: connections, tables, caches
        for _ in range(10):
            acc.spend([_event()])
    names = list(accs)
    times = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            acc = accs[name]
            t0 = time.perf_counter()
            for _ in range(block):
                acc.spend([_event()])
            times[name].append((time.perf_counter() - t0) / block)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"\n1. one charge (spend of one Laplace event), median of {repeats} interleaved "
          f"blocks of {block}")
    print(f"{'back end':<12} {'us/charge':>10} {'charges/s':>10} {'/memory':>9} {'/sqlite':>9}")
    for name in names:
        print(f"{name:<12} {med[name] * 1e6:>10.1f} {1 / med[name]:>10.0f} "
              f"{med[name] / med['memory']:>9.1f} {med[name] / med['sqlite']:>9.2f}")


def _hammer(where, barrier, out, attempts, eps):
    acc = PrivacyAccountant(ledger=where)
    barrier.wait()
    granted = refused = 0
    try:
        for _ in range(attempts):
            try:
                acc.spend([LaplaceMechanism(eps).event()])
                granted += 1
            except BudgetExceededError:
                refused += 1
    except Exception as exc:
        out.put(repr(exc))
        raise
    out.put((granted, refused))


def _race(where, procs, attempts, eps):
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(procs + 1), ctx.Queue()
    workers = [ctx.Process(target=_hammer, args=(where, barrier, out, attempts, eps))
               for _ in range(procs)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    results = [out.get(timeout=600) for _ in workers]
    wall = time.perf_counter() - t0
    for w in workers:
        w.join()
    errors = [r for r in results if isinstance(r, str)]
    if errors:
        raise RuntimeError(f"a worker failed: {errors[0]}")
    return sum(g for g, _ in results), sum(r for _, r in results), wall


def concurrency(race, load, procs, charges):
    print(f"\n2a. {procs} processes, one budget of 5.0, each spending 0.1 until refused "
          f"(20 attempts each; exactly 50 fit)")
    print(f"{'back end':<12} {'granted':>8} {'refused':>8} {'events':>7} {'spent':>7} "
          f"{'wall s':>7}")
    for name, where in race:
        PrivacyAccountant(epsilon=5.0, ledger=where)
        granted, refused, wall = _race(where, procs, 20, 0.1)
        acc = PrivacyAccountant(ledger=where)
        print(f"{name:<12} {granted:>8} {refused:>8} {len(acc.events):>7} "
              f"{acc.spent()[0]:>7.3f} {wall:>7.2f}")
    print(f"\n2b. {procs} processes, unbounded budget, {charges} charges each")
    print(f"{'back end':<12} {'charges':>8} {'wall s':>7} {'charges/s':>10}")
    for name, where in load:
        PrivacyAccountant(epsilon=1e12, ledger=where)
        granted, _, wall = _race(where, procs, charges, 0.001)
        print(f"{name:<12} {granted:>8} {wall:>7.2f} {granted / wall:>10.0f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--block", type=int, default=200)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--charges", type=int, default=100)
    parser.add_argument("--url", help="an existing PostgreSQL database (default: start one)")
    args = parser.parse_args(argv)

    from threadpoolctl import threadpool_limits

    server = None
    if args.url is None:
        from tests._pg_server import PostgresServer

        server = PostgresServer.start()
        base = server.url()
    else:
        base = args.url
    tmp = tempfile.mkdtemp(prefix="bench-ledger-")
    run = uuid.uuid4().hex[:8]
    sep = "&" if "?" in base else "?"
    try:
        with threadpool_limits(1):
            import psycopg

            with psycopg.connect(base) as con:
                version = con.execute("SHOW server_version").fetchone()[0]
            print(f"PostgreSQL {version} ({'own temporary server' if server else base}); "
                  f"SQLite {__import__('sqlite3').sqlite_version} in {tmp}; "
                  f"{os.cpu_count()} CPUs; BLAS threads 1")
            sequential([("memory", None), ("sqlite", os.path.join(tmp, "seq.sqlite")),
                        ("postgresql", f"{base}{sep}ledger=bench_seq_{run}")],
                       args.repeats, args.block)
            concurrency([("sqlite", os.path.join(tmp, "race.sqlite")),
                         ("postgresql", f"{base}{sep}ledger=bench_race_{run}")],
                        [("sqlite", os.path.join(tmp, "load.sqlite")),
                         ("postgresql", f"{base}{sep}ledger=bench_load_{run}")],
                        args.procs, args.charges)
    finally:
        if server is not None:
            server.stop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
