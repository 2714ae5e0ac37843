"""PublicFitTransformer: public rows only, and the input's container kept.

DataFrames reach the wrapped transformer as DataFrames (names, dtypes, index), sparse
matrices as sparse matrices; ``set_output`` and feature names work as in scikit-learn.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from scipy import sparse
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler

from skhybrid.learners import DPLogisticRegression
from skhybrid.preprocessing import PublicFitTransformer

SEEN = []


class RecordingScaler(StandardScaler):
    """A StandardScaler that records the DataFrame index labels it is fit on."""

    def fit(self, X, y=None, sample_weight=None):
        SEEN.append(list(X.index))
        return super().fit(X, y, sample_weight=sample_weight)


@pytest.fixture(autouse=True)
def _clear_seen():
    SEEN.clear()
    yield
    SEEN.clear()


def _frame(n=60, seed=0):
    """Two numeric columns and one string column, with a shuffled string index."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "a": rng.normal(size=n),
        "b": rng.normal(5.0, 2.0, size=n),
        "c": rng.choice(["red", "green"], size=n),
    }, index=[f"row{i}" for i in rng.permutation(n)])
    public = pd.Series(rng.random(n) < 0.4, index=X.index)
    y = pd.Series((X["a"] + rng.normal(0, 0.5, n) > 0).astype(int), index=X.index)
    return X, y, public


def _by_name():
    return ColumnTransformer([("num", StandardScaler(), ["a", "b"]),
                              ("cat", OneHotEncoder(handle_unknown="ignore"), ["c"])])


def test_feature_names_come_from_the_dataframe_and_the_wrapped_transformer():
    X, _, public = _frame()
    num = X[["a", "b"]]
    pft = PublicFitTransformer(StandardScaler()).fit(num, public_mask=public)
    np.testing.assert_array_equal(pft.feature_names_in_, ["a", "b"])
    np.testing.assert_array_equal(pft.get_feature_names_out(), ["a", "b"])
    pca = PublicFitTransformer(PCA(2)).fit(num, public_mask=public)
    np.testing.assert_array_equal(pca.get_feature_names_out(), ["pca0", "pca1"])
    # numpy input: no feature_names_in_, generic names, as in scikit-learn
    arr = PublicFitTransformer(StandardScaler()).fit(num.to_numpy(), public_mask=public.to_numpy())
    assert not hasattr(arr, "feature_names_in_")
    np.testing.assert_array_equal(arr.get_feature_names_out(), ["x0", "x1"])
    # columns renamed between fit and transform are caught
    with pytest.raises(ValueError, match="feature names"):
        pft.transform(num.rename(columns={"a": "z"}))


def test_fit_reads_only_public_rows_and_transforms_every_row():
    X, _, public = _frame()
    num = X[["a", "b"]]
    out = PublicFitTransformer(StandardScaler()).fit(num, public_mask=public).transform(num)
    pub = num[public.to_numpy()]
    np.testing.assert_allclose(out, (num - pub.mean()) / pub.std(ddof=0))
    assert out.shape == num.shape


def test_set_output_pandas_keeps_the_index_and_names():
    X, _, public = _frame()
    num = X[["a", "b"]]
    pft = PublicFitTransformer(PCA(2)).set_output(transform="pandas")
    out = pft.fit(num, public_mask=public).transform(num)
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(num.index)
    assert list(out.columns) == ["pca0", "pca1"]
    plain = PublicFitTransformer(PCA(2)).fit(num, public_mask=public).transform(num)
    np.testing.assert_allclose(out.to_numpy(), plain)
    # fit_transform too, and after fit the setting reaches the fitted clone
    ft = PublicFitTransformer(PCA(2)).set_output(transform="pandas").fit_transform(
        num, public_mask=public)
    assert isinstance(ft, pd.DataFrame) and ft.index.equals(num.index)
    late = PublicFitTransformer(PCA(2)).fit(num, public_mask=public)
    assert isinstance(late.set_output(transform="pandas").transform(num), pd.DataFrame)
    assert isinstance(late.set_output(transform="default").transform(num), np.ndarray)


def test_set_output_through_a_pipeline_keeps_column_dtypes():
    X, _, public = _frame()
    ct = ColumnTransformer([("num", StandardScaler(), ["a"]), ("keep", "passthrough", ["c"])],
                           verbose_feature_names_out=False)
    pipe = make_pipeline(PublicFitTransformer(ct)).set_output(transform="pandas")
    out = pipe.fit_transform(X, publicfittransformer__public_mask=public)
    assert out.index.equals(X.index)
    assert list(out.columns) == ["a", "c"]
    # the wrapped ColumnTransformer produced the frame itself: the string column is intact
    assert out["c"].tolist() == X["c"].tolist()


def test_column_transformer_selecting_columns_by_name():
    X, _, public = _frame()
    # A category seen only in private rows must not become a feature.
    X.loc[~public, "c"] = np.where(np.arange((~public).sum()) == 0, "secret", X.loc[~public, "c"])
    pft = PublicFitTransformer(_by_name()).fit(X, public_mask=public)
    ct = pft.transformer_
    pub = X[public.to_numpy()]
    np.testing.assert_allclose(ct.named_transformers_["num"].mean_, pub[["a", "b"]].mean())
    assert "secret" not in ct.named_transformers_["cat"].categories_[0]
    assert pft.transform(X).shape == (len(X), 2 + pub["c"].nunique())
    assert list(pft.get_feature_names_out())[:2] == ["num__a", "num__b"]


def test_public_rows_selected_by_position_keep_their_index_labels():
    X, _, public = _frame()
    PublicFitTransformer(RecordingScaler()).fit(X[["a", "b"]], public_mask=public)
    assert SEEN == [list(X.index[public.to_numpy()])]


def test_pandas_mask_is_aligned_by_index():
    X, _, public = _frame()
    num = X[["a", "b"]]
    shuffled = public.sample(frac=1.0, random_state=1)  # same labels, other order
    assert not (shuffled.to_numpy() == public.to_numpy()).all()
    a = PublicFitTransformer(StandardScaler()).fit(num, public_mask=shuffled)
    b = PublicFitTransformer(StandardScaler()).fit(num, public_mask=public.to_numpy())
    np.testing.assert_array_equal(a.transformer_.mean_, b.transformer_.mean_)
    with pytest.raises(ValueError, match="index of public_mask differs"):
        PublicFitTransformer(StandardScaler()).fit(num, public_mask=public.reset_index(drop=True))
    with pytest.raises(ValueError, match="no index to align"):
        PublicFitTransformer(StandardScaler()).fit(num.to_numpy(), public_mask=public)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_input_is_passed_through(fmt):
    rng = np.random.default_rng(0)
    dense = rng.random((40, 5)) * (rng.random((40, 5)) < 0.3)
    public = rng.random(40) < 0.5
    Xs = sparse.random(40, 5, density=0.0, format=fmt) + sparse.coo_matrix(dense).asformat(fmt)
    pft = PublicFitTransformer(StandardScaler(with_mean=False)).fit(Xs, public_mask=public)
    out = pft.transform(Xs)
    assert sparse.issparse(out)
    ref = StandardScaler(with_mean=False).fit(dense[public])
    np.testing.assert_allclose(out.toarray(), ref.transform(dense))
    assert pft.__sklearn_tags__().input_tags.sparse


def test_sparse_input_refused_by_the_wrapped_transformer_not_by_the_wrapper():
    Xs = sparse.random(20, 3, density=0.5, format="csr", random_state=0)
    pft = PublicFitTransformer(StandardScaler())
    assert not pft.__sklearn_tags__().input_tags.sparse
    with pytest.raises(ValueError, match="with_mean=False"):  # StandardScaler's own message
        pft.fit(Xs, public_mask=np.ones(20, bool))


def test_inverse_transform_only_when_the_wrapped_transformer_has_one():
    assert hasattr(PublicFitTransformer(StandardScaler()), "inverse_transform")
    assert not hasattr(PublicFitTransformer(Normalizer()), "inverse_transform")


def test_no_public_row_raises():
    X, _, public = _frame()
    with pytest.raises(ValueError, match="needs public rows"):
        PublicFitTransformer(_by_name()).fit(X, public_mask=np.zeros(len(X), bool))


def _pipe(scaler=None):
    ct = ColumnTransformer([("num", scaler or StandardScaler(), ["a", "b"]),
                            ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                             ["c"])])
    # pandas output: the classifier gets X's index, to which it aligns the pandas mask
    return Pipeline([("prep", PublicFitTransformer(ct)),
                     ("clf", DPLogisticRegression(epsilon=np.inf, data_norm=5.0))]
                    ).set_output(transform="pandas")


def test_pipeline_with_routing_passes_the_mask_to_both_steps():
    X, y, public = _frame()
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = _pipe(RecordingScaler()).fit(X, y, public_mask=public)
    assert pipe["prep"].n_public_ == public.sum()
    assert SEEN == [list(X.index[public.to_numpy()])]
    # routing off: the step__param form gives the same fit
    off = _pipe().fit(X, y, prep__public_mask=public, clf__public_mask=public)
    np.testing.assert_allclose(off["clf"].coef_, pipe["clf"].coef_)
    assert pipe.predict(X).shape == (len(X),)
    # default output: the classifier sees an array, so it refuses to read the pandas mask
    # by position
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match="no index to align"):
            _pipe().set_output(transform="default").fit(X, y, public_mask=public)


def test_grid_search_splits_a_pandas_mask_by_fold():
    X, y, public = _frame(n=90)
    cv = KFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(_pipe(RecordingScaler()), {"clf__C": [0.1, 1.0]}, cv=cv)
        search.fit(X, y, public_mask=public)
    public_labels = set(X.index[public.to_numpy()])
    # 2 candidates x 3 folds + the refit; each fit saw exactly its fold's public rows
    assert len(SEEN) == 7
    folds = [list(X.index[train]) for train, _ in cv.split(X)]
    for labels in SEEN[:-1]:
        assert set(labels) <= public_labels
        assert any(set(labels) == public_labels & set(fold) for fold in folds)
    assert set(SEEN[-1]) == public_labels
    assert search.best_estimator_["prep"].n_public_ == public.sum()


@pytest.mark.parametrize("routing", [True, False])
def test_a_private_row_outside_the_public_domain_changes_no_warning(routing):
    # red team 3: OneHotEncoder(handle_unknown="warn") warned on the data set whose one
    # private row has a category no public row shows, and not on its neighbour (both fits
    # charged the same): a bit outside the guarantee
    from sklearn.base import TransformerMixin

    from skhybrid import PrivacyAccountant

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"region": rng.choice(["a", "b", "c"], 200), "x": rng.normal(size=200)})
    y = (X["x"] > 0).astype(int).to_numpy()
    public = np.arange(200) < 50
    X2 = X.copy()
    X2.loc[120, "region"] = "zz"  # a private row

    def fit(data, fit_transform=None):
        enc = OneHotEncoder(handle_unknown="warn", sparse_output=False)
        prep = PublicFitTransformer(ColumnTransformer([("r", enc, ["region"])],
                                                      remainder="passthrough"))
        if fit_transform is not None:
            prep.fit_transform = fit_transform.__get__(prep)
        acc = PrivacyAccountant(epsilon=10.0)
        pipe = Pipeline([("prep", prep), ("clf", DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], accountant=acc))])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with sklearn.config_context(enable_metadata_routing=routing):
                params = ({"public_mask": public} if routing else
                          {"prep__public_mask": public, "clf__public_mask": public})
                pipe.fit(data, y, **params)
        return [str(w.message) for w in caught], acc.spent()

    assert fit(X) == fit(X2) == ([], (1.0, 0.0))
    # twin: scikit-learn's fit_transform (fit, then transform in the open) tells them apart
    twin = TransformerMixin.fit_transform
    assert fit(X, twin)[0] == [] and any("unknown categories" in m for m in fit(X2, twin)[0])
    # at predict time the user's own rows warn as usual
    pipe_fit = PublicFitTransformer(OneHotEncoder(handle_unknown="warn")).fit(
        X[["region"]], public_mask=public)
    with pytest.warns(UserWarning, match="unknown categories"):
        pipe_fit.transform(X2[["region"]])


def test_a_list_is_refused_before_a_private_cell_can_retype_the_public_rows():
    # Red team 18: a list converted whole takes one dtype from every cell. Public codes 1
    # and 2 with one private cell 0.5 instead of 3 became floats (categories_ [1., 2.],
    # feature names "x0_1.0"); a private NaN among 64-bit ids merged two public ids.
    X = [[1], [2], [1], [2], [3]]
    public = [True, True, True, True, False]
    pft = PublicFitTransformer(OneHotEncoder(handle_unknown="ignore"))
    with pytest.raises(ValueError, match="not a list: a list's rows are converted together"):
        pft.fit(X, public_mask=public)
    # An array, whose dtype is the caller's, is fine; so is an array-like with __array__.
    X = np.array(X)
    assert pft.fit(X, public_mask=public).transformer_.categories_[0].tolist() == [1, 2]
    assert PublicFitTransformer(StandardScaler()).fit(pd.Series([1.0, 2.0, 5.0]).to_frame(),
                                                      public_mask=[True, True, False])


@pytest.mark.parametrize("private_label", [1, 2**64, "b"])
def test_a_list_y_is_read_at_the_public_rows_only(private_label):
    # Red team 18: np.asarray of the whole list y let a private label of 2**64 (an object
    # array) make TargetEncoder refuse the public labels 0/1.
    from sklearn.preprocessing import TargetEncoder

    X = np.array([["a"], ["b"], ["a"], ["b"], ["a"], ["b"], ["a"]], dtype=object)
    y = [0, 1, 1, 0, 0, 1, private_label]
    public = np.arange(7) < 6
    pft = PublicFitTransformer(TargetEncoder(cv=2, random_state=0)).fit(X, y,
                                                                        public_mask=public)
    assert pft.transformer_.target_type_ == "binary"


def test_a_string_array_is_read_at_the_public_rows_own_width():
    # Red team 20: a fixed-width string array is as wide as its longest cell, a private
    # one included; the encoders' categories_ carried that width (<U1 against <U12).
    public = np.array([True] * 4 + [False] * 2)
    dtypes = []
    for last in ("a", "zzzzzzzzzzzz"):
        X = np.array([["a"], ["b"], ["a"], ["b"], ["a"], [last]])
        pft = PublicFitTransformer(OneHotEncoder(handle_unknown="ignore")).fit(
            X, public_mask=public)
        dtypes.append(pft.transformer_.categories_[0].dtype)
        assert pft.transform(X).shape == (6, 2)
    assert dtypes == [np.dtype("<U1"), np.dtype("<U1")]


def test_a_string_label_array_is_read_at_the_public_rows_own_width():
    # Red team 22: as for X above, on the y side: a private label "yes-but-long" made the
    # public labels '<U12' and TargetEncoder's classes_ with them.
    from sklearn.preprocessing import TargetEncoder

    X = np.array([["u"], ["v"], ["u"], ["v"], ["u"], ["v"], ["u"]])
    public = np.arange(7) < 6
    released = []
    for last in ("no", "yes", "yes-but-long"):
        y = np.array(["no", "yes", "yes", "no", "no", "yes", last])
        pft = PublicFitTransformer(TargetEncoder(target_type="binary", cv=2,
                                                 random_state=0)).fit(X, y, public_mask=public)
        released.append((pft.transformer_.classes_.tolist(), pft.transformer_.classes_.dtype))
    assert released == [(["no", "yes"], np.dtype("<U3"))] * 3
