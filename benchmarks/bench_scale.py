"""Every public estimator fitted at 10^4, 10^5 and 10^6 rows, beside its scikit-learn baseline.

Each (estimator, size) case runs in its own child process under ``--timeout`` seconds, so
one slow or memory-hungry case cannot hang the run; a case that raises, times out or is
killed (out of memory) prints as such. In the child, BLAS is pinned to one thread
(``OPENBLAS_NUM_THREADS=1`` and threadpoolctl), the data are generated (seeded, no
network), both contenders are warmed up once on a 2,000-row problem, then the skhybrid
fit and the baseline fit alternate ``--repeats`` times (the order flips every repeat).

Printed per case: the median fit time of each contender, their ratio, and the peak memory
a fit adds: the child's peak resident set size (``VmHWM``, reset through
``/proc/self/clear_refs`` just before the fit) minus its resident set size just before the
fit -- i.e. maxrss measured per fit inside the child (glibc's mmap threshold is fixed at
128 KiB so large freed arrays go back to the system between fits). Then, per estimator,
the growth ratio t(10^6)/t(10^5): about 10 for a linear-time fit.

"Rows" are the rows each estimator learns from, every estimator at ε = 1 with its
defaults otherwise (the setups follow the docstrings and tests):

- transfer: HardMarginLinearSVC (n separable rows, d = 10; non-private by design);
  NoisySGDClassifier (n private rows, d = 10, δ = 1e-5); ParityTransfer (n rows of 10
  bits, half curator rows from a biased source, half local agents from the uniform
  target); SubsampleTestReweigh (its default DPLogisticRegression learner, n rows of
  ``make_shifted_gaussians``, d = 5, 90 % curator rows, 10 % local agents, ``max_iter=3``
  rounds instead of the default T to keep the run short; the accounting charges all 3
  rounds, and at ε = 1 it certifies a large enough subsample only from 67,605 curator
  rows on, so the fit refuses at 10^4 rows -- by design, printed as such).
- ppm: PPMHalfspaceClassifier (n rows of ``make_label_determined_halfspace``, d = 2; the
  public class's rows are public).
- adaptation: DiscrepancyAdaptationRegressor (n rows of ``make_adaptation_data``, d = 10:
  half labelled public source rows, half unlabelled private target rows).
- hybrid: LocalThresholdClassifier (n local agents, b = 8); ParityThresholdClassifier
  (n rows, 6 parity bits + an 8-bit threshold, a quarter at the curator);
  ParityAndThresholdClassifier (n rows, 5 bits + 8-bit threshold, 10 % at the curator);
  SelectThenEstimate (n rows in {-1, 1}^50, 2 % at the curator).
- learners: DPLogisticRegression (n private rows, d = 10, ``data_norm=5``);
  PrivateParityClassifier (n private rows of 10 bits).
- model_selection: PrivateSearchCV (DPLogisticRegression, ``C`` in {0.1, 1}, n private
  rows, d = 10; it has no ``cv``: one validation split, ``validation_size=0.25``, and the
  default random-stopping run count, E[K] = 4); baseline GridSearchCV with cv = 2.
- preprocessing: PublicFitTransformer(StandardScaler()) (n rows, half public, d = 10).

Baselines: the non-private scikit-learn estimator a user would pick, on the same rows:
LogisticRegression, LinearSVC, Ridge, a depth-1 DecisionTreeClassifier (a threshold),
GridSearchCV, StandardScaler on the public rows; for SelectThenEstimate numpy's column
means and argmax. For the parity learners no scikit-learn estimator learns a parity; the
LogisticRegression beside them is a timing reference only.

Usage: python benchmarks/bench_scale.py [--sizes 10000 100000 1000000] [--repeats 3]
       [--only NAME ...] [--timeout 600]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# ---------------------------------------------------------------- cases (run in the child)

def _linear(n, d=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = (X @ w + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _bits(n, d, rng, p=0.5):
    return (rng.random((n, d)) < p).astype(np.int64)


def case_hard_margin(n):
    from sklearn.svm import LinearSVC

    from skhybrid.transfer import HardMarginLinearSVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 10))
    w = rng.normal(size=10)
    w /= np.linalg.norm(w)
    y = (X @ w > 0).astype(int)
    X += np.outer(np.where(y == 1, 0.1, -0.1), w)  # a margin of 0.1 either side
    return (lambda: HardMarginLinearSVC().fit(X, y),
            "LinearSVC", lambda: LinearSVC().fit(X, y))


def case_noisy_sgd(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.transfer import NoisySGDClassifier

    X, y = _linear(n)
    X = X / 4.0
    return (lambda: NoisySGDClassifier(epsilon=1.0, delta=1e-5, classes=[0, 1],
                                       random_state=0).fit(X, y),
            "LogisticRegression", lambda: LogisticRegression().fit(X, y))


def case_parity_transfer(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.transfer import ParityTransfer

    rng = np.random.default_rng(0)
    r = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0])
    half = n // 2
    X = np.vstack([_bits(half, 10, rng, 0.3), _bits(n - half, 10, rng)])
    y = X @ r % 2
    curator = np.arange(n) < half
    return (lambda: ParityTransfer(epsilon=1.0, classes=[0, 1], random_state=0).fit(
                X, y, curator_mask=curator),
            "LogisticRegression*", lambda: LogisticRegression().fit(X, y))


def case_str(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.datasets import make_shifted_gaussians
    from skhybrid.transfer import SubsampleTestReweigh

    n_c = 9 * n // 10
    X, y, curator = make_shifted_gaussians(n_c, n - n_c, n_features=5, random_state=0)[:3]
    return (lambda: SubsampleTestReweigh(epsilon=1.0, max_iter=3, classes=[-1, 1],
                                         random_state=0).fit(X, y, curator_mask=curator),
            "LogisticRegression", lambda: LogisticRegression().fit(X[curator], y[curator]))


def case_ppm(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.datasets import make_label_determined_halfspace
    from skhybrid.ppm import PPMHalfspaceClassifier

    X, y = make_label_determined_halfspace(n, n_features=2, random_state=0)[:2]
    public = y == 0
    return (lambda: PPMHalfspaceClassifier(epsilon=1.0, private_class=1, classes=[0, 1],
                                           random_state=0).fit(X, y, public_mask=public),
            "LogisticRegression", lambda: LogisticRegression().fit(X, y))


def case_adaptation(n):
    from sklearn.linear_model import Ridge

    from skhybrid.adaptation import DiscrepancyAdaptationRegressor, make_adaptation_data

    m = n // 2
    D = make_adaptation_data(m, n - m, 0, 10, random_state=0)
    X = np.vstack([D.X_source, D.X_target])
    y = np.concatenate([D.y_source, np.full(n - m, np.nan)])
    public = np.arange(n) < m
    return (lambda: DiscrepancyAdaptationRegressor(epsilon=1.0, random_state=0).fit(
                X, y, public_mask=public),
            "Ridge", lambda: Ridge().fit(D.X_source, D.y_source))


def case_local_threshold(n):
    from sklearn.tree import DecisionTreeClassifier

    from skhybrid.hybrid import LocalThresholdClassifier

    rng = np.random.default_rng(42)
    t = rng.integers(0, 256, size=n)
    X, y = t[:, None], (t >= 77).astype(int)
    agents = np.zeros(n, dtype=bool)  # every row a local agent
    return (lambda: LocalThresholdClassifier(threshold_bits=8, classes=[0, 1],
                                             random_state=0).fit(X, y, curator_mask=agents),
            "DecisionTree(depth=1)", lambda: DecisionTreeClassifier(max_depth=1).fit(X, y))


def case_parity_threshold(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.hybrid import ParityThresholdClassifier

    rng = np.random.default_rng(0)
    X = np.column_stack([_bits(n, 6, rng), rng.integers(0, 256, n)])
    k = np.array([1, 0, 1, 1, 0, 1])
    y = (X[:, :6] @ k + (X[:, -1] >= 100)) % 2
    curator = np.arange(n) < n // 4
    return (lambda: ParityThresholdClassifier(threshold_bits=8, classes=[0, 1],
                                              random_state=0).fit(X, y, curator_mask=curator),
            "LogisticRegression*", lambda: LogisticRegression().fit(X, y))


def case_parity_and_threshold(n):
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier

    from skhybrid.hybrid import ParityAndThresholdClassifier

    rng = np.random.default_rng(0)
    X = np.column_stack([_bits(n, 5, rng), rng.integers(0, 256, n)])
    Y = np.column_stack([X[:, :5] @ [1, 1, 0, 0, 1] % 2, X[:, -1] >= 99]).astype(int)
    curator = np.arange(n) < n // 10
    return (lambda: ParityAndThresholdClassifier(threshold_bits=8, classes=([0, 1], [0, 1]),
                                                 random_state=1).fit(X, Y, curator_mask=curator),
            "MultiOutput(LogisticRegression)*",
            lambda: MultiOutputClassifier(LogisticRegression()).fit(X, Y))


def case_select_estimate(n):
    from skhybrid.hybrid import SelectThenEstimate

    rng = np.random.default_rng(0)
    mu = np.zeros(50)
    mu[7] = 0.6
    X = np.where(rng.random((n, 50)) < (1 + mu) / 2, 1, -1)
    curator = np.arange(n) < n // 50

    def baseline():
        means = X.mean(axis=0)
        return int(np.argmax(means)), means

    return (lambda: SelectThenEstimate(epsilon=1.0, random_state=0).fit(
                X, curator_mask=curator),
            "numpy mean+argmax", baseline)


def case_dp_logistic(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.learners import DPLogisticRegression

    X, y = _linear(n)
    return (lambda: DPLogisticRegression(epsilon=1.0, data_norm=5.0, classes=[0, 1],
                                         random_state=0).fit(X, y),
            "LogisticRegression", lambda: LogisticRegression().fit(X, y))


def case_private_parity(n):
    from sklearn.linear_model import LogisticRegression

    from skhybrid.learners import PrivateParityClassifier

    rng = np.random.default_rng(0)
    X = _bits(n, 10, rng)
    y = X @ np.array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0]) % 2
    return (lambda: PrivateParityClassifier(epsilon=1.0, classes=[0, 1],
                                            random_state=0).fit(X, y),
            "LogisticRegression*", lambda: LogisticRegression().fit(X, y))


def case_private_search(n):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV

    from skhybrid.learners import DPLogisticRegression
    from skhybrid.model_selection import PrivateSearchCV

    X, y = _linear(n)
    grid = {"C": [0.1, 1.0]}
    return (lambda: PrivateSearchCV(DPLogisticRegression(data_norm=5.0, classes=[0, 1]), grid,
                                    epsilon=1.0, random_state=0).fit(X, y),
            "GridSearchCV(LogisticRegression)",
            lambda: GridSearchCV(LogisticRegression(), grid, cv=2).fit(X, y))


def case_public_fit(n):
    from sklearn.preprocessing import StandardScaler

    from skhybrid.preprocessing import PublicFitTransformer

    X, _ = _linear(n)
    public = np.arange(n) < n // 2
    return (lambda: PublicFitTransformer(StandardScaler()).fit(X, public_mask=public),
            "StandardScaler (public rows)", lambda: StandardScaler().fit(X[public]))


CASES = {
    "HardMarginLinearSVC": case_hard_margin,
    "NoisySGDClassifier": case_noisy_sgd,
    "ParityTransfer": case_parity_transfer,
    "SubsampleTestReweigh": case_str,
    "PPMHalfspaceClassifier": case_ppm,
    "DiscrepancyAdaptationRegressor": case_adaptation,
    "LocalThresholdClassifier": case_local_threshold,
    "ParityThresholdClassifier": case_parity_threshold,
    "ParityAndThresholdClassifier": case_parity_and_threshold,
    "SelectThenEstimate": case_select_estimate,
    "DPLogisticRegression": case_dp_logistic,
    "PrivateParityClassifier": case_private_parity,
    "PrivateSearchCV": case_private_search,
    "PublicFitTransformer": case_public_fit,
}


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _measured(fn):
    """Seconds and peak MB the call adds to the resident set (hiwater reset before it)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
    except OSError:
        pass
    before = _status_kb("VmRSS")
    t0 = time.perf_counter()
    fn()
    seconds = time.perf_counter() - t0
    return seconds, max(0, _status_kb("VmHWM") - before) / 1024


def child(name, n, repeats):
    from threadpoolctl import threadpool_limits

    warnings.filterwarnings("ignore")
    with threadpool_limits(limits=1):
        def emit(**kw):
            print(json.dumps(kw), flush=True)

        try:
            warm_est, base_name, warm_base = CASES[name](2000)
            for fn in (warm_est, warm_base):
                try:
                    fn()
                except Exception:  # noqa: BLE001 -- the timed fit reports it
                    pass
            del warm_est, warm_base
            est, base_name, base = CASES[name](n)
        except Exception as exc:  # noqa: BLE001
            emit(who="setup", error=f"{type(exc).__name__}: {str(exc)[:400]}")
            return
        emit(who="baseline-name", name=base_name)
        failed = set()
        for r in range(repeats):
            order = [("est", est), ("base", base)]
            for who, fn in order if r % 2 == 0 else order[::-1]:
                if who in failed:
                    continue
                try:
                    seconds, mb = _measured(fn)
                except Exception as exc:  # noqa: BLE001
                    failed.add(who)
                    emit(who=who, error=f"{type(exc).__name__}: {str(exc)[:400]}")
                    continue
                emit(who=who, seconds=seconds, mb=mb)


# ---------------------------------------------------------------- parent

def run_case(name, n, repeats, timeout):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MALLOC_MMAP_THRESHOLD_="131072")
    # A caller's PYTHONPATH comes first (compare_revisions.py puts another version of the
    # package there), then this checkout, ahead of an installed skhybrid.
    env["PYTHONPATH"] = os.pathsep.join([p for p in [env.get("PYTHONPATH")] if p] + [str(ROOT)])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", name, str(n), str(repeats)]
    status = "ok"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        if proc.returncode < 0:
            status = f"killed (signal {-proc.returncode}; out of memory?)"
        elif proc.returncode != 0:
            status = "crashed: " + (err.strip().splitlines() or ["?"])[-1][:100]
    except subprocess.TimeoutExpired:
        proc.kill()  # the fits that finished before the timeout are still reported
        out, _ = proc.communicate()
        status = f"timeout ({timeout:.0f} s)"
    res = {"status": status, "base_name": "", "est": [], "base": [], "est_err": None,
           "base_err": None}
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        who = rec["who"]
        if who == "baseline-name":
            res["base_name"] = rec["name"]
        elif who == "setup":
            res["status"] = "setup failed: " + rec["error"]
        elif "error" in rec:
            res[who + "_err"] = rec["error"]
        else:
            res[who].append((rec["seconds"], rec["mb"]))
    return res


def _cell(samples, err, status):
    if samples:
        t = statistics.median(s for s, _ in samples)
        mb = max(m for _, m in samples)
        return t, f"{t:>9.3f} {mb:>8.0f}"
    reason = err or status
    return None, f"{reason.split(':')[0][:18]:>18}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=3,
                    help="repeats at sizes below 10^6 (one at 10^6 and above)")
    ap.add_argument("--repeats-large", type=int, default=1)
    ap.add_argument("--only", nargs="+", default=None, help="estimator names")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    ap.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        name, n, repeats = args.child
        child(name, int(n), int(repeats))
        return 0

    names = [c for c in CASES if not args.only or c in args.only]
    print("BLAS threads: 1 (OPENBLAS_NUM_THREADS=1 + threadpoolctl in each child); one child "
          f"process per case, timeout {args.timeout:.0f} s; epsilon = 1; median fit s of "
          f"{args.repeats} repeats (of {args.repeats_large} at >= 10^6 rows), contenders "
          "alternating; MB = peak RSS a fit adds (VmHWM reset before the fit, minus RSS "
          "before it; max over repeats); * = timing reference only (no scikit-learn "
          "parity learner)", flush=True)
    print(f"{'estimator':<31}{'rows':>9} {'skhybrid s':>9} {'MB':>8} | "
          f"{'baseline':<33}{'s':>9} {'MB':>8} {'ratio':>8}", flush=True)
    times = {}
    for name in names:
        for n in args.sizes:
            reps = args.repeats_large if n >= 1_000_000 else args.repeats
            res = run_case(name, n, reps, args.timeout)
            t_est, est = _cell(res["est"], res["est_err"], res["status"])
            t_base, base = _cell(res["base"], res["base_err"], res["status"])
            ratio = f"{t_est / t_base:>8.1f}" if t_est and t_base else f"{'-':>8}"
            times[name, n] = t_est
            note = "" if res["status"] == "ok" else "  [" + res["status"] + "]"
            print(f"{name:<31}{n:>9} {est:>18} | {res['base_name']:<33}{base:>18} {ratio}{note}",
                  flush=True)
            if res["est_err"]:
                print(f"{'':<31}{'':>9} skhybrid: {res['est_err']}", flush=True)
    sizes = sorted(args.sizes)
    if len(sizes) >= 2:
        lo, hi = sizes[-2], sizes[-1]
        print(f"\ngrowth t({hi})/t({lo}) (linear = {hi / lo:.0f}):")
        for name in names:
            a, b = times.get((name, lo)), times.get((name, hi))
            g = f"{b / a:.1f}" if a and b else "-"
            print(f"  {name:<31}{g:>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
