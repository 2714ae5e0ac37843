"""python -m skhybrid: demo, reproduce (listing), budget."""

import io

import numpy as np
import pytest

from skhybrid.__main__ import budget, demo, main
from skhybrid.accounting import PrivacyAccountant
from skhybrid.mechanisms import LaplaceMechanism


def test_demo_prints_every_learner_and_the_accountant():
    out = io.StringIO()
    demo(seed=0, out=out)
    text = out.getvalue()
    for name in ("DPLogisticRegression", "PPMHalfspaceClassifier", "DiscrepancyAdaptation",
                 "ParityThreshold", "SubsampleTestReweigh", "ParityTransfer",
                 "PrivateParityClassifier", "SelectThenEstimate", "PrivateSearchCV"):
        assert name in text
    assert "central: spent" in text and "local: spent" in text
    # Plain language: no paper shorthand, and the two questions a reader asks are answered.
    assert "App. D" not in text and "section 7" not in text
    assert "can match or beat its baseline" in text and "not the sum" in text


def test_budget_reports_a_ledger(tmp_path):
    path = tmp_path / "b.sqlite"
    PrivacyAccountant(ledger=path).spend([LaplaceMechanism(0.5).event()], source="demo")
    out = io.StringIO()
    budget(path, out=out)
    assert "demo" in out.getvalue() and "epsilon=0.5" in out.getvalue()


def test_reproduce_lists_experiments(capsys):
    assert main(["reproduce"]) == 0
    assert capsys.readouterr().out.strip()


def test_datasets_mask_conventions():
    from skhybrid.datasets import (
        make_label_determined_halfspace,
        make_parity_threshold,
        make_shifted_gaussians,
    )

    X, y, public = make_label_determined_halfspace(200, random_state=0)
    assert (public == (y == 0)).all() and X.shape == (200, 2)
    X, y, mask, Xt, yt = make_shifted_gaussians(30, 20, n_test=5, random_state=0)
    assert mask.sum() == 30 and set(np.unique(y)) <= {-1, 1} and Xt.shape == (5, 20)
    X, y, (k, theta) = make_parity_threshold(100, n_parity=4, threshold_bits=5, random_state=0)
    assert ((X[:, :4] @ k + (X[:, -1] >= theta)) % 2 == y).all()


def test_budget_refuses_a_missing_ledger_and_shows_the_stored_budget(tmp_path, capsys):
    missing = tmp_path / "typo.sqlite"
    assert main(["budget", str(missing)]) == 1
    assert "No ledger at" in capsys.readouterr().err
    assert not missing.exists()
    path = tmp_path / "b.sqlite"
    PrivacyAccountant(epsilon=3.0, delta=1e-6, ledger=path)
    assert main(["budget", str(path)]) == 0
    assert "central (epsilon=3, delta=1e-06)" in capsys.readouterr().out


def test_unknown_experiment_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "ppm-halfspace"])  # mistyped
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m skhybrid reproduce")
    assert "unknown experiment 'ppm-halfspace'" in err and "ppm-halfspaces" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [[], ["demo"], ["reproduce"], ["budget"]])
def test_help_is_plain_text(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: python -m skhybrid")
    for markup in ("``", ":func:", ":class:", ":mod:", ":ref:", ".. "):
        assert markup not in text
