"""Run one benchmark script against two versions of skhybrid, alternated.

The script is the working tree's; the package it imports is, in turn, the baseline's and
the working tree's (each first on ``PYTHONPATH``). Rounds alternate which version runs
first, BLAS is pinned to one thread in both (unless the caller set the variables), and
each run's output is printed under its label, filtered by ``--grep`` when given::

    python benchmarks/compare_revisions.py 567de6e --rounds 3 --grep "first fit" -- \\
        benchmarks/bench_accountant.py --sections 5 --repeats 5

``BASELINE`` is a git revision (exported with ``git archive`` to a temporary directory)
or the path of a source tree holding ``skhybrid/``. The benchmark's own ratios compare
its contenders within one version; this compares the versions, so read it across rounds
(on a shared machine one round is not enough).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ONE_THREAD = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def export_revision(rev, into):
    """``skhybrid/`` of the git revision ``rev``, extracted under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "skhybrid"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return Path(into)


def run(script_and_args, source, grep):
    """Output of one run of the benchmark with ``source``'s skhybrid first on the path."""
    env = {**_ONE_THREAD, **os.environ}
    env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    out = subprocess.run([sys.executable, *script_and_args], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    if out.returncode:
        raise SystemExit(f"{script_and_args[0]} failed with {source} first on the path:\n"
                         f"{out.stderr[-2000:]}")
    lines = out.stdout.splitlines()
    return [ln for ln in lines if re.search(grep, ln)] if grep else lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline", help="git revision, or a path holding skhybrid/")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--grep", default=None, help="print only the lines matching this regex")
    ap.epilog = "then -- and the benchmark script with its arguments"
    argv = sys.argv[1:] if argv is None else list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, script = ap.parse_args(argv[:cut]), argv[cut + 1:]
    if not script:
        ap.error("give the benchmark after --, e.g. -- benchmarks/bench_str.py --rounds 3")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.baseline)
        if (path / "skhybrid").is_dir():
            base = path.resolve()
        else:
            base = export_revision(args.baseline, tmp)
        versions = [(f"baseline {args.baseline}", base), ("working tree", ROOT)]
        print(f"{' '.join(script)}: {args.rounds} rounds, the versions alternated; "
              f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', '1')}")
        for r in range(args.rounds):
            for label, source in versions if r % 2 == 0 else versions[::-1]:
                print(f"-- round {r + 1}, {label}")
                for line in run(script, source, args.grep):
                    print("   " + line)


if __name__ == "__main__":
    main()
