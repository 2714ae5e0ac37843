"""Accounting cost: sequential spends, a huge self-composition, calibration share of fits.

Four measurements, each printed as medians over ``--repeats`` interleaved runs (the
contenders alternate, in rotating order), with Google's ``dp-accounting`` (the RDP
accountant) as the peer where it does the same job:

1. ``--spends`` sequential :meth:`PrivacyAccountant.spend` calls (in memory, budget
   checked each time, mixed Laplace and Gaussian events): the cost of the 10th and of
   the last spend (medians over windows of 10 calls) and their ratio — 1 means the
   cost does not grow with history — and the total. Peer: ``RdpAccountant.compose`` of
   a Gaussian event followed by ``get_epsilon`` per step (what a budget check needs).
2. One event with ``count=10**6`` composed at δ = 1e-5 (every view, incl. the exact
   optimal homogeneous one). Peer: ``RdpAccountant`` on a self-composed Laplace event.
3. NoisySGDClassifier at its defaults (n_steps=2000) on 2,000 rows: share of the fit
   spent calibrating the noise and computing the spend, with empty caches ("cold", the
   first fit in a process), the same on 1,990, 1,980, ... rows (one size per repeat: the
   search's path, hence its cost, changes with η = 1/n, and 2,000 is one sample of it)
   and after a fit with the same parameters ("warm", as in a search's refits); the old all-order bisection alone for comparison; and the peer's
   calibration of a Poisson-subsampled Gaussian to the same (ε, δ, steps)
   (``dp_accounting.calibrate_dp_mechanism`` with its RDP accountant: a different
   sampling model, shown for the order of magnitude).
4. Private SubsampleTestReweigh (DPLogisticRegression base, Algorithm 2, subsample size
   and rounds chosen by the accounting) on 100k curator + 40k local rows: share of the
   fit in composition maths (curator guarantee search, per-round calibration, charge).
5. Cold calibration share, each run in a fresh process (no cache, no warmed code path):
   the first NoisySGDClassifier fit at its defaults on 2,000 rows, and the first private
   SubsampleTestReweigh fit with a NoisySGDClassifier base (Algorithm 4: 20k curator +
   6k local rows, max_iter=3, n_steps=2000, as in the tests), each with the time spent
   in the noise calibration (``calibrate_subsampled_gaussian_mu``) and in the calibration
   plus the spend's accounting; the first NoisySGDClassifier fit with the calibration and
   the accounting skipped (their result given), whose difference to the first fit is what
   they add to it; and the calibration alone at NoisySGDClassifier's arguments in a fresh
   process. The runs alternate in rotating order; medians over the repeats.

BLAS is pinned to one thread (environment variables set before numpy is imported, and
threadpoolctl). Timings on a shared machine are noisy: compare ratios, not seconds.

    python benchmarks/bench_accountant.py [--repeats 5] [--spends 1000] [--sections 3 5]
    python benchmarks/bench_accountant.py --quick      # sections 1-3, 3 repeats
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from skhybrid.accounting import PrivacyAccountant, PrivacyEvent, compose_events  # noqa: E402
from skhybrid.accounting import _composition, _rdp  # noqa: E402
from skhybrid.transfer import _privacy  # noqa: E402

try:
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant
except ImportError:  # the peer is optional
    dp_accounting = None


def clear_caches():
    """Empty every calibration/composition cache (a "cold" first fit); the getattr ones
    exist only in some revisions (``compare_revisions.py`` runs this script on others)."""
    for fn in (_rdp._epsilon_cached, _rdp._calibrate_cached, _rdp._rdp_one,
               getattr(_rdp, "_coarse_rdp_all", None), getattr(_rdp, "_conversion_cached", None),
               getattr(_rdp, "_conversion_terms", None),
               _composition._log_binom,
               _composition._calibrate_pure_cached, _composition._optimal_homogeneous_epsilon,
               _privacy.str_curator_guarantee, _privacy._composed_epsilon):
        if fn is not None:
            fn.cache_clear()


@contextlib.contextmanager
def timed(targets):
    """Sum the wall time spent inside the (module, name) functions (outermost calls only)."""
    box = {"t": 0.0, "depth": 0}
    saved = []
    for module, name in targets:
        fn = getattr(module, name)
        saved.append((module, name, fn))

        def wrapper(*args, _fn=fn, **kwargs):
            box["depth"] += 1
            start = time.perf_counter()
            try:
                return _fn(*args, **kwargs)
            finally:
                box["depth"] -= 1
                if box["depth"] == 0:
                    box["t"] += time.perf_counter() - start

        setattr(module, name, wrapper)
    try:
        yield box
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


# --------------------------------------------------------------------------- 1. spends


def spends_skhybrid(n):
    acc = PrivacyAccountant(epsilon=1e9, delta=1e-5)
    events = [PrivacyEvent("laplace", "pure", 1e-3 * (1 + i % 3)) if i % 2 else
              PrivacyEvent("gauss", "gaussian", 0.01, 1e-9, mu=0.05) for i in range(n)]
    out = []
    for e in events:
        t = time.perf_counter()
        acc.spend([e])
        out.append(time.perf_counter() - t)
    return out


def spends_peer(n):
    acc = RdpAccountant()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        acc.compose(dp_accounting.GaussianDpEvent(20.0))
        acc.get_epsilon(1e-5)
        out.append(time.perf_counter() - t)
    return out


def window(costs, i):
    return statistics.median(costs[max(0, i - 5): i + 5])


# --------------------------------------------------------------------------- 2. count


def count_skhybrid():
    t = time.perf_counter()
    compose_events([PrivacyEvent("laplace", "pure", 1e-3, count=10**6)], 1e-5)
    compose_events([PrivacyEvent("gauss", "gaussian", 1e-3, 1e-12, count=10**6, mu=1e-3)], 1e-5)
    return time.perf_counter() - t


def count_peer():
    t = time.perf_counter()
    acc = RdpAccountant()
    acc.compose(dp_accounting.LaplaceDpEvent(1e3), count=10**6)
    acc.get_epsilon(1e-5)
    acc = RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(1e3), count=10**6)
    acc.get_epsilon(1e-5)
    return time.perf_counter() - t


# --------------------------------------------------------------------------- 3. SGD


def sgd_share(cold, n=2000):
    from sklearn.datasets import make_classification

    from skhybrid.transfer import NoisySGDClassifier, _sgd

    X, y = make_classification(2000, 10, random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    X, y = X[:n], y[:n]
    clf = NoisySGDClassifier(classes=[0, 1], random_state=0)
    if cold:
        clear_caches()
    else:
        clf.fit(X, y)
    with timed([(_sgd, "calibrated_noise_multiplier"), (_sgd, "sgd_step_epsilon")]) as box:
        t = time.perf_counter()
        clf.fit(X, y)
        total = time.perf_counter() - t
    return box["t"], total


def sgd_old_calibration():
    t = time.perf_counter()
    _rdp._calibrate_bisection(1.0, 1e-6, 1 / 2000, 2000)
    return time.perf_counter() - t


def sgd_peer_calibration():
    def make(z):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(1 / 2000, dp_accounting.GaussianDpEvent(z)),
            2000)

    t = time.perf_counter()
    dp_accounting.calibrate_dp_mechanism(RdpAccountant, make, 1.0, 1e-6,
                                         dp_accounting.mechanism_calibration.LowerEndpointAndGuess(
                                             0.01, 1.0))
    return time.perf_counter() - t


# --------------------------------------------------------------------------- 4. STR


_STR_DATA = {}


def str_share(cold):
    from skhybrid.datasets import make_shifted_gaussians
    from skhybrid.learners import DPLogisticRegression, _logistic
    from skhybrid.transfer import SubsampleTestReweigh, _str
    from skhybrid import _base

    if not _STR_DATA:
        _STR_DATA["d"] = make_shifted_gaussians(100_000, 40_000, n_features=5, random_state=0)
    X, y, mask = _STR_DATA["d"][:3]
    clf = SubsampleTestReweigh(DPLogisticRegression(data_norm=4.0), epsilon=1.0, delta=1e-5,
                               random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if cold:
            clear_caches()
        else:
            clf.fit(X, y, curator_mask=mask)
        targets = [(_str, "str_curator_guarantee"), (_str, "str_min_curator_size"),
                   (_str, "calibrated_noise_multiplier"),
                   (_logistic, "calibrate_pure_epsilon"), (_base, "compose_events")]
        with timed(targets) as box:
            t = time.perf_counter()
            clf.fit(X, y, curator_mask=mask)
            total = time.perf_counter() - t
    return box["t"], total


# ------------------------------------------------------------ 5. cold, fresh process


#: NoisySGDClassifier's calibration at the arguments of the cold fit (its defaults on
#: 2,000 rows): (ε, δ, η, steps).
_SGD_ARGS = (1.0, 1e-6, 1 / 2000, 2000)


def cold_child(which):
    """One measurement in this (fresh) process; prints ``calibration accounting total``."""
    import json

    from sklearn.datasets import make_classification

    from skhybrid.transfer import NoisySGDClassifier, _sgd, _str

    if which == "alone":
        t = time.perf_counter()
        _rdp.calibrate_subsampled_gaussian_mu(*_SGD_ARGS)
        print(json.dumps([time.perf_counter() - t, 0.0, 0.0]))
        return
    if which == "sgd_known":
        _known_calibration(_sgd)
        which = "sgd"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (both estimators calibrate through _sgd.calibrated_noise_multiplier, which also
        # computes the charge's ε; STR imported it by name)
        with timed([(_sgd, "calibrate_subsampled_gaussian_mu")]) as cal, \
                timed([(_sgd, "calibrated_noise_multiplier"),
                       (_str, "calibrated_noise_multiplier")]) as both:
            if which == "sgd":
                X, y = make_classification(2000, 10, random_state=0)
                X /= np.linalg.norm(X, axis=1).max()
                clf = NoisySGDClassifier(classes=[0, 1], random_state=0)
                t = time.perf_counter()
                clf.fit(X, y)
            else:
                from skhybrid.transfer import SubsampleTestReweigh

                rng = np.random.default_rng(0)
                Xc = rng.normal(size=(20_000, 2))
                Xl = rng.normal(size=(6_000, 2)) * np.array([0.3, 1.0])
                X = np.vstack([Xc, Xl])
                y = (X[:, 0] > 0.05).astype(int)
                mask = np.r_[np.ones(20_000, bool), np.zeros(6_000, bool)]
                base = NoisySGDClassifier(n_steps=2000, lipschitz=1.0, radius=3.0)
                clf = SubsampleTestReweigh(base, epsilon=1.0, delta=1e-5, alpha=0.1,
                                           chi2_bound=1.0, max_iter=3, local_batch_size=2000,
                                           classes=[0, 1], random_state=0)
                t = time.perf_counter()
                clf.fit(X, y, curator_mask=mask)
            total = time.perf_counter() - t
    print(json.dumps([cal["t"], both["t"], total]))


def _known_calibration(_sgd):
    """Make the fit skip the calibration and the spend's accounting: their result, computed
    by the parent, is passed in ``SKHYBRID_BENCH_KNOWN`` for the arguments it names."""
    import json

    known = json.loads(os.environ["SKHYBRID_BENCH_KNOWN"])

    def given(*args):
        if list(args) != known["args"]:
            raise RuntimeError(f"calibration called with {args}, known for {known['args']}")
        return tuple(known["result"])

    _sgd.calibrated_noise_multiplier = given


def known_calibration_env():
    """The environment of a child that skips the calibration: its result, computed here."""
    import json

    from skhybrid.transfer import _sgd

    known = {"args": list(_SGD_ARGS), "result": list(_sgd.calibrated_noise_multiplier(*_SGD_ARGS))}
    return dict(os.environ, SKHYBRID_BENCH_KNOWN=json.dumps(known))


def cold_run(which, env=None):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, __file__, "--child", which], capture_output=True,
                         text=True, check=True, env=env or dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--spends", type=int, default=1000)
    ap.add_argument("--sections", type=int, nargs="+", default=[1, 2, 3, 4, 5],
                    help="which measurements to run (1-5)")
    ap.add_argument("--quick", action="store_true",
                    help="3 repeats, 200 spends, no STR section (for run_all.py)")
    ap.add_argument("--child", choices=["sgd", "sgd_known", "str", "alone"],
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return cold_child(args.child)
    if args.quick:
        args.repeats, args.spends = min(args.repeats, 3), min(args.spends, 200)
        args.sections = [s for s in args.sections if s != 4]
    sec = set(args.sections)
    peer = dp_accounting is not None
    if not peer:
        print("dp-accounting not installed (pip install dp-accounting): peer columns skipped")
    print("BLAS pinned to 1 thread; medians of", args.repeats, "interleaved repeats\n")

    res = {k: [] for k in ("sk10", "sklast", "sktot", "pe10", "pelast", "petot", "skcount",
                           "pecount", "sgd_cold", "sgd_cold_n", "sgd_warm", "sgd_old", "sgd_peer",
                           "str_cold", "str_warm", "cold_sgd", "cold_sgd_known",
                           "cold_str", "cold_alone")}
    known_env = known_calibration_env() if 5 in sec else None
    with threadpool_limits(1):
        for r in range(args.repeats):
            jobs = ["sk", "peer"] if peer else ["sk"]
            for who in (jobs if r % 2 == 0 else jobs[::-1]) if sec & {1, 2} else ():
                if 1 in sec:
                    costs = (spends_skhybrid(args.spends) if who == "sk"
                             else spends_peer(args.spends))
                    key = "sk" if who == "sk" else "pe"
                    res[key + "10"].append(window(costs, 9))
                    res[key + "last"].append(window(costs, len(costs) - 5))
                    res[key + "tot"].append(sum(costs))
                if 2 in sec:
                    res[("sk" if who == "sk" else "pe") + "count"].append(
                        count_skhybrid() if who == "sk" else count_peer())
            for cold in ((True, False) if r % 2 == 0 else (False, True)):
                if 3 in sec:
                    c, t = sgd_share(cold)
                    res["sgd_cold" if cold else "sgd_warm"].append((c, t))
                    if cold:
                        res["sgd_cold_n"].append(sgd_share(True, n=1990 - 10 * r))
                if 4 in sec:
                    c, t = str_share(cold)
                    res["str_cold" if cold else "str_warm"].append((c, t))
            if 5 in sec:
                order = ("sgd", "sgd_known", "str", "alone")
                for which in order[r % len(order):] + order[:r % len(order)]:
                    res["cold_" + which].append(cold_run(which, known_env))
            if 3 in sec and r < 2:  # the old bisection is slow: two runs suffice
                res["sgd_old"].append(sgd_old_calibration())
            if 3 in sec and peer:
                res["sgd_peer"].append(sgd_peer_calibration())

    med = statistics.median
    if 1 in sec:
        print(f"1. {args.spends} sequential spends       10th (ms)  last (ms)  last/10th  "
              "total (s)")
        print(f"   skhybrid PrivacyAccountant     {med(res['sk10']) * 1e3:9.3f} "
              f"{med(res['sklast']) * 1e3:10.3f} {med(res['sklast']) / med(res['sk10']):10.2f} "
              f"{med(res['sktot']):10.3f}")
        if peer:
            print(f"   dp-accounting RdpAccountant    {med(res['pe10']) * 1e3:9.3f} "
                  f"{med(res['pelast']) * 1e3:10.3f} "
                  f"{med(res['pelast']) / med(res['pe10']):10.2f} {med(res['petot']):10.3f}")
            print(f"   ratio skhybrid/peer (total): {med(res['sktot']) / med(res['petot']):.2f}")
    if 2 in sec:
        print("\n2. count=10**6 event (Laplace + Gaussian), seconds")
        print(f"   skhybrid compose_events (all views): {med(res['skcount']):.4f}")
        if peer:
            print(f"   dp-accounting RdpAccountant:         {med(res['pecount']):.4f}"
                  f"   ratio {med(res['skcount']) / med(res['pecount']):.2f}")
    if 3 in sec:
        print("\n3. NoisySGDClassifier fit (2,000 rows, n_steps=2000): calibration share")
        for key, label in (("sgd_cold", "cold (first fit)"),
                           ("sgd_cold_n", "cold, n = 1990, 1980, ..."),
                           ("sgd_warm", "warm (same params)")):
            c = med([x[0] for x in res[key]])
            t = med([x[1] for x in res[key]])
            print(f"   {label:<27} calibration {c * 1e3:6.2f} ms of {t * 1e3:6.2f} ms  "
                  f"({100 * c / t:5.1f} %)", end="")
            shares = [x[0] / x[1] for x in res[key]]
            print(f"  shares {100 * min(shares):.1f}-{100 * max(shares):.1f} %"
                  if key == "sgd_cold_n" else "")
        print(f"   old all-order bisection alone: {med(res['sgd_old']) * 1e3:8.1f} ms")
        if peer:
            print(f"   dp-accounting calibrate_dp_mechanism (Poisson-subsampled Gaussian): "
                  f"{med(res['sgd_peer']) * 1e3:8.1f} ms")
    if 4 in sec:
        print("\n4. private SubsampleTestReweigh fit (100k curator, 40k local): composition share")
        for key, label in (("str_cold", "cold (first fit)"), ("str_warm", "warm (same params)")):
            c = med([x[0] for x in res[key]])
            t = med([x[1] for x in res[key]])
            print(f"   {label:<20} composition {c * 1e3:8.2f} ms of {t * 1e3:8.2f} ms  "
                  f"({100 * c / t:5.1f} %)")

    if 5 in sec:
        print("\n5. cold calibration share, each a fresh process (calibration; calibration + "
              "the spend's accounting)")
        for key, label in (("cold_sgd", "NoisySGDClassifier first fit"),
                           ("cold_str", "private STR (Algorithm 4) first fit")):
            c = med([x[0] for x in res[key]])
            b = med([x[1] for x in res[key]])
            t = med([x[2] for x in res[key]])
            print(f"   {label:<37} calibration {c * 1e3:6.2f} ms ({100 * c / t:4.1f} %), "
                  f"with accounting {b * 1e3:6.2f} ms ({100 * b / t:4.1f} %) of "
                  f"{t * 1e3:7.2f} ms")
        # What the fit saves when the result is known: the timers above would also count
        # a first use of numpy routines that the fit pays anyway (they agree within ~0.1 ms)
        t = med([x[2] for x in res["cold_sgd"]])
        k = med([x[2] for x in res["cold_sgd_known"]])
        print(f"   NoisySGDClassifier first fit, calibration and accounting given: {k * 1e3:6.2f} ms;"
              f" they add {(t - k) * 1e3:5.2f} ms ({100 * (t - k) / t:4.1f} %)")
        print(f"   calibration alone (1.0, 1e-6, 1/2000, 2000), fresh process: "
              f"{med([x[0] for x in res['cold_alone']]) * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()
