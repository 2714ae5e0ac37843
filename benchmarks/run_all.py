"""Run every benchmark in ``benchmarks/`` in a quick mode and print one table.

Each ``bench_*.py`` runs in its own process (BLAS pinned to one thread through the
environment, except in ``bench_threads.py``, which compares thread settings itself; the
repository root first on ``PYTHONPATH``) with the small sizes listed in
:data:`QUICK` (``--quick`` where the script has it), under a per-script ``--timeout``.
Its own table is parsed into rows of

    benchmark | case | contenders | A | B | ratio

where the ratio is the script's own headline ratio (the ``contenders`` column says which
way it reads, e.g. ``naive/packed``). Full outputs go to ``--log-dir``. A script that
fails, times out or prints nothing parseable shows up as a row saying so. A new
``bench_*.py`` without an entry in :data:`QUICK` runs with ``--quick`` if it has that
flag, else with no arguments, and is reported as unparsed (add an entry).

The quick sizes are for spotting regressions in a few minutes, not for the numbers quoted
in ``benchmarks/README.md`` (run the scripts themselves at their defaults for those).

    python benchmarks/run_all.py [--only bench_gf2 bench_samplers] [--timeout 400]
"""

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

NUM = r"~?[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _rows(pattern, label, a="a", b="b", ratio="ratio"):
    """A parser: every line matching ``pattern`` (named groups) gives one row."""
    rx = re.compile(pattern, re.M)

    def parse(text):
        out = []
        for m in rx.finditer(text):
            g = m.groupdict()
            out.append((label(g), g.get(a), g.get(b), g.get(ratio)))
        return out
    return parse


def _dp_logistic(text):
    out = []
    for m in re.finditer(rf"^\s*(\d+)\s+(\d+) \|\s*({NUM})\s+({NUM})\s+({NUM})\s+({NUM}) \|"
                         rf"\s*({NUM})\s+({NUM})\s+({NUM})", text, re.M):
        n, d, eps1, _, lbfgs, liblin, r_lbfgs, r_lib, _ = m.groups()
        out.append((f"n={n} d={d} vs lbfgs", eps1, lbfgs, r_lbfgs))
        out.append((f"n={n} d={d} vs liblinear", eps1, liblin, r_lib))
    return out


def _discrepancy(text):
    t = dict(re.findall(rf"^(\S.*?)\s*:\s*({NUM}) s total", text, re.M))
    return [(f"{k} vs expm", t[k], t.get("expm"),
             f"{float(t['expm']) / float(t[k]):.2f}" if "expm" in t else None)
            for k in t if k != "expm"]


def _scale(text):
    # "<Estimator> <rows> <s> <MB> | <baseline> <s> <MB> <ratio>", or a status word
    # (ValueError, timeout, ...) in place of the skhybrid numbers.
    out = []
    for m in re.finditer(rf"^(?P<name>[A-Z]\w+)\s+(?P<n>\d+)\s+(?:(?P<a>{NUM})\s+{NUM}|"
                         rf"(?P<status>\S+))\s+\|\s+.*?\s(?P<b>{NUM})\s+{NUM}\s+"
                         rf"(?P<ratio>{NUM}|-)(?=\s|$)", text, re.M):
        g = m.groupdict()
        out.append((f"{g['name']} n={g['n']}", g["a"] or g["status"], g["b"],
                    None if g["ratio"] == "-" else g["ratio"]))
    return out


#: script -> (quick arguments, contenders, parser of its output)
QUICK = {
    "bench_accountant.py": (
        ["--quick"], "share of the fit / last/10th", lambda text: (
            [("1000 spends: last/10th", None, None, m) for m in
             re.findall(rf"PrivacyAccountant\s+{NUM}\s+{NUM}\s+({NUM})", text)]
            + [(f"NoisySGD calibration, {w}", c, t, f"{p}%") for w, c, t, p in re.findall(
                rf"(cold|warm) \(.*?\)\s+calibration\s+({NUM}) ms of\s+({NUM}) ms\s+\(\s*({NUM}) %\)",
                text)])),
    "bench_adaptation_scale.py": (
        ["--m", "10000", "--repeat", "1", "--max-old", "10000", "--skip-fit"], "sdp/dual (s)",
        _rows(rf"^\s*(?P<m>\d+)\s+(?P<a>{NUM})\s+(?P<b>{NUM})\s+(?P<ratio>{NUM})\s",
              lambda g: f"m={g['m']} public rows")),
    "bench_adaptation_fit.py": (
        ["--K", "100", "--m", "300", "--n", "2000", "--repeat", "2"], "expm loop/this (s)",
        _rows(rf"^(?P<name>fit|loop \(eigh\))\s+(?P<a>{NUM})\s+{NUM}\s+(?P<ratio>{NUM})$",
              lambda g: g["name"])),
    "bench_discrepancy_gradient.py": (
        ["--K", "100", "--m", "300", "--n", "2000", "--repeats", "3"], "expm/eigh (s)",
        _discrepancy),
    "bench_dp_logistic.py": (
        ["--n", "1000", "10000", "--d", "10", "--repeat", "3"], "DP eps=1/sklearn (ms)",
        _dp_logistic),
    "bench_dp_logistic_diffprivlib.py": (
        ["--quick"], "skhybrid/diffprivlib (ms)",
        _rows(rf"^\s*(?P<n>\d+)\s+(?P<d>\d+) \|\s*(?P<a>{NUM})\s+(?P<b>{NUM}) \|.*\|\s*(?P<ratio>{NUM})$",
              lambda g: f"n={g['n']} d={g['d']}")),
    "bench_gf2.py": (
        [], "naive/packed (s)",
        _rows(rf"^\s*(?P<c>\d+)\s+(?P<n>\d+)\s+(?P<a>{NUM})\s+(?P<b>{NUM})\s+(?P<ratio>{NUM})x$",
              lambda g: f"c={g['c']} n={g['n']}")),
    "bench_import.py": (
        ["--repeats", "5"], "median ms / import sklearn",
        _rows(rf"^(?P<name>import skhybrid|from skhybrid import \S+, \S+)\s+(?P<a>{NUM})\s+"
              rf"(?P<ratio>{NUM})\s+{NUM}$", lambda g: g["name"])),
    "bench_ledger.py": (
        ["--repeats", "3", "--block", "100"], "us per charge / memory",
        _rows(rf"^(?P<name>memory|sqlite|postgresql)\s+(?P<a>{NUM})\s+\d+\s+(?P<ratio>{NUM})"
              rf"\s+{NUM}$", lambda g: f"one charge, {g['name']}")),
    "bench_ppm_exact_limit.py": (
        ["--budget", "10", "--stop", "5", "--dims", "2", "--no-scoring-ratio"],
        "largest n_pub in budget",
        _rows(r"^largest n_pub within (?P<budget>\S+ s) at d=(?P<d>\d+): (?P<ratio>\d+)",
              lambda g: f"d={g['d']}, {g['budget']}")),
    "bench_ppm_scoring.py": (
        ["--n-public", "40", "--repeats", "3"], "matmul/stream (s)",
        _rows(rf"^\s*(?P<n>\d+)\s+\d+\s+\d+\s+(?P<a>{NUM})\s+(?P<b>{NUM})\s+(?P<ratio>{NUM})",
              lambda g: f"n_pub={g['n']}")),
    "bench_private_search.py": (
        ["--quick"], "selected accuracy, minus the oracle's",
        _rows(rf"^(?P<data>\S+)\s+(?P<eps>{NUM})\s+PrivateSearchCV\s+(?P<a>{NUM})\s+"
              rf"(?P<ratio>[-+]{NUM})", lambda g: f"{g['data']} eps={g['eps']}")),
    "bench_rdp_quadrature.py": (
        ["--quick"], "worst RDP error (RDP <= 100) / Simpson time ratio",
        _rows(rf"^(?P<name>(?:Simpson|Gauss-Legendre) \S+)(?: \(charged\))?\s+(?P<a>{NUM})\s+"
              rf"\(.*?\)\s+{NUM}\s+{NUM}\s+(?P<ratio>{NUM})$", lambda g: g["name"])),
    "bench_real_data.py": (
        ["--quick"], "(accuracy panel: see log)", lambda text: []),
    "bench_scale.py": (
        ["--sizes", "10000", "--repeats", "3", "--timeout", "120"],
        "skhybrid/scikit-learn baseline fit (s)", _scale),
    "bench_samplers.py": (
        ["--n", "200000", "--repeats", "3"], "exact/numpy (s)",
        _rows(rf"^(?P<name>\S.*?)\s+(?P<a>{NUM})\s+(?P<b>{NUM})\s+(?P<ratio>{NUM})x$",
              lambda g: g["name"])),
    "bench_str.py": (
        ["--n", "5000", "--d", "50", "--rounds", "3", "--repeats", "2"],
        "speed-up over naive LinearSVC (s/round)",
        _rows(rf"^(?P<name>(?:active-set|interior-point|naive)\S*(?: \S+)*?)\s+(?P<a>{NUM})"
              rf"\s+(?:{NUM}|nan)\s+(?P<ratio>{NUM})\s+\d+\s+{NUM}$", lambda g: g["name"])),
    "bench_threads.py": (
        ["--repeats", "3"], "default pool/1 thread (s)",
        _rows(rf"^(?P<name>\S.*?)\s+(?P<a>{NUM})\s+(?P<b>{NUM})\s+(?P<ratio>{NUM})$",
              lambda g: g["name"])),
}


#: Scripts that compare BLAS thread settings themselves: their environment is left alone.
OWN_THREADS = {"bench_threads.py"}


def run(script, args, timeout, log_dir):
    env = dict(os.environ, PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if script not in OWN_THREADS:
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(HERE / script), *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
        text, status = proc.stdout, ("ok" if proc.returncode == 0
                                     else f"exit {proc.returncode}")
        err = proc.stderr
    except subprocess.TimeoutExpired as exc:
        text = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err, status = "", f"timeout {timeout:g} s"
    seconds = time.perf_counter() - start
    (log_dir / f"{script}.log").write_text(text + ("\n--- stderr ---\n" + err if err else ""))
    return text, status, seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=None, help="script names (with or without .py)")
    ap.add_argument("--timeout", type=float, default=400.0, help="seconds per script")
    ap.add_argument("--log-dir", default=str(ROOT / "benchmarks" / "_run_all_logs"))
    args = ap.parse_args(argv)
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    scripts = sorted(p.name for p in HERE.glob("bench_*.py"))
    if args.only:
        wanted = {s if s.endswith(".py") else s + ".py" for s in args.only}
        scripts = [s for s in scripts if s in wanted]
    table = []
    for script in scripts:
        if script in QUICK:
            quick_args, contenders, parse = QUICK[script]
        else:  # a script added since: its own --quick if it has one, else its defaults
            has_quick = '"--quick"' in (HERE / script).read_text()
            quick_args, contenders, parse = (["--quick"] if has_quick else [],
                                             "(no entry in run_all.QUICK)", lambda text: [])
        print(f"running {script} {' '.join(quick_args)} ...", file=sys.stderr, flush=True)
        text, status, seconds = run(script, quick_args, args.timeout, log_dir)
        rows = parse(text) if status == "ok" else []
        if not rows:
            rows = [("(see log)" if status == "ok" else status, None, None, None)]
        for case, a, b, ratio in rows:
            table.append((script[:-3], case, contenders, a, b, ratio, f"{seconds:.0f}"))
    header = ("benchmark", "case", "contenders (ratio)", "A", "B", "ratio", "run s")
    cells = [header] + [tuple("" if c is None else str(c) for c in row) for row in table]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print("BLAS pinned to 1 thread; quick sizes; A and B are the script's medians in the "
          "unit shown; logs in " + str(log_dir))
    for k, row in enumerate(cells):
        print("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))
        if k == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
