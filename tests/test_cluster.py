"""Searches on a real Dask cluster (process workers) charge one ledger for every fit.

A ``distributed.LocalCluster`` with two worker processes stands in for a cluster: the
estimators and their accountant are pickled to the workers as on remote hosts. Ray's
joblib backend is tested too where ``ray`` is installed (under the ``slow`` marker).
"""

import logging
import os
import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, cross_validate

from skhybrid.accounting import DetachedLedgerError, PrivacyAccountant
from skhybrid.learners import DPLogisticRegression

distributed = pytest.importorskip(
    "distributed", reason='Dask is not installed: pip install "skhybrid[cluster]"')
joblib = pytest.importorskip("joblib")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def dask_client():
    # Workers import this checkout's skhybrid (the estimators are unpickled there).
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([REPO] + ([saved] if saved else []))
    try:
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
            silence_logs=logging.ERROR, worker_dashboard_address=None)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = saved
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _data():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    public = np.zeros(len(y), dtype=bool)
    public[::4] = True
    return X, y, public


def _search(acc, error_score=np.nan):
    X, y, public = _data()
    clf = DPLogisticRegression(epsilon=0.5, accountant=acc, random_state=0)
    search = GridSearchCV(clf, {"C": [0.1, 1.0]}, cv=3, n_jobs=-1, error_score=error_score)
    with joblib.parallel_backend("dask"):
        return search.fit(X, y, public_mask=public)


def _worker_pids(client):
    return set(client.run(os.getpid).values())


def test_grid_search_on_dask_charges_every_fit_to_a_sqlite_ledger(dask_client, tmp_path):
    acc = PrivacyAccountant(epsilon=10.0, ledger=tmp_path / "budget.sqlite")
    search = _search(acc)
    assert len(acc.events) == 7  # 3 folds x 2 candidates + the refit
    assert acc.spent() == pytest.approx((3.5, 0.0))
    assert search.best_estimator_.privacy_spent_["central"] == (0.5, 0.0)
    assert os.getpid() not in _worker_pids(dask_client)


def test_grid_search_and_cross_validate_on_dask_charge_a_postgres_ledger(dask_client, pg_url):
    acc = PrivacyAccountant(epsilon=10.0, ledger=pg_url)
    _search(acc)
    assert len(acc.events) == 7
    X, y, public = _data()
    clf = DPLogisticRegression(epsilon=0.25, accountant=acc, random_state=0)
    with joblib.parallel_backend("dask"):
        cross_validate(clf, X, y, cv=4, n_jobs=-1, params={"public_mask": public})
    assert len(acc.events) == 11
    assert acc.spent() == pytest.approx((3.5 + 4 * 0.25, 0.0))
    assert PrivacyAccountant.from_ledger(pg_url).events == acc.events


def test_in_memory_accountant_refuses_to_spend_on_a_dask_worker(dask_client):
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(DetachedLedgerError, match="ledger="):
        _search(acc, error_score="raise")
    assert acc.events == []


# Ray's local start and shutdown take about 45 s here (2 cores): slow, and optional.
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="Ray's local cluster is POSIX-tested here")
def test_grid_search_on_ray_charges_every_fit(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (optional): pip install ray")
    from ray.util.joblib import register_ray

    register_ray()
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR,
             runtime_env={"env_vars": {"PYTHONPATH": REPO}})
    try:
        acc = PrivacyAccountant(epsilon=10.0, ledger=tmp_path / "budget.sqlite")
        X, y, public = _data()
        clf = DPLogisticRegression(epsilon=0.5, accountant=acc, random_state=0)
        search = GridSearchCV(clf, {"C": [0.1, 1.0]}, cv=3, n_jobs=-1)
        with joblib.parallel_backend("ray"):
            search.fit(X, y, public_mask=public)
        assert len(acc.events) == 7
        memory = PrivacyAccountant(epsilon=10.0)
        search = GridSearchCV(clf.set_params(accountant=memory), {"C": [0.1, 1.0]}, cv=3,
                              n_jobs=-1, error_score="raise")
        with pytest.raises(DetachedLedgerError), joblib.parallel_backend("ray"):
            search.fit(X, y, public_mask=public)
        assert memory.events == []
    finally:
        ray.shutdown()


def test_private_search_on_dask_charges_once_and_matches_the_serial_search(dask_client,
                                                                          pg_url):
    from skhybrid.model_selection import PrivateSearchCV

    X, y = make_classification(n_samples=600, n_features=4, random_state=1)
    acc = PrivacyAccountant(epsilon=3.0, ledger=pg_url)

    def search(n_jobs, accountant):
        return PrivateSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0, 10.0]},
                               epsilon=1.0, n_jobs=n_jobs, accountant=accountant,
                               random_state=0)

    with joblib.parallel_backend("dask"):
        remote = search(-1, acc).fit(X, y)
    serial = search(None, None).fit(X, y)
    assert len(acc.events) == 1 and acc.spent() == pytest.approx((1.0, 0.0))
    assert remote.best_params_ == serial.best_params_
    np.testing.assert_array_equal(remote.predict(X), serial.predict(X))
