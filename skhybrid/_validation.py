"""Input validation shared by every skhybrid estimator: masks, privacy parameters, bounds."""

import math
import warnings
from contextlib import contextmanager
from numbers import Integral, Real

import numpy as np
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from .exceptions import PrivacyLeakWarning

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_mask",
    "check_group_nonempty",
    "check_generator",
    "check_binary_targets",
    "resolve_classes",
    "values_hidden",
]


# Messages of numpy's and scikit-learn's input checks that quote the data: the offending
# cell ("could not convert string to float: '...'"), the whole array (complex input, a 1-D
# X) or the label values. Each is replaced by a message that says the same without them
# (keeping scikit-learn's opening words, which its estimator checks look for).
_QUOTING_ERRORS = (
    (("Complex data not supported",),
     "Complex data not supported: {name} holds complex numbers; split them into real "
     "features (e.g. real and imaginary parts) first."),
    (("could not convert", "invalid literal"),
     "{name} holds an entry that is not a real number (e.g. a string or a complex number). "
     "Convert {name} to numbers first: encode a categorical column, e.g. with "
     "PublicFitTransformer(OrdinalEncoder(...)), whose categories come from public rows."),
    (("Found unknown categories",),
     "{name} holds a category that the public rows do not show (the encoder learnt its "
     "categories from public rows only). Declare every category (the encoder's "
     "categories=[...]) or let the encoder map unknown ones, e.g. "
     "OrdinalEncoder(handle_unknown='use_encoded_value', unknown_value=-1) or "
     "OneHotEncoder(handle_unknown='ignore')."),
    (("Expected 2D array, got",),
     "Expected 2D array X, got a 1-D array or a scalar. Reshape your data with "
     "X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it holds a single "
     "sample."),
    (("Unknown label type",),
     "Unknown label type: y must hold discrete class labels (not continuous values or "
     "objects)."),
    (("Mix of label input types",),
     "Mix of label input types (string and number): y must hold labels of one type."),
)


@contextmanager
def values_hidden(name="X"):
    """Re-raise input errors whose message quotes the data without the quote.

    numpy's and scikit-learn's conversions print the value they could not convert, or the
    whole array, and a private row's value must not leave in a message. The replacement
    says what is wrong and how to fix it; the original is not chained (its text would
    still be printed in the traceback).
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        text = str(exc)
        for markers, message in _QUOTING_ERRORS:
            if any(m in text for m in markers):
                raise type(exc)(message.format(name=name) + " (The value is not shown: it "
                                "may be private.)") from None
        raise


#: The finite ε skhybrid accepts. Outside it the calibrations leave double precision
#: (e^ε, ε², sample sizes ∝ 1/ε overflow) long before a guarantee could mean anything:
#: below 1e-12 the noise is 1e12 times the signal, above 1e6 it is a millionth of it
#: (``np.inf`` is the non-private baseline).
EPSILON_RANGE = (1e-12, 1e6)


def check_epsilon(epsilon, name="epsilon", allow_inf=False):
    """Validate a privacy parameter ε in ``EPSILON_RANGE`` (or ``np.inf`` if ``allow_inf``).

    ``allow_inf=True`` accepts ``np.inf``, which runs an estimator's non-private baseline.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or math.isnan(epsilon):
        raise ValueError(f"{name} must be a positive float; got {epsilon!r}.")
    if epsilon <= 0 or (math.isinf(epsilon) and not allow_inf):
        what = "positive float (or np.inf for the non-private baseline)" if allow_inf else (
            "positive finite float")
        raise ValueError(f"{name} must be a {what}; got {epsilon!r}.")
    low, high = EPSILON_RANGE
    # (The range keeps the calibrations inside double precision, which a few units in
    # the last place do not change: ε = 1e-12 split k ways rounds down, not to nearest.)
    if not math.isinf(epsilon) and not (low * (1 - 2.0**-40) <= epsilon <= high):
        baseline = " (np.inf runs the non-private baseline)" if allow_inf else ""
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}]{baseline}; got {epsilon!r}. "
                         "Outside it the calibrations overflow double precision.")
    return float(epsilon)


def check_epsilon_halves(epsilon, why):
    """``epsilon/2`` must lie in ``EPSILON_RANGE``: refuse naming the user's ε, not its half.

    ``why`` says what the two halves pay for (e.g. ``"curator_mask=None: ..."``).
    """
    low = EPSILON_RANGE[0]
    if not math.isinf(epsilon) and epsilon / 2 < low:
        raise ValueError(
            f"epsilon={epsilon!r} is split in two halves ({why}); each, {epsilon / 2:.3g}, is "
            f"below the smallest supported epsilon {low:g}. Use epsilon >= {2 * low:g}. "
            "Nothing was charged."
        )


def check_delta(delta, name="delta", strictly_positive=False):
    """Validate δ ∈ [0, 1) (or (0, 1) when the mechanism needs δ > 0)."""
    if isinstance(delta, bool) or not isinstance(delta, Real) or math.isnan(delta):
        raise ValueError(f"{name} must be a float in [0, 1); got {delta!r}.")
    if not (0 <= delta < 1) or (strictly_positive and delta == 0):
        interval = "(0, 1)" if strictly_positive else "[0, 1)"
        hint = " (this mechanism needs delta > 0)" if strictly_positive and delta == 0 else ""
        raise ValueError(f"{name} must lie in {interval}{hint}; got {delta!r}.")
    return float(delta)


def check_positive(value, name, allow_inf=False, integer=False):
    """Validate a positive finite bound (a norm bound, a count, a regularisation strength)."""
    kind = Integral if integer else Real
    if isinstance(value, bool) or not isinstance(value, kind) or math.isnan(value) or value <= 0 or (
        math.isinf(value) and not allow_inf
    ):
        what = "positive integer" if integer else "positive finite float"
        raise ValueError(f"{name} must be a {what}; got {value!r}.")
    return int(value) if integer else float(value)


def check_mask(mask, n_samples, name="public_mask", index=None):
    """Validate a row mask and return it as a boolean array of shape (n_samples,).

    Parameters
    ----------
    mask : array-like of bool or {0, 1}, or None
        One entry per row; True marks the more-trusted group (public rows, or the
        curator's rows). Lists, numpy arrays and pandas Series are accepted. ``None``
        means no row is in the trusted group.
    n_samples : int
        Number of rows of X. sklearn's metadata routing passes a wrong-length mask
        through unsplit, so the length is checked here.
    name : str
        The parameter's name, used in error messages.
    index : pandas Index or None
        The index of X when X is a DataFrame (read before X is converted). A mask that
        carries an index (a pandas Series) is aligned to it by label, never read by
        position: it is refused when the two indexes differ as sets (or have duplicate
        labels), and, when X has no index, unless the mask's index is the default
        ``RangeIndex`` (0..n-1), the only case where positions and labels agree.

    Returns
    -------
    mask : ndarray of bool, shape (n_samples,)
    """
    if mask is None:
        return np.zeros(n_samples, dtype=bool)
    if hasattr(mask, "index") and hasattr(mask, "to_numpy"):  # pandas Series
        mask = _align_mask(mask, index, name)
    elif hasattr(mask, "to_numpy"):
        mask = mask.to_numpy()
    arr = np.asarray(mask)
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-d array with one entry per row of X; got an array of shape "
            f"{arr.shape}."
        )
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {arr.shape[0]} entries but X has {n_samples} rows; pass one boolean "
            f"per row (inside a CV search, pass it as a fit parameter so it is split per fold)."
        )
    if arr.dtype == bool:
        return arr.copy()
    if arr.dtype.kind in "iuf":
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN; every row must be marked True/False (1/0).")
        if not np.isin(arr, (0, 1)).all():
            bad = np.unique(arr[~np.isin(arr, (0, 1))])[:5]
            raise ValueError(
                f"{name} must contain only booleans or 0/1; found values {bad.tolist()}."
            )
        return arr.astype(bool)
    if arr.dtype == object and all(isinstance(v, (bool, np.bool_)) for v in arr):
        return arr.astype(bool)
    if arr.dtype == object and any(_is_missing(v) for v in arr):
        raise ValueError(f"{name} has missing values (None, NaN or pandas.NA); every row must "
                         "be marked True/False (1/0).")
    raise ValueError(f"{name} must be boolean or 0/1; got dtype {arr.dtype}.")


def _is_missing(value):
    """None, a float NaN or pandas.NA (without importing pandas)."""
    return value is None or type(value).__name__ == "NAType" or (
        isinstance(value, float) and math.isnan(value))


def _align_mask(mask, index, name):
    """A pandas mask as a numpy array in X's row order (see :func:`check_mask`)."""
    m_index = mask.index
    if index is None:
        default = (type(m_index).__name__ == "RangeIndex" and m_index.start == 0
                   and m_index.step == 1)
        if not default:
            raise ValueError(
                f"{name} is a pandas Series with its own index, but X has no index to align "
                f"it to (X is not a DataFrame). Pass X as a DataFrame with the same index, or "
                f"{name}.to_numpy() if the mask is already in X's row order. (In "
                "cross-validation each fold's slice of a Series keeps its labels: pass the "
                "mask as a numpy array, or keep X a DataFrame through a pipeline with "
                "set_output(transform='pandas').)"
            )
        return mask.to_numpy()
    if not (m_index.is_unique and index.is_unique):
        raise ValueError(f"{name} and X must have unique index labels to be aligned.")
    if len(m_index) != len(index) or not m_index.isin(index).all():
        raise ValueError(
            f"The index of {name} differs from X's index (as sets of labels), so rows "
            f"cannot be matched. Pass a mask indexed like X (e.g. {name}.reindex(X.index) "
            "after checking that no label is missing)."
        )
    return mask.reindex(index).to_numpy()


def check_binary_targets(y, name, detail=""):
    """Check that ``y`` holds exactly two classes; return ``(classes, bits)``.

    ``classes`` is sorted (as sklearn's ``classes_``), ``bits`` maps ``classes[0] ↦ 0`` and
    ``classes[1] ↦ 1`` (uint8). The label set is treated as public, as the number of rows is.
    ``name`` (the estimator) and ``detail`` go into the error message.
    """
    with values_hidden("y"):
        check_classification_targets(y)
    classes, bits = np.unique(y, return_inverse=True)
    if classes.size != 2:
        raise ValueError(
            f"Only binary classification is supported. {name} needs y with exactly two "
            f"classes{detail}; got {classes.size} class(es)."
        )
    return classes, bits.astype(np.uint8)


def check_group_nonempty(mask, name, group, trusted=True):
    """Raise ValueError if the group selected by ``mask`` (or its complement) is empty."""
    rows = mask if trusted else ~mask
    if not rows.any():
        raise ValueError(
            f"{name} leaves no {group}: at least one row must be "
            f"{'True' if trusted else 'False'} in {name}."
        )


def check_generator(random_state, name="random_state"):
    """Bridge sklearn's ``random_state`` to a :class:`numpy.random.Generator`.

    ``None`` draws fresh OS entropy (never the global numpy state: a privacy mechanism
    seeded from it would repeat noise after ``np.random.seed``); an int seeds a new
    generator; a ``RandomState`` is wrapped around its bit generator (its state advances);
    a ``Generator`` is used as is.

    A fixed seed reused across CV folds or refits reuses noise: fine for tests and
    reproductions, wrong for releases.
    """
    check_random_state_kind(random_state, name)
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.Generator(random_state._bit_generator)
    return np.random.default_rng(int(random_state))


def check_random_state_kind(random_state, name="random_state", suffix=""):
    """Refuse a ``random_state`` that :func:`check_generator` cannot use, without drawing.

    ``suffix`` ends the message (an estimator checks before its charge: "Nothing was
    charged.").
    """
    if random_state is None or isinstance(
            random_state, (np.random.Generator, np.random.RandomState)) or (
            isinstance(random_state, Integral) and not isinstance(random_state, bool)):
        return
    raise ValueError(
        f"{name} must be None, an int, a numpy RandomState or Generator; got "
        f"{random_state!r}.{suffix}"
    )


def labels_as_given(y, rows):
    """The labels of ``rows`` as the caller gave them: a list's (or tuple's) entries at
    those rows, converted alone; None for an array or a Series, whose dtype is the
    caller's. Converted whole, a list takes one dtype from every label, so one private
    ``1.0`` among ints made the public rows' labels, and ``classes_``, floats.
    """
    if hasattr(y, "__array__") or not hasattr(y, "__getitem__"):
        return None
    return np.asarray([y[i] for i in np.flatnonzero(rows)])


def resolve_classes(y, classes, *, estimator, trusted=None, binary=False, origin=None,
                    public_labels=None):
    """The label set of a classifier, declared or public; encode ``y`` against it.

    The label set is a domain: reading it from private labels makes ``classes_``, the shape
    of ``predict_proba`` and the validity of the fit depend on one private row. So, in order:

    1. ``classes`` declared by the user: used as given (sorted, duplicates removed), typed
       by itself (``np.asarray(classes)``), never by ``y``, whose dtype every label sets;
    2. otherwise the labels of the ``trusted`` rows (public rows), when they show enough
       classes (exactly two for a binary learner, at least two otherwise);
    3. otherwise the labels of every row, with a :class:`~skhybrid.exceptions.PrivacyLeakWarning`
       saying that the label set is outside the guarantee and how to declare it.

    In cases 1 and 2 the guarantee holds over data sets whose labels lie in that set (the
    data universe); a private label outside it is refused with a ``ValueError`` that names
    no value and no row, before anything is charged or computed. Labels are compared by
    value: ``1.0`` and ``Decimal(1)`` are the label ``1``; ``"1"`` is not.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Every row's label.
    classes : array-like or None
        The estimator's ``classes`` parameter.
    estimator : str
        The estimator's name, for messages.
    trusted : ndarray of bool of shape (n_samples,) or None
        Rows whose labels are public (``public_mask``). ``None``: no such rows.
    binary : bool, default=False
        The learner handles exactly two classes.
    origin : str or None
        Where a non-``None`` ``classes`` came from, for messages (default: "the declared
        classes").
    public_labels : ndarray or None
        The trusted rows' labels as given (:func:`labels_as_given`), when ``y`` was a list
        converted with every row; ``None``: ``y[trusted]``.

    Returns
    -------
    classes_ : ndarray of shape (n_classes,)
        Sorted label set.
    codes : ndarray of int of shape (n_samples,)
        Index of each row's label in ``classes_``.
    """
    y = np.asarray(y)
    need = "exactly two" if binary else "at least two"
    # The type of target (discrete or continuous) is checked on the label set, not on y:
    # one private label (0.5 among whole numbers) makes y "continuous", and a refusal for
    # a label inside a declared set would tell that row apart (red team 20).
    if classes is not None:
        # The declared set is typed by itself, never by y, whose dtype every label sets,
        # private ones included: cast to y's string dtype, a declared label was cut to the
        # longest label present (red team 18); typed like y, classes_ was an object array
        # when one private label was Decimal(1), strings when it was "1" among ints (red
        # team 22). y is compared with the set by value below, so a label of another kind
        # (a string against numbers) is outside it.
        declared = np.asarray(classes)
        strings = [isinstance(c, (str, bytes))
                   for c in np.asarray(classes, dtype=object).ravel()]
        try:
            # (np.asarray made strings of [0, "a"]: a set mixing strings with other values
            # is refused, as scikit-learn refuses such labels)
            found = np.unique(declared) if all(strings) or not any(strings) else None
        except TypeError:  # (an object array of values that do not compare)
            found = None
        if found is not None and found.dtype == object:
            # An object array's type is its entries': ints in an object column (its
            # unique()) are discrete (red team 21), and classes_ holds them as ints, which
            # scikit-learn's own estimators take (an object array of ints they refuse).
            typed = np.asarray(found.tolist())
            found = found if typed.dtype == object else typed
        if found is None or type_of_target(found) not in ("binary", "multiclass"):
            raise ValueError(
                f"classes must list discrete labels (integers or strings) for {estimator}; "
                "the declared set holds continuous values or objects of mixed types "
                "(classes is a parameter, so this names no private value).")
        if found.ndim != 1 or (binary and found.size != 2) or found.size < 2:
            raise ValueError(
                f"classes must list {need} distinct labels for {estimator}; got "
                f"{found.size} (classes is a parameter, so this names no private value)."
            )
        source = "classes"
    else:
        found = None
        if trusted is not None and np.any(trusted):
            public_labels = np.unique(y[trusted] if public_labels is None else public_labels)
            if public_labels.size == 2 or (not binary and public_labels.size > 2):
                with values_hidden("y"):
                    check_classification_targets(public_labels)
                found, source = public_labels, "public"
        if found is None:
            with values_hidden("y"):
                check_classification_targets(y)
            found = np.unique(y)
            # A learner without public rows (the hybrid model's curator rows are private)
            # gets no word about public rows it does not have.
            why = (f"its public rows do not show {need} labels" if trusted is not None
                   else "none of its rows is public")
            warnings.warn(
                f"{estimator} was given no classes= and {why}, so the label set was read "
                "from private rows: classes_, the shape of "
                "predict_proba and whether the fit succeeds are outside the privacy guarantee. "
                "Declare the label set with classes=[...].",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            if (binary and found.size != 2) or found.size < 2:
                raise ValueError(
                    f"Only binary classification is supported. {estimator} needs y with "
                    f"exactly two classes; got {found.size} class(es)." if binary else
                    f"{estimator} needs y with at least two classes; got {found.size} class."
                )
            source = "data"
    try:
        if source != "data" and (y.dtype == object or y.dtype.kind != found.dtype.kind):
            # Each label looked up by value (1, 1.0, Decimal(1) and np.int64(1) are equal and
            # hash alike): sorting an object array compares its labels with each other, and
            # np.int64 against Decimal raised or not depending on where the odd label fell
            # (red team 23); and numpy compares ints with floats in float64, where 2^53 + 1
            # is 2^53 (red team 24). (Labels of the set's own kind take the sorted path.)
            index = {}
            for code, label in enumerate(found.tolist()):
                index.setdefault(label, code)
            codes = np.fromiter((index.get(label, -1) for label in y), dtype=np.intp,
                                count=y.size)
            outside = bool((codes < 0).any())
        else:
            codes = np.minimum(np.searchsorted(found, y), found.size - 1)
            outside = source != "data" and not np.array_equal(found[codes], y)
    except TypeError:  # a label that does not compare with the set's (or hash): outside it
        codes, outside = None, True
    if outside:
        what = (origin or "the declared classes") if source == "classes" else (
            "the labels of the public rows")
        raise ValueError(
            f"y has a label outside {what}; {estimator} refuses the data set before "
            "anything is charged (its guarantee covers labels in that set). "
            + ("Fix the labels, or declare the label set with classes=[...]."
               if source == "classes" else "Declare the full label set with classes=[...].")
        )
    return found, codes
