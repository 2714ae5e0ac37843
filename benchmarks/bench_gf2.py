"""Time the packed GF(2) solver against the row-by-row Python reference.

Random consistent systems A r = b with n rows and c columns (c = 64, 256;
n = 1e3, 1e4), plus the largest supported case (c = 1024, n = 1e5). The naive
solver is skipped when a smaller timing extrapolates (linearly in n) past 60 s,
and the table then shows the extrapolated time, marked "~".

Run: python benchmarks/bench_gf2.py   (about 30 s)
"""

import time

import numpy as np

from skhybrid.mechanisms.gf2 import _solve_affine_naive, pack_bits, solve_affine

NAIVE_LIMIT_S = 60.0


def _system(n, c, rng):
    A = rng.integers(0, 2, (n, c), dtype=np.uint8)
    b = (A.astype(np.int64) @ rng.integers(0, 2, c)) & 1
    return A, b


def _best_of(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    rng = np.random.default_rng(0)
    print(f"{'c':>5} {'n':>7} {'packed (s)':>11} {'naive (s)':>11} {'naive/packed':>13}")
    for c in (64, 256):
        naive_per_row = None
        for n in (1_000, 10_000):
            A, b = _system(n, c, rng)
            P = pack_bits(A)
            t_fast, fast = _best_of(lambda: solve_affine(P, b, n_features=c), 3)
            if naive_per_row is not None and naive_per_row * n > NAIVE_LIMIT_S:
                t_naive, mark = naive_per_row * n, "~"
            else:
                t_naive, naive = _best_of(lambda: _solve_affine_naive(A, b), 1)
                mark = ""
                np.testing.assert_array_equal(fast[1], naive[1])
                naive_per_row = t_naive / n
            print(f"{c:>5} {n:>7} {t_fast:>11.4f} {mark + format(t_naive, '.3f'):>11} "
                  f"{t_naive / t_fast:>12.1f}x")
    # Largest supported size: to keep the script short, time the reference on the
    # first 4000 rows (rank already saturated at c) and extrapolate linearly in n.
    n, c = 100_000, 1024
    A, b = _system(n, c, rng)
    t_fast, _ = _best_of(lambda: solve_affine(pack_bits(A), b, n_features=c), 1)
    t_part, _ = _best_of(lambda: _solve_affine_naive(A[:4000], b[:4000]), 1)
    t_naive = t_part * n / 4000
    print(f"{c:>5} {n:>7} {t_fast:>11.4f} {'~' + format(t_naive, '.1f'):>11} "
          f"{t_naive / t_fast:>12.1f}x")
    print("~ = extrapolated linearly in n from a smaller run (the reference was skipped).")


if __name__ == "__main__":
    main()
