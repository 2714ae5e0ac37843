"""Every CV fold receives exactly mask[train]: cross_validate, GridSearchCV, Pipeline.

X's first column holds each row's original index, so a fit can check that the mask it
received lines up with its rows, whatever order and subset the splitter chose.
"""

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skhybrid.learners import DPLogisticRegression
from skhybrid.preprocessing import PublicFitTransformer

N = 90
# A scaler that scales nothing keeps the row-index column intact through the pipeline.
_IDENTITY = StandardScaler(with_mean=False, with_std=False)
FIT_LOG = []


def _data():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.arange(N), rng.normal(size=(N, 2))])
    y = (X[:, 1] > 0).astype(int)
    mask = rng.random(N) < 0.3
    return X, y, mask


class RecordingDP(DPLogisticRegression):
    def fit(self, X, y, *, public_mask=None):
        FIT_LOG.append(("clf", np.asarray(X)[:, 0].astype(int), np.asarray(public_mask)))
        return super().fit(X, y, public_mask=public_mask)


class RecordingPublicFit(PublicFitTransformer):
    def fit(self, X, y=None, *, public_mask=None):
        FIT_LOG.append(("pre", np.asarray(X)[:, 0].astype(int), np.asarray(public_mask)))
        return super().fit(X, y, public_mask=public_mask)


@pytest.fixture(autouse=True)
def _clear_log():
    FIT_LOG.clear()
    yield
    FIT_LOG.clear()


def _assert_masks_line_up(mask, expected_fits, kinds=("clf",)):
    assert len([e for e in FIT_LOG if e[0] in kinds]) == expected_fits
    for _, rows, received in FIT_LOG:
        assert received.shape == rows.shape
        np.testing.assert_array_equal(received, mask[rows])


def test_cross_validate_splits_mask_per_fold():
    X, y, mask = _data()
    cross_validate(RecordingDP(epsilon=np.inf), X, y, cv=KFold(3, shuffle=True, random_state=0),
                   params={"public_mask": mask})
    _assert_masks_line_up(mask, expected_fits=3)
    # the three folds together cover every row once as training data twice
    counts = np.bincount(np.concatenate([rows for _, rows, _ in FIT_LOG]), minlength=N)
    assert (counts == 2).all()


def test_grid_search_splits_mask_per_fold_and_refit():
    X, y, mask = _data()
    search = GridSearchCV(RecordingDP(epsilon=np.inf), {"C": [0.1, 1.0]}, cv=3)
    search.fit(X, y, public_mask=mask)
    _assert_masks_line_up(mask, expected_fits=7)
    assert any(len(rows) == N for _, rows, _ in FIT_LOG)  # the refit sees every row


def test_pipeline_with_routing_enabled():
    X, y, mask = _data()
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(RecordingPublicFit(_IDENTITY), RecordingDP(epsilon=np.inf))
        cross_validate(pipe, X, y, cv=3, params={"public_mask": mask})
        _assert_masks_line_up(mask, expected_fits=6, kinds=("clf", "pre"))
        assert len([e for e in FIT_LOG if e[0] == "pre"]) == 3


def test_pipeline_step_param_with_routing_off():
    X, y, mask = _data()
    assert not sklearn.get_config()["enable_metadata_routing"]
    pipe = make_pipeline(_IDENTITY, RecordingDP(epsilon=np.inf))
    pipe.fit(X, y, recordingdp__public_mask=mask)  # the step-name form
    _assert_masks_line_up(mask, expected_fits=1)


def test_importing_skhybrid_leaves_sklearn_config_alone():
    import importlib

    import skhybrid

    before = sklearn.get_config()
    importlib.reload(skhybrid)
    assert sklearn.get_config() == before


def test_unsplit_wrong_length_mask_is_caught():
    X, y, mask = _data()
    with pytest.raises(ValueError, match="public_mask has 90 entries but X has 60 rows"):
        DPLogisticRegression(epsilon=np.inf).fit(X[:60], y[:60], public_mask=mask)
