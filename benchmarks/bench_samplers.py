"""Exact lattice samplers vs numpy's floating-point samplers, 10^6 draws.

Contenders, interleaved (alternating order) and repeated, medians printed with the ratio:

- discrete Laplace (Canonne, Kamath & Steinke 2020, Algorithm 2; scale t = 1024 lattice
  steps) vs ``Generator.laplace``;
- discrete Gaussian (CKS 2020, Algorithm 3; sigma = 2048 steps) vs ``Generator.normal``;
- the whole ``laplace_mechanism`` on a vector of 10^6 values (snap + noise) vs
  ``x + Generator.laplace``.

Then the selections, one call at a time (what a Frank-Wolfe step or an audit makes):
µs per call of the exponential mechanism and report-noisy-min at m = 10 and 1000
candidates (normal scores, ε = 1, Δ = 1), and seconds for one exponential-mechanism call
over 10^6 candidates with one clear winner at ε = 1000 (uniform proposals would need about
10^6 of them), and for PPM's final draw of a score level over 51M candidates in 1801
levels whose best 60 hold one candidate each (the draw of the streamed selection).
Compare versions with ``benchmarks/compare_revisions.py``.

BLAS is irrelevant here (no linear algebra); threads are pinned to one anyway.

    python benchmarks/bench_samplers.py [--n 1000000] [--repeats 5] [--calls 2000]
"""

import argparse
import statistics
import time
from fractions import Fraction

import numpy as np
from threadpoolctl import threadpool_limits

from skhybrid.mechanisms import ExponentialMechanism, ReportNoisyMax, _noise, laplace_mechanism
from skhybrid.mechanisms._exact_selection import dyadic_floor
from skhybrid.ppm._scoring import _sample_level


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000,
                        help="calls per timing of the per-call selection rows")
    parser.add_argument("--only-selection", action="store_true")
    args = parser.parse_args(argv)
    if args.only_selection:
        return selections(args)
    n = args.n
    x = np.linspace(-3, 3, n)
    pairs = {
        "discrete Laplace (t=1024)": (
            lambda rng: _noise.discrete_laplace(rng, 1024, n),
            lambda rng: rng.laplace(0.0, 1024.0, n)),
        "discrete Gaussian (sigma=2048)": (
            lambda rng: _noise.discrete_gaussian(rng, 2048, n),
            lambda rng: rng.normal(0.0, 2048.0, n)),
        "laplace_mechanism on 10^6 values": (
            lambda rng: laplace_mechanism(x, sensitivity=float(n), epsilon=float(n), rng=rng),
            lambda rng: x + rng.laplace(0.0, 1.0, n)),
    }
    print(f"# {n:,} draws, median of {args.repeats} interleaved repeats, one BLAS thread")
    print(f"{'sampler':<34} {'exact s':>9} {'numpy s':>9} {'ratio':>7}")
    with threadpool_limits(1, "blas"):
        for name, (exact, baseline) in pairs.items():
            times = {"exact": [], "numpy": []}
            for r in range(args.repeats):
                order = (("exact", exact), ("numpy", baseline))
                for who, fn in (order if r % 2 == 0 else order[::-1]):
                    rng = np.random.default_rng(r)
                    t = time.perf_counter()
                    fn(rng)
                    times[who].append(time.perf_counter() - t)
            a, b = statistics.median(times["exact"]), statistics.median(times["numpy"])
            print(f"{name:<34} {a:9.3f} {b:9.3f} {a / b:6.1f}x")
    selections(args)


def selections(args):
    """Per-call cost of the selections (medians of interleaved repeats)."""
    rng = np.random.default_rng(0)
    cases = {}
    for m in (10, 1000):
        scores = rng.normal(size=m)
        exp = ExponentialMechanism(1.0, 1.0)
        rnm = ReportNoisyMax(1.0, 1.0, minimize=True)
        cases[f"exponential mechanism, m={m}"] = (lambda r, e=exp, s=scores: e(s, r), "us")
        cases[f"report-noisy-min, m={m}"] = (lambda r, e=rnm, s=scores: e(s, r), "us")
    winner = np.zeros(10**6)
    winner[123] = 1.0
    big = ExponentialMechanism(1000.0, 1.0)
    cases["exponential, 10^6 cand., eps=1000, one winner"] = (lambda r: big(winner, r), "s")
    # PPM's final draw of a score level (scores -errors, ε = 1: γ = 1/2 per error) over
    # 51M candidates in 1801 levels, the 60 best holding one candidate each.
    levels = np.arange(-2000, -199, dtype=np.int64)
    gap = levels[-1] - levels
    counts = np.exp(-((gap - 900) / 400.0) ** 2)
    counts = (counts * (51e6 / counts.sum())).astype(np.int64) + 1
    counts[-60:] = 1
    a, b = dyadic_floor(Fraction(1, 2))
    cases["PPM level draw, 51M cand., 1801 levels"] = (
        lambda r: _sample_level(r, levels, counts, a, b, int(counts.sum())), "s")
    times = {name: [] for name in cases}
    with threadpool_limits(1, "blas"):
        for rep in range(args.repeats):
            for name, (fn, unit) in (cases.items() if rep % 2 == 0 else
                                     reversed(list(cases.items()))):
                r = np.random.default_rng(rep)
                calls = args.calls if unit == "us" else 1
                t = time.perf_counter()
                for _ in range(calls):
                    fn(r)
                times[name].append((time.perf_counter() - t) / calls)
    print(f"# selections: median of {args.repeats} interleaved repeats "
          f"({args.calls} calls each for the per-call rows)")
    for name, (_, unit) in cases.items():
        med = statistics.median(times[name])
        value = f"{med * 1e6:9.1f} us/call" if unit == "us" else f"{med:9.4f} s"
        print(f"{name:<46} {value}")


if __name__ == "__main__":
    main()
