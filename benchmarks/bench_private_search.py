"""Private tuning on real data: what PrivateSearchCV selects, against what it could have.

For each data set, split seed and total budget ε, a 20-candidate grid of
DPLogisticRegression (C × data_norm) is tuned four ways, and each result's test accuracy
is printed (mean over seeds):

- ``random candidate``: a candidate drawn uniformly from the grid, trained on all training
  rows at the whole ε (the accuracy averaged over the grid: tuning skipped; candidates
  whose fit fails closed in some split are left out of the mean and the max);
- ``best candidate (oracle)``: the candidate with the highest mean test accuracy, trained
  at the whole ε — what a free, perfect selection would give;
- ``PrivateSearchCV``: random stopping over the grid (E[K] = 40 runs), ε in total for the
  selection, the selected model and its score;
- ``PrivateSearchCV, public scores``: the same, scoring on held-out public rows only;
- ``non-private tuned LR``: scikit-learn's LogisticRegression tuned over C by 5-fold
  GridSearchCV on the same rows (no privacy).

10 % of the training rows are public; features are standardised with the public rows'
statistics. Run::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_private_search.py [--quick]
"""

import argparse
import os
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, ParameterGrid, train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skhybrid import DPLogisticRegression  # noqa: E402
from skhybrid.model_selection import PrivateSearchCV  # noqa: E402

warnings.filterwarnings("ignore")


def _grid(d):
    root = np.sqrt(d)
    return {"C": [0.01, 0.1, 1.0, 10.0, 100.0],
            "data_norm": [root / 4, root / 2, root, 2 * root]}


def _split(X, y, seed):
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                              stratify=y)
    public = np.random.default_rng(10_000 + seed).random(len(y_tr)) < 0.1
    scaler = StandardScaler().fit(X_tr[public])
    return scaler.transform(X_tr), scaler.transform(X_te), y_tr, y_te, public


def _accuracy_or_nan(acc, model, X, y, public):
    """A candidate that fails closed (no certified minimiser) releases nothing: NaN,
    left out of the grid's mean and max."""
    try:
        return acc(model.fit(X, y, public_mask=public))
    except RuntimeError:
        return np.nan


def run(name, X, y, seeds, eps_grid):
    classes = np.unique(y)  # the label set of a bundled data set is public knowledge
    grid = list(ParameterGrid(_grid(X.shape[1])))
    rows = {}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te, public = _split(X, y, seed)
        acc = lambda m: float(np.mean(m.predict(X_te) == y_te))  # noqa: E731
        tuned = GridSearchCV(LogisticRegression(max_iter=5000),
                             {"C": [0.01, 0.1, 1.0, 10.0, 100.0]}, cv=5).fit(X_tr, y_tr)
        rows.setdefault(("non-private tuned LR", None), []).append(acc(tuned))
        for eps in eps_grid:
            per_candidate = [_accuracy_or_nan(acc, DPLogisticRegression(
                epsilon=eps, classes=classes, random_state=1_000 * seed + i, **params),
                X_tr, y_tr, public) for i, params in enumerate(grid)]
            rows.setdefault(("per candidate", eps), []).append(per_candidate)
            for label, score_rows in (("PrivateSearchCV", "private"),
                                      ("PrivateSearchCV, public scores", "public")):
                start = time.perf_counter()
                search = PrivateSearchCV(DPLogisticRegression(classes=classes), _grid(X.shape[1]),
                                         epsilon=eps, score_rows=score_rows,
                                         random_state=7 * seed + 1).fit(
                    X_tr, y_tr, public_mask=public)
                rows.setdefault((label, eps), []).append(acc(search))
                rows.setdefault((label + " time", eps), []).append(time.perf_counter() - start)
    table = []
    for eps in eps_grid:
        per = np.mean(rows[("per candidate", eps)], axis=0)  # mean over seeds, per candidate
        best = float(np.nanmax(per))
        table.append((name, eps, "random candidate", float(np.nanmean(per)), best))
        table.append((name, eps, "best candidate (oracle)", best, best))
        for label in ("PrivateSearchCV", "PrivateSearchCV, public scores"):
            table.append((name, eps, label, float(np.mean(rows[(label, eps)])), best,
                          float(np.median(rows[(label + " time", eps)]))))
        table.append((name, eps, "non-private tuned LR",
                      float(np.mean(rows[("non-private tuned LR", None)])), best))
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="2 seeds instead of 10, breast cancer only")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args(argv)
    seeds = range(args.seeds or (2 if args.quick else 10))
    eps_grid = (0.5, 1.0, 2.0)
    print(f"{len(seeds)} seeds, 20 candidates, BLAS threads pinned to "
          f"{os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"{'data':<14}{'eps':>5}  {'method':<32}{'accuracy':>9}{'vs best':>9}{'fit s':>8}")
    data_sets = [("breast_cancer", load_breast_cancer), ("digits", load_digits)]
    for name, loader in data_sets[:1] if args.quick else data_sets:
        X, y = loader(return_X_y=True)
        for row in run(name, X, y, seeds, eps_grid):
            data, eps, label, accuracy, best = row[:5]
            secs = f"{row[5]:8.2f}" if len(row) > 5 else " " * 8
            print(f"{data:<14}{eps:>5}  {label:<32}{accuracy:>9.3f}{accuracy - best:>+9.3f}"
                  f"{secs}")


if __name__ == "__main__":
    main()
