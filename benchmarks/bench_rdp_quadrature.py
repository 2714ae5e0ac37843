"""The charged subsampled-Gaussian RDP integral: Simpson on 8,001 points vs Gauss–Legendre.

The accounting charges :func:`skhybrid.accounting._rdp._rdp_one`, Simpson's rule on 8,001
points of the integrand in s = ln(1 + t). This script measures its error against a 16x
finer Simpson grid (128,001 points, the reference) and that of composite Gauss–Legendre
rules on the same interval (``--panels`` x ``--nodes``), over a grid of η, μ and the
default orders, split by the size of the per-step RDP (above 100 an order can never
attain an accounting's minimum). Then the median time of one integral for each rule,
interleaved, BLAS on one thread (the integrand is elementwise; the sums are dot products)::

    python benchmarks/bench_rdp_quadrature.py [--quick] [--panels 64 128] [--nodes 8 12]
"""

import argparse
import math
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skhybrid.accounting import _rdp


def s_max(al, mu):
    return mu * mu / 2.0 + max(al - 1.0, 1.0) * mu * mu + 15.0 * mu


def rdp_simpson(al, eta, mu, n):
    """The accounting's formula on ``n`` points (n = 8001 is what it charges)."""
    if n == _rdp._N_GRID:
        return _rdp._rdp_one.__wrapped__(al, eta, mu)
    top_s = s_max(al, mu)
    log_f = _rdp._log_integrand(al, eta, mu, np.linspace(0.0, top_s, n))
    top = log_f.max()
    integral = (np.exp(log_f - top) @ _rdp._simpson_weights(n)) * (top_s / (n - 1) / 3.0)
    return _finish(al, eta, top, integral)


_NODES = {}


def rdp_gauss_legendre(al, eta, mu, panels, nodes):
    if nodes not in _NODES:
        _NODES[nodes] = np.polynomial.legendre.leggauss(nodes)
    x, w = _NODES[nodes]
    h = s_max(al, mu) / panels
    s = (np.arange(panels)[:, None] * h + (x + 1.0) * (h / 2.0)).ravel()
    log_f = _rdp._log_integrand(al, eta, mu, s)
    top = log_f.max()
    integral = np.exp(log_f - top) @ np.tile(w * (h / 2.0), panels)
    return _finish(al, eta, top, integral)


def _finish(al, eta, top, integral):
    log_b = math.log(al * (al - 1.0)) + 2.0 * math.log(eta) + top + math.log(integral)
    return float(np.logaddexp(0.0, log_b) / (al - 1.0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller grid, 3 timing repeats")
    ap.add_argument("--panels", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--nodes", type=int, nargs="+", default=[8, 12])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    etas = [1e-8, 1e-5, 1e-3, 0.05, 0.5, 1.0]
    mus = [0.01, 0.05, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0]
    orders = list(_rdp.DEFAULT_ORDERS)
    if args.quick:
        etas, mus, orders, args.repeats = etas[::2], mus[::2], orders[::3], 3
    rules = {"Simpson 8001 (charged)": lambda al, eta, mu: rdp_simpson(al, eta, mu, 8001)}
    for p in args.panels:
        for m in args.nodes:
            rules[f"Gauss-Legendre {p}x{m}"] = (
                lambda al, eta, mu, p=p, m=m: rdp_gauss_legendre(al, eta, mu, p, m))
    worst = {name: {"<=100": (0.0, None), ">100": (0.0, None)} for name in rules}
    with threadpool_limits(1):
        for eta in etas:
            for mu in mus:
                for al in orders:
                    ref = rdp_simpson(al, eta, mu, 128_001)
                    band = "<=100" if ref <= 100 else ">100"
                    for name, rule in rules.items():
                        err = (rule(al, eta, mu) - ref) / ref
                        if abs(err) > abs(worst[name][band][0]):
                            worst[name][band] = (err, (eta, mu, al))
        times = {name: [] for name in rules}
        names = list(rules)
        for r in range(args.repeats):  # interleaved, rotating order
            for name in names[r % len(names):] + names[:r % len(names)]:
                t = time.perf_counter()
                for _ in range(50):
                    rules[name](12.0, 5e-4, 1.12)  # NoisySGD's defaults at n = 2000
                times[name].append((time.perf_counter() - t) / 50)
    print(f"relative RDP error against Simpson on 128,001 points; {len(etas)} eta x {len(mus)} "
          f"mu x {len(orders)} orders; BLAS on one thread; time: median of {args.repeats} "
          "interleaved repeats of 50 integrals at (order 12, eta 5e-4, mu 1.12)")
    base = statistics.median(times[names[0]])
    print(f"{'rule':<26}{'worst, RDP <= 100':>19}{'  at (eta, mu, order)':<26}"
          f"{'worst, RDP > 100':>18}{'us':>8}{'Simpson/this':>14}")
    for name in names:
        (e1, at1), (e2, _) = worst[name]["<=100"], worst[name][">100"]
        t = statistics.median(times[name])
        print(f"{name:<26}{e1:>19.1e}  {str(at1):<24}{e2:>18.1e}{t * 1e6:>8.0f}{base / t:>14.2f}")


if __name__ == "__main__":
    main()
