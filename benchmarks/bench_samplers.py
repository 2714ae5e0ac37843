"""Exact lattice samplers vs numpy's floating-point samplers, 10^6 draws.

Contenders, interleaved (alternating order) and repeated, medians printed with the ratio:

- discrete Laplace (Canonne, Kamath & Steinke 2020, Algorithm 2; scale t = 1024 lattice
  steps) vs ``Generator.laplace``;
- discrete Gaussian (CKS 2020, Algorithm 3; sigma = 2048 steps) vs ``Generator.normal``;
- the whole ``laplace_mechanism`` on a vector of 10^6 values (snap + noise) vs
  ``x + Generator.laplace``.

BLAS is irrelevant here (no linear algebra); threads are pinned to one anyway.

    python benchmarks/bench_samplers.py [--n 1000000] [--repeats 5]
"""

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skhybrid.mechanisms import _noise, laplace_mechanism


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    main()
