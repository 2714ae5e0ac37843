import math

import pytest

from skhybrid.ppm._sample_complexity import ppm_sample_complexity


def test_realizable_hand_computed():
    # d=2, α=0.1, β=0.05, ε=0.5: (4 ln 40 + ln 20) / 0.05 = (14.7555 + 2.9957) / 0.05 = 355.02
    assert ppm_sample_complexity(2, 0.1, 0.05, 0.5, setting="realizable") == 356
    # d=1, α=β=ε=0.5: (ln 4 + ln 2) / 0.25 = 8.318 -> 9
    assert ppm_sample_complexity(1, 0.5, 0.5, 0.5, setting="realizable") == 9


def test_agnostic_hand_computed():
    # max(1/α², 1/(εα)) = max(100, 20) = 100: 17.7512 * 100 = 1775.1 -> 1776
    assert ppm_sample_complexity(2, 0.1, 0.05, 0.5) == 1776
    # Privacy-dominated branch: α=0.5, ε=0.1 -> max(4, 20) = 20;
    # d=3: 9 ln 60 + ln 10 = 36.849 + 2.3026 = 39.151 -> 783.03 -> 784
    assert ppm_sample_complexity(3, 0.5, 0.1, 0.1) == 784


def test_constant_and_ordering():
    base = (4 * math.log(2 / 0.05) + math.log(20)) / 0.05
    assert ppm_sample_complexity(2, 0.1, 0.05, 0.5, setting="realizable", constant=3) == math.ceil(
        3 * base
    )
    # Agnostic never needs fewer rows than realizable.
    for eps in (0.1, 0.5, 0.9):
        assert ppm_sample_complexity(2, 0.2, 0.1, eps) >= ppm_sample_complexity(
            2, 0.2, 0.1, eps, setting="realizable"
        )


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((0, 0.1, 0.1, 0.1), {}),
        ((2, 1.0, 0.1, 0.1), {}),
        ((2, 0.1, 0.0, 0.1), {}),
        ((2, 0.1, 0.1, float("inf")), {}),
        ((2, 0.1, 0.1, 0.1), {"setting": "proper"}),
        ((2, 0.1, 0.1, 0.1), {"constant": -1}),
    ],
)
def test_bad_input(args, kwargs):
    with pytest.raises(ValueError):
        ppm_sample_complexity(*args, **kwargs)
