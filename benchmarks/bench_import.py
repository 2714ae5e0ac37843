"""Import time of skhybrid against scikit-learn, each in a fresh interpreter.

Every contender is one import statement run by a new ``python -c`` process that times
the statement itself (``time.perf_counter`` around it, so interpreter start-up is left
out). Contenders run interleaved, in rotating order, ``--repeats`` times after one
warm-up round (which also writes the bytecode caches); the table gives the median and
the ratio of each median to ``import sklearn`` and to ``import sklearn.linear_model``
(what a script using one scikit-learn estimator imports). BLAS is pinned to one thread
in the children (OPENBLAS_NUM_THREADS=1 etc.). The skhybrid imported is the one in this
checkout (the children run in its root, which is also put first on PYTHONPATH).

    python benchmarks/bench_import.py [--repeats 15]
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONTENDERS = {
    "import sklearn": "import sklearn",
    "import sklearn.linear_model": "import sklearn.linear_model",
    "import skhybrid": "import skhybrid",
    "from skhybrid import DPLogisticRegression, PrivacyAccountant":
        "from skhybrid import DPLogisticRegression, PrivacyAccountant",
    "the command line (import skhybrid.__main__)": "import skhybrid.__main__",
    "every subpackage": "import skhybrid.accounting, skhybrid.mechanisms, skhybrid.learners, "
                        "skhybrid.transfer, skhybrid.ppm, skhybrid.adaptation, skhybrid.hybrid, "
                        "skhybrid.preprocessing, skhybrid.datasets",
}

_TIMER = "import time; t0 = time.perf_counter(); {stmt}; print(time.perf_counter() - t0)"


def _env():
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def time_import(stmt, env):
    """Seconds one fresh interpreter spends on ``stmt``."""
    out = subprocess.run([sys.executable, "-c", _TIMER.format(stmt=stmt)], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="rounds (default: 15)")
    args = parser.parse_args(argv)
    env = _env()
    where = subprocess.run([sys.executable, "-c", "import skhybrid; print(skhybrid.__file__)"],
                           env=env, cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.strip()
    names = list(CONTENDERS)
    for name in names:  # warm-up: bytecode caches, file system cache
        time_import(CONTENDERS[name], env)
    times = {name: [] for name in names}
    for r in range(args.repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            times[name].append(time_import(CONTENDERS[name], env))
    med = {name: statistics.median(t) for name, t in times.items()}
    base, lin = med["import sklearn"], med["import sklearn.linear_model"]
    print(f"python {sys.version.split()[0]}, skhybrid from {where}")
    print(f"median of {args.repeats} fresh interpreters each, interleaved; BLAS on 1 thread\n")
    width = max(map(len, names))
    print(f"{'statement':<{width}} {'median ms':>10} {'/ sklearn':>10} {'/ sk.linear':>12}")
    for name in names:
        print(f"{name:<{width}} {1e3 * med[name]:>10.1f} {med[name] / base:>10.2f} "
              f"{med[name] / lin:>12.2f}")


if __name__ == "__main__":
    main()
