"""Real-data panel: every estimator family that fits scikit-learn's bundled data sets.

For each family, accuracy (classification) or test MSE (regression) against ε, side by side
with the baselines a user would compare against: the non-private model, the model fitted on
the public (or source) rows alone, the all-private DP model and, where it can be run,
diffprivlib. Numbers are means over ``--seeds`` train/test splits (the split seed and the
mechanism seed differ, so noise is never reused across splits).

Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_real_data.py            # full panel
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_real_data.py --quick    # 2 seeds, fewer eps
    python benchmarks/bench_real_data.py --diffprivlib-python /path/to/python

diffprivlib does not import beside scikit-learn >= 1.8; give the interpreter of a separate
environment that has it (e.g. one with scikit-learn 1.6 and diffprivlib) and the panel runs
its LogisticRegression on the very same splits in a subprocess.

What fits which data set:

- DPLogisticRegression: breast cancer, wine, digits (10 % of the training rows public,
  standardised with statistics of the public rows only; ``data_norm`` = sqrt(d), a public
  choice, rows clipped to it);
- PPMHalfspaceClassifier (privacy follows the label): breast cancer, benign rows public;
- NoisySGDClassifier (every row private): breast cancer;
- SubsampleTestReweigh (curator rows from a source population, local agents from the
  target): breast cancer split at the median "mean texture" (source below, target above);
- DiscrepancyAdaptationRegressor (labelled public source, unlabelled private target):
  diabetes, source = BMI below the median, target = above;
- LocalThresholdClassifier (a threshold on one feature, local agents): breast cancer,
  "worst area" quantised to 8 bits on a public range.

The parity learners (PrivateParityClassifier, ParityThreshold*) need parity-structured
binary data, which no bundled data set has; they are left out of this panel.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore")  # convergence chatter of the baselines; the panel is numbers

EPS_FULL = (0.1, 0.5, 1.0, 2.0, 5.0)
EPS_QUICK = (0.5, 1.0, 5.0)


def _with(est, **params):
    """Set only the parameters the installed version has (the panel runs on old and new)."""
    known = est.get_params()
    est.set_params(**{k: v for k, v in params.items() if k in known})
    return est


def _public_scaled(X_tr, X_te, public):
    """Standardise with the public rows' statistics only (free), as a user should."""
    scaler = StandardScaler().fit(X_tr[public])
    return scaler.transform(X_tr), scaler.transform(X_te)


def _split(X, y, seed, public_fraction=0.1, stratify=True):
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=y if stratify else None)
    rng = np.random.default_rng(10_000 + seed)
    public = rng.random(len(y_tr)) < public_fraction
    return X_tr, X_te, y_tr, y_te, public


def logistic_panel(name, X, y, seeds, eps_grid, dpl_python):
    from skhybrid import DPLogisticRegression

    rows = {}
    dpl_jobs = []
    classes = np.unique(y)  # the label set of a bundled data set is public knowledge
    for seed in seeds:
        X_tr, X_te, y_tr, y_te, public = _split(X, y, seed)
        X_tr, X_te = _public_scaled(X_tr, X_te, public)
        norm = float(np.sqrt(X.shape[1]))
        acc = lambda m: float(np.mean(m.predict(X_te) == y_te))  # noqa: E731
        rows.setdefault(("non-private LR (all rows)", None), []).append(
            acc(LogisticRegression(max_iter=5000).fit(X_tr, y_tr)))
        if len(np.unique(y_tr[public])) > 1:
            pub = acc(LogisticRegression(max_iter=5000).fit(X_tr[public], y_tr[public]))
        else:
            pub = float(np.mean(y_te == y_tr[public][0]))
        rows.setdefault(("public rows only (LR)", None), []).append(pub)
        for eps in eps_grid:
            base = dict(epsilon=eps, data_norm=norm, classes=classes,
                        random_state=1_000 * seed + int(eps * 10))
            dp_all = _with(DPLogisticRegression(), **base).fit(X_tr, y_tr)
            rows.setdefault(("DP, every row private", eps), []).append(acc(dp_all))
            dp_pub = _with(DPLogisticRegression(), **base).fit(X_tr, y_tr, public_mask=public)
            rows.setdefault(("DP with public rows (default)", eps), []).append(acc(dp_pub))
            dpl_jobs.append((seed, eps, X_tr, y_tr, X_te, y_te, norm))
    if dpl_python:
        for (eps, a) in _diffprivlib_accuracies(dpl_python, dpl_jobs):
            rows.setdefault(("diffprivlib LR, every row private", eps), []).append(a)
    return [(name, "DPLogisticRegression", k[0], k[1], v) for k, v in rows.items()]


_DPL_SCRIPT = r"""
import json, sys, warnings
import numpy as np
warnings.filterwarnings("ignore")
from diffprivlib.models import LogisticRegression
out = []
data = np.load(sys.argv[1], allow_pickle=True)
for job in json.loads(sys.argv[2]):
    k = job["key"]
    clf = LogisticRegression(epsilon=job["eps"], data_norm=job["norm"], random_state=job["rs"])
    clf.fit(data["Xtr" + k], data["ytr" + k])
    out.append([job["eps"], float(np.mean(clf.predict(data["Xte" + k]) == data["yte" + k]))])
print(json.dumps(out))
"""


def _diffprivlib_accuracies(python, jobs):
    with tempfile.TemporaryDirectory() as tmp:
        arrays, spec = {}, []
        for i, (seed, eps, X_tr, y_tr, X_te, y_te, norm) in enumerate(jobs):
            k = str(i)
            arrays.update({"Xtr" + k: X_tr, "ytr" + k: y_tr, "Xte" + k: X_te, "yte" + k: y_te})
            spec.append({"key": k, "eps": eps, "norm": norm, "rs": 1_000 * seed + int(eps * 10)})
        path = os.path.join(tmp, "data.npz")
        np.savez(path, **arrays)
        res = subprocess.run([python, "-c", _DPL_SCRIPT, path, json.dumps(spec)],
                             capture_output=True, text=True, check=True)
    return [tuple(r) for r in json.loads(res.stdout)]


def ppm_panel(seeds, eps_grid):
    from skhybrid.ppm import PPMHalfspaceClassifier

    X, y = load_breast_cancer(return_X_y=True)
    y = 1 - y  # 1 = malignant: the private class; benign rows are public
    rows = {}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te, _ = _split(X, y, seed)
        public = y_tr == 0
        X_tr, X_te = _public_scaled(X_tr, X_te, public)
        # PPM's candidate class grows fast with the dimension: 3 public principal directions.
        mean = X_tr[public].mean(axis=0)
        _, _, Vt = np.linalg.svd(X_tr[public] - mean, full_matrices=False)
        P = Vt[:3].T
        Z_tr, Z_te = (X_tr - mean) @ P, (X_te - mean) @ P
        acc = lambda m, A=Z_te: float(np.mean(m.predict(A) == y_te))  # noqa: E731
        rows.setdefault(("non-private LR (same 3 features)", None), []).append(
            acc(LogisticRegression(max_iter=5000).fit(Z_tr, y_tr)))
        rows.setdefault(("predict the majority class", None), []).append(
            float(np.mean(y_te == np.bincount(y_tr).argmax())))
        for eps in eps_grid:
            clf = _with(PPMHalfspaceClassifier(), epsilon=eps, classes=[0, 1],
                        random_state=1_000 * seed + int(eps * 10))
            clf.fit(Z_tr, y_tr, public_mask=public)
            rows.setdefault(("PPM (default candidates)", eps), []).append(acc(clf))
    return [("breast_cancer", "PPMHalfspaceClassifier", k[0], k[1], v) for k, v in rows.items()]


def sgd_panel(seeds, eps_grid):
    from skhybrid.transfer import NoisySGDClassifier

    X, y = load_breast_cancer(return_X_y=True)
    rows = {}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te, public = _split(X, y, seed)
        X_tr, X_te = _public_scaled(X_tr, X_te, public)
        norm = float(np.sqrt(X.shape[1]))
        X_tr, X_te = X_tr / norm, X_te / norm  # rows of norm about 1: the Lipschitz bound
        acc = lambda m: float(np.mean(m.predict(X_te) == y_te))  # noqa: E731
        rows.setdefault(("non-private LR", None), []).append(
            acc(LogisticRegression(max_iter=5000).fit(X_tr, y_tr)))
        for eps in eps_grid:
            clf = _with(NoisySGDClassifier(), epsilon=eps, delta=1e-5, classes=[0, 1],
                        random_state=1_000 * seed + int(eps * 10))
            rows.setdefault(("NoisySGDClassifier (defaults)", eps), []).append(
                acc(clf.fit(X_tr, y_tr)))
    return [("breast_cancer", "NoisySGDClassifier", k[0], k[1], v) for k, v in rows.items()]


def _median_shift(feature, seed, test_share):
    """Source rows (feature at or below its median) and the target rows above it, split
    at random into test rows and rows to fit on. Returns (source, fit_rows, test_rows)."""
    source = feature <= np.median(feature)
    target = np.flatnonzero(~source)
    np.random.default_rng(seed).shuffle(target)
    cut = int(len(target) * test_share)
    return np.flatnonzero(source), target[cut:], target[:cut]


def str_panel(seeds, eps_grid):
    from skhybrid.transfer import SubsampleTestReweigh

    X, y = load_breast_cancer(return_X_y=True)
    texture = X[:, 1]
    rows = {}
    for seed in seeds:
        source, agents_idx, test_idx = _median_shift(texture, seed, 1 / 3)
        train = np.concatenate([source, agents_idx])
        curator = np.r_[np.ones(len(source), bool), np.zeros(len(agents_idx), bool)]
        X_tr, y_tr = X[train], y[train]
        X_tr, X_te = _public_scaled(X_tr, X[test_idx], curator)  # curator-side statistics
        y_te = y[test_idx]
        acc = lambda m: float(np.mean(m.predict(X_te) == y_te))  # noqa: E731
        rows.setdefault(("source-only LR (non-private)", None), []).append(
            acc(LogisticRegression(max_iter=5000).fit(X_tr[curator], y_tr[curator])))
        rows.setdefault(("majority class", None), []).append(
            float(np.mean(y_te == np.bincount(y_tr[curator]).argmax())))
        for eps in eps_grid:
            clf = _with(SubsampleTestReweigh(), epsilon=eps, classes=[0, 1],
                        random_state=1_000 * seed + int(eps * 10))
            try:
                clf.fit(X_tr, y_tr, curator_mask=curator)
                score = acc(clf)
            except ValueError as exc:  # defaults that refuse: recorded, not hidden
                score = float("nan")
                rows.setdefault(("STR refused", eps), []).append(str(exc)[:60])
            rows.setdefault(("STR (defaults)", eps), []).append(score)
    return [("breast_cancer (shift)", "SubsampleTestReweigh", k[0], k[1], v)
            for k, v in rows.items()]


def adaptation_panel(seeds, eps_grid):
    from skhybrid.adaptation import DiscrepancyAdaptationRegressor

    X, y = load_diabetes(return_X_y=True)
    bmi = X[:, 2]
    rows = {}
    for seed in seeds:
        source, tgt_idx, test_idx = _median_shift(bmi, seed, 1 / 2)
        Xs, ys = X[source], y[source]
        X_fit = np.vstack([Xs, X[tgt_idx]])
        y_fit = np.r_[ys, np.full(len(tgt_idx), np.nan)]
        public = np.r_[np.ones(len(ys), bool), np.zeros(len(tgt_idx), bool)]
        X_te, y_te = X[test_idx], y[test_idx]
        mse = lambda pred: float(np.mean((pred - y_te) ** 2))  # noqa: E731
        rows.setdefault(("predict the public label mean", None), []).append(mse(np.full(len(y_te), ys.mean())))
        rows.setdefault(("Ridge on the source (non-private)", None), []).append(
            mse(Ridge(alpha=1e-3).fit(Xs, ys).predict(X_te)))
        for eps in eps_grid:
            reg = _with(DiscrepancyAdaptationRegressor(), epsilon=eps,
                        random_state=1_000 * seed + int(eps * 10))
            reg.fit(X_fit, y_fit, public_mask=public)
            rows.setdefault(("DiscrepancyAdaptation (defaults)", eps), []).append(
                mse(reg.predict(X_te)))
    return [("diabetes (shift)", "DiscrepancyAdaptationRegressor", k[0], k[1], v)
            for k, v in rows.items()]


def threshold_panel(seeds, eps_grid):
    from skhybrid.hybrid import LocalThresholdClassifier

    X, y = load_breast_cancer(return_X_y=True)
    area = X[:, 23]  # "worst area"; a public range of 0..4300 (no private row sets it)
    code = np.clip(np.floor(area / 4300 * 256), 0, 255).astype(int)
    y = 1 - y  # malignant (large area) = 1
    rows = {}
    for seed in seeds:
        Xq = code[:, None]
        X_tr, X_te, y_tr, y_te, _ = _split(Xq, y, seed)
        acc = lambda m: float(np.mean(m.predict(X_te) == y_te))  # noqa: E731
        best = max(np.mean((X_te[:, 0] >= t) == y_te) for t in range(256))
        rows.setdefault(("best threshold on the test rows (oracle)", None), []).append(float(best))
        for eps in eps_grid:
            clf = _with(LocalThresholdClassifier(), epsilon=eps, threshold_bits=8, classes=[0, 1],
                        random_state=1_000 * seed + int(eps * 10))
            clf.fit(X_tr, y_tr, curator_mask=np.zeros(len(y_tr), bool))
            rows.setdefault(("LocalThreshold (agents only)", eps), []).append(acc(clf))
    return [("breast_cancer (1 feature)", "LocalThresholdClassifier", k[0], k[1], v)
            for k, v in rows.items()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds, 3 values of epsilon")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", default=None, help="comma-separated families to run")
    parser.add_argument("--diffprivlib-python", default=None)
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args(argv)
    seeds = range(2 if args.quick else args.seeds)
    eps_grid = EPS_QUICK if args.quick else EPS_FULL

    panels = {
        "logistic": lambda: sum((
            logistic_panel(name, *loader(return_X_y=True), seeds, eps_grid, args.diffprivlib_python)
            for name, loader in (("breast_cancer", load_breast_cancer), ("wine", load_wine),
                                 ("digits", load_digits))), []),
        "ppm": lambda: ppm_panel(seeds, eps_grid),
        "sgd": lambda: sgd_panel(seeds, eps_grid),
        "str": lambda: str_panel(seeds, eps_grid),
        "adaptation": lambda: adaptation_panel(seeds, eps_grid),
        "threshold": lambda: threshold_panel(seeds, eps_grid),
    }
    chosen = args.only.split(",") if args.only else list(panels)
    print(f"# real-data panel: {len(seeds)} seeds, eps in {eps_grid}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    all_rows = []
    for fam in chosen:
        t0 = time.perf_counter()
        rows = panels[fam]()
        all_rows += rows
        print(f"\n## {fam}  ({time.perf_counter() - t0:.0f} s)")
        print(f"{'data':<26} {'contender':<40} {'eps':>5} {'mean':>8} {'sd':>7}")
        for data, _, who, eps, vals in rows:
            nums = [v for v in vals if isinstance(v, float)]
            if not nums:
                print(f"{data:<26} {who:<40} {eps if eps else '-':>5} {vals[0]}")
                continue
            eps_s = "-" if eps is None else f"{eps:g}"
            print(f"{data:<26} {who:<40} {eps_s:>5} {np.nanmean(nums):8.3f} {np.nanstd(nums):7.3f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([[d, f, w, e, [v for v in vals if isinstance(v, float)]]
                       for d, f, w, e, vals in all_rows], fh)


if __name__ == "__main__":
    sys.exit(main())
