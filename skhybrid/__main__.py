"""Command line: ``python -m skhybrid demo | reproduce NAME | budget LEDGER``."""

import argparse
import sys

import numpy as np

__all__ = ["main"]


def _demo_logistic(accountant, seed):
    """DPLogisticRegression on breast cancer, 10% public rows, vs its non-private baseline."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from .learners import DPLogisticRegression
    from .preprocessing import PublicFitTransformer

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    public = np.random.default_rng(seed).random(len(ytr)) < 0.1
    # Scaling and a 5-d projection learnt from the public rows only: free, and fewer
    # dimensions means less noise for objective perturbation.
    reduce = make_pipeline(StandardScaler(), PCA(5))
    reduce = PublicFitTransformer(reduce).fit(Xtr, public_mask=public)
    Xtr, Xte = reduce.transform(Xtr), reduce.transform(Xte)
    params = dict(C=0.1, data_norm=3.0)
    baseline = DPLogisticRegression(epsilon=np.inf, **params).fit(Xtr, ytr).score(Xte, yte)
    rows = []
    for eps in (0.1, 1.0, 5.0):
        clf = DPLogisticRegression(epsilon=eps, accountant=accountant, random_state=seed, **params)
        clf.fit(Xtr, ytr, public_mask=public)
        rows.append(("DPLogisticRegression", "breast cancer, 10% public", eps, "accuracy",
                     clf.score(Xte, yte), baseline, clf.privacy_spent_["central"]))
    return rows


DEMOS = [_demo_logistic]


def demo(seed=0, out=sys.stdout):
    """Run every learner against its non-private baseline and print a table."""
    from .accounting import PrivacyAccountant

    accountant = PrivacyAccountant(epsilon=100.0, delta=1e-5)
    header = (f"{'learner':<24} {'data':<28} {'epsilon':>8} {'metric':<9} {'private':>8} "
              f"{'baseline':>9} {'spent (eps, delta)':>20}")
    print(header, file=out)
    print("-" * len(header), file=out)
    for run in DEMOS:
        for name, data, eps, metric, value, base, spent in run(accountant, seed):
            print(f"{name:<24} {data:<28} {eps:>8.3g} {metric:<9} {value:>8.3f} {base:>9.3f} "
                  f"{f'({spent[0]:.3g}, {spent[1]:.2g})':>20}", file=out)
    print("\n" + accountant.report(), file=out)


def budget(ledger, out=sys.stdout):
    """Print the report of a SQLite ledger written by ``PrivacyAccountant(ledger=...)``."""
    from .accounting import PrivacyAccountant

    print(PrivacyAccountant(ledger=ledger).report(), file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m skhybrid", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="every learner vs its non-private baseline")
    p_demo.add_argument("--seed", type=int, default=0)
    p_rep = sub.add_parser("reproduce", help="a paper reproduction: prints a table, saves figures")
    p_rep.add_argument("name", nargs="?", help="experiment name (omit to list them)")
    p_rep.add_argument("--out", default="figures", help="folder for figures (default: figures)")
    p_rep.add_argument("--quick", action="store_true", help="a reduced run (as the slow tests)")
    p_rep.add_argument("--seed", type=int, default=0)
    p_budget = sub.add_parser("budget", help="report of a SQLite privacy ledger")
    p_budget.add_argument("ledger", help="path of the ledger file")
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(seed=args.seed)
    elif args.command == "reproduce":
        from . import experiments

        if args.name is None:
            print("\n".join(sorted(experiments.available())) or "no experiments registered")
        else:
            experiments.run(args.name, out_dir=args.out, quick=args.quick, seed=args.seed)
    elif args.command == "budget":
        budget(args.ledger)
    return 0


if __name__ == "__main__":
    sys.exit(main())
