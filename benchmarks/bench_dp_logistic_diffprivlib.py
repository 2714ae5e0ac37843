"""DPLogisticRegression against diffprivlib's LogisticRegression, at the same guarantee.

Both fit ε-DP L2-regularised logistic regression by objective perturbation (Chaudhuri,
Monteleoni & Sarwate 2011, Algorithm 2) with the same ε, C and row-norm bound
``data_norm``, every row private, intercept fitted. diffprivlib 0.6.6 solves the perturbed
objective with L-BFGS to a projected-gradient tolerance of 1e-4 (its default ``tol``);
skhybrid solves it to a gradient of 1e-10 (its default ``tol``, which sizes the output noise
of approximate minima perturbation; a private fit runs until it gets there).

diffprivlib does not import beside scikit-learn >= 1.8, so it runs in its own interpreter
(``--diffprivlib-python``; default ``/work/venvs/dpl/bin/python`` when it exists), made with

    python -m venv /work/venvs/dpl
    /work/venvs/dpl/bin/pip install diffprivlib==0.6.6 scikit-learn==1.6.1

as a long-lived worker process: it loads the same data once, and each of its fits is timed
inside the worker (no process start-up or pipe time). The two contenders alternate fit by
fit (order flipped every repeat); medians over ``--repeat`` fits, test accuracy as a mean.
BLAS is pinned to one thread in both processes (environment variables set before numpy
is imported).

    python benchmarks/bench_dp_logistic_diffprivlib.py                  # n = 1e4, 1e5; d = 20
    python benchmarks/bench_dp_logistic_diffprivlib.py --n 10000 --d 20 --repeat 5
    python benchmarks/bench_dp_logistic_diffprivlib.py --quick
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402

from skhybrid.learners import DPLogisticRegression  # noqa: E402

DEFAULT_DPL_PYTHON = "/work/venvs/dpl/bin/python"

# The worker: reads "load <npz>" / "fit <seed>" lines, answers one line per command.
WORKER = r"""
import os, sys, time, warnings
for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = "1"
import numpy as np
from diffprivlib.models import LogisticRegression
warnings.simplefilter("ignore")
data = None
for line in sys.stdin:
    cmd, arg = line.split()
    if cmd == "load":
        data = dict(np.load(arg))
        print("ok", flush=True)
    elif cmd == "fit":
        clf = LogisticRegression(epsilon=data["epsilon"].item(), data_norm=data["norm"].item(),
                                 C=data["C"].item(), random_state=int(arg))
        t = time.perf_counter()
        clf.fit(data["X"], data["y"])
        t = time.perf_counter() - t
        print(t, clf.score(data["Xt"], data["yt"]), flush=True)
"""


class DiffprivlibWorker:
    """diffprivlib in its own interpreter, one fit per request."""

    def __init__(self, python):
        self.proc = subprocess.Popen([python, "-c", WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline().split()
        if not out:
            raise RuntimeError("the diffprivlib worker died (see its stderr above)")
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def make_data(n, d, seed=0):
    """Standardised binary data (train n rows, test n // 4) and the largest row norm."""
    X, y = make_classification(n_samples=n + n // 4, n_features=d, n_informative=d // 2,
                               random_state=seed)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X[:n], y[:n], X[n:], y[n:], float(np.linalg.norm(X[:n], axis=1).max())


def run_size(worker, n, d, repeat, epsilon, C):
    X, y, Xt, yt, norm = make_data(n, d)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=X, y=y, Xt=Xt, yt=yt, norm=norm, epsilon=epsilon, C=C)
        worker.ask(f"load {path}")
    times = {"skhybrid": [], "diffprivlib": []}
    acc = {"skhybrid": [], "diffprivlib": []}
    worker.ask("fit 12345")  # warm-up (first-call costs are not fit time)
    DPLogisticRegression(epsilon, data_norm=norm, C=C, classes=[0, 1], random_state=0).fit(X, y)
    for r in range(repeat):
        order = ("skhybrid", "diffprivlib") if r % 2 == 0 else ("diffprivlib", "skhybrid")
        for who in order:
            if who == "skhybrid":
                clf = DPLogisticRegression(epsilon, data_norm=norm, C=C, classes=[0, 1],
                                           random_state=r)
                t = time.perf_counter()
                clf.fit(X, y)
                times[who].append(time.perf_counter() - t)
                acc[who].append(clf.score(Xt, yt))
            else:
                t, a = worker.ask(f"fit {r}")
                times[who].append(float(t))
                acc[who].append(float(a))
    med = {k: statistics.median(v) for k, v in times.items()}
    return med, {k: float(np.mean(v)) for k, v in acc.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--d", type=int, nargs="+", default=[20])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--diffprivlib-python", default=None)
    ap.add_argument("--quick", action="store_true", help="n = 1e4, d = 20, 3 repeats")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.d, args.repeat = [10_000], [20], 3
    python = args.diffprivlib_python or (DEFAULT_DPL_PYTHON if os.path.exists(DEFAULT_DPL_PYTHON)
                                         else None)
    if python is None:
        print("no diffprivlib interpreter: pass --diffprivlib-python (see the docstring)")
        return 1
    worker = DiffprivlibWorker(python)
    print(f"BLAS pinned to 1 thread in both processes; epsilon={args.epsilon}, C={args.C}; "
          f"median fit time over {args.repeat} interleaved repeats; accuracy: mean on a "
          "held-out quarter")
    header = (f"{'n':>7} {'d':>3} | {'skhybrid ms':>11} {'diffprivlib ms':>14} | "
              f"{'acc sk':>6} {'acc dpl':>7} | {'sk/dpl':>6}")
    print(header)
    print("-" * len(header))
    try:
        for n in args.n:
            for d in args.d:
                med, acc = run_size(worker, n, d, args.repeat, args.epsilon, args.C)
                print(f"{n:>7} {d:>3} | {1e3 * med['skhybrid']:>11.1f} "
                      f"{1e3 * med['diffprivlib']:>14.1f} | {acc['skhybrid']:>6.3f} "
                      f"{acc['diffprivlib']:>7.3f} | "
                      f"{med['skhybrid'] / med['diffprivlib']:>6.2f}", flush=True)
    finally:
        worker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
