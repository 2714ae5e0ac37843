"""Reduced reproductions of the hybrid experiments (skhybrid.experiments.hybrid)."""

import numpy as np
import pytest

from skhybrid.experiments import available
from skhybrid.experiments.hybrid import EXPERIMENTS, separation_errors


def test_registered():
    assert {"hybrid-separation", "hybrid-protocols"} <= set(available())
    assert set(EXPERIMENTS) == {"hybrid-separation", "hybrid-protocols"}


def test_one_separation_point():
    # c = 16 at m = 10^4: the hybrid learns, both single models stay near 1/2 (seed 0).
    errs = separation_errors(16, 10, 0.1, 10_000, 100_000, seed=0)
    assert errs["hybrid"] <= 0.2
    assert abs(errs["local"] - 0.5) < 0.05


@pytest.mark.slow
def test_separation_quick(tmp_path):
    rows = EXPERIMENTS["hybrid-separation"](str(tmp_path), quick=True)
    assert (tmp_path / "hybrid_separation.png").exists()
    by = {(r["c"], r["b"], r["alpha"], r["m"], r["n"]): r for r in rows}
    r = by[(16, 10, 0.1, 10_000, 100_000)]
    assert r["hybrid"] < 0.2 and r["local"] > 0.45 and r["curator"] > r["hybrid"]
    assert all(row["local"] > 0.45 for row in rows)  # no local-only learner of the parity
    assert by[(16, 10, 0.1, 3_000, 100_000)]["hybrid"] > 0.4  # too few curator rows


@pytest.mark.slow
def test_protocols_quick(tmp_path):
    rows = EXPERIMENTS["hybrid-protocols"](str(tmp_path), quick=True)
    assert (tmp_path / "hybrid_protocols.png").exists()
    four = [r for r in rows if r["task"] == "1-out-of-2^d-parity"]
    assert four[0]["success"] > max(r["success"] for r in four[1:])
    five = [r for r in rows if r["task"] == "parity-chooses-secret"]
    assert five[0]["success"] > five[1]["success"]
    tests = [r for r in rows if r["task"] == "hypothesis-testing"]
    assert all(r["reduction"] >= r["reduction_bound"] - 0.05 for r in tests)
    assert np.all([r["hybrid"] <= 1.0 for r in tests])
