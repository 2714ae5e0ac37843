"""Mechanism contracts: declared events, parameter validation, noise spying, RNG discipline."""

import math

from fractions import Fraction

import numpy as np
import pytest

from skhybrid.accounting import PrivacyEvent
from skhybrid.accounting import _composition as comp
from skhybrid.mechanisms import (
    ExponentialMechanism,
    GaussianMechanism,
    GaussianRandomizedResponse,
    LaplaceMechanism,
    RandomizedResponse,
    ReportNoisyMax,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    report_noisy_max,
    report_noisy_min,
)
from skhybrid.mechanisms._noise import record_noise

SCORES = np.array([0.0, 1.0, 3.0, 2.0])


def _rng(seed=0):
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- events


def test_laplace_event():
    mech = LaplaceMechanism(0.5, 2.0)
    e = mech.event()
    assert isinstance(e, PrivacyEvent)
    assert (e.mechanism, e.kind, e.epsilon, e.delta) == ("laplace", "pure", 0.5, 0.0)
    assert (e.rho, e.mu, e.count, e.population, e.source) == (None, None, 1, "central", "")
    assert e.params == {"scale": 4.0, "sensitivity": 2.0}


def test_event_count_population_source():
    e = LaplaceMechanism(1.0).event(count=7, population="local", source="Est")
    assert (e.count, e.population, e.source) == (7, "local", "Est")
    with pytest.raises(ValueError, match="count"):
        LaplaceMechanism(1.0).event(count=0)
    with pytest.raises(ValueError, match="population"):
        LaplaceMechanism(1.0).event(population="global")


@pytest.mark.parametrize("calibration", ["analytic", "classic"])
def test_gaussian_event(calibration):
    mech = GaussianMechanism(0.5, 1e-6, sensitivity=3.0, calibration=calibration)
    e = mech.event(count=2)
    assert (e.mechanism, e.kind, e.epsilon, e.delta, e.count) == ("gaussian", "zcdp", 0.5, 1e-6, 2)
    assert e.params["calibration"] == calibration and e.params["sigma"] == mech.sigma
    # The declared (ε, δ) follows from the declared ρ (Canonne, Kamath & Steinke, Cor. 13),
    # and every lattice release realises at most that ρ, with at least the reference sigma.
    assert comp.zcdp_epsilon(e.rho, e.delta) <= e.epsilon * (1 + 1e-12)
    for d in (1, 10, 1000):
        g, sigma_int, rho = mech.lattice(d)
        assert rho <= e.rho and g * sigma_int >= mech.sigma


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_event(monotonic):
    mech = ExponentialMechanism(0.8, 2.0, monotonic=monotonic)
    e = mech.event()
    assert (e.mechanism, e.kind, e.epsilon, e.delta) == ("exponential", "pure", 0.8, 0.0)
    # ε-bounded range ⇒ ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2).
    assert e.rho == pytest.approx(0.8**2 / 8)
    assert e.mu is None
    assert e.params["gumbel_scale"] == pytest.approx((1 if monotonic else 2) * 2.0 / 0.8)


def test_zcdp_of_pure_and_exponential_events_is_never_below_the_exact_value():
    # exact ε²/8 rounded up; the float ε**2 / 8 (the previous code) lands an ulp below
    # for about two ε in five
    rng = np.random.default_rng(0)
    old_below = 0
    for eps in rng.uniform(0.01, 10.0, 200).tolist():
        rho = ExponentialMechanism(eps).event().rho
        assert Fraction(eps) ** 2 / 8 <= Fraction(rho) < Fraction(eps) ** 2 / 8 * (1 + 2**-51)
        old_below += Fraction(eps**2 / 8) < Fraction(eps) ** 2 / 8
        assert Fraction(eps) ** 2 / 2 <= Fraction(comp.pure_to_zcdp(eps))
    assert old_below > 0
    assert comp.pure_to_zcdp(np.inf) == np.inf


def test_report_noisy_max_event():
    e = ReportNoisyMax(0.4, 1.0).event()
    assert (e.mechanism, e.kind, e.epsilon, e.delta, e.rho, e.mu) == (
        "report_noisy_max", "pure", 0.4, 0.0, None, None)
    assert e.params["scale"] == pytest.approx(5.0)
    assert ReportNoisyMax(0.4, 1.0, monotonic=True).event().params["scale"] == pytest.approx(2.5)


def test_randomized_response_event():
    e = RandomizedResponse(1.5).event(count=3, population="local")
    assert (e.mechanism, e.kind, e.epsilon, e.delta, e.count, e.population) == (
        "randomized_response", "pure", 1.5, 0.0, 3, "local")
    assert e.params["keep_probability"] == pytest.approx(math.exp(1.5) / (1 + math.exp(1.5)))


def test_gaussian_randomized_response_event():
    mech = GaussianRandomizedResponse(1.0, 1e-5)
    e = mech.event(population="local")
    assert (e.mechanism, e.kind, e.epsilon, e.delta, e.population) == (
        "gaussian_randomized_response", "zcdp", 1.0, 1e-5, "local")
    assert mech.sigma >= math.sqrt(2 * math.log(2 / 1e-5))  # at least the paper's sigma
    assert comp.zcdp_epsilon(e.rho, 1.0 and 1e-5) <= 1.0 * (1 + 1e-12)


def test_gaussian_randomized_response_adds_noise_where_the_paper_sigma_is_not_enough():
    # sigma = sqrt(2 ln(2/delta))/epsilon is not (20, 0.1)-DP: the lattice noise is larger.
    mech = GaussianRandomizedResponse(20.0, 0.1)
    assert mech.sigma > math.sqrt(2 * math.log(2 / 0.1)) / 20.0
    assert comp.zcdp_epsilon(mech.rho, 0.1) <= 20.0 * (1 + 1e-12)


# --------------------------------------------------------------------------- validation

BAD_EPSILONS = [0.0, -1.0, math.nan, math.inf, "1", None, True]
BAD_DELTAS = [0.0, 1.0, -0.1, 1.5, math.nan, None]
BAD_SENSITIVITIES = [0.0, -2.0, math.nan, math.inf, "1"]


@pytest.mark.parametrize("epsilon", BAD_EPSILONS)
@pytest.mark.parametrize("make", [
    lambda eps: LaplaceMechanism(eps),
    lambda eps: GaussianMechanism(eps, 1e-5),
    lambda eps: ExponentialMechanism(eps),
    lambda eps: ReportNoisyMax(eps),
    lambda eps: RandomizedResponse(eps),
    lambda eps: GaussianRandomizedResponse(eps, 1e-5),
], ids=["laplace", "gaussian", "exponential", "rnm", "rr", "grr"])
def test_bad_epsilon(make, epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        make(epsilon)


@pytest.mark.parametrize("delta", BAD_DELTAS)
@pytest.mark.parametrize("make", [
    lambda d: GaussianMechanism(1.0, d),
    lambda d: GaussianRandomizedResponse(1.0, d),
], ids=["gaussian", "grr"])
def test_bad_delta(make, delta):
    with pytest.raises(ValueError, match="delta"):
        make(delta)


@pytest.mark.parametrize("sensitivity", BAD_SENSITIVITIES)
@pytest.mark.parametrize("make", [
    lambda s: LaplaceMechanism(1.0, s),
    lambda s: GaussianMechanism(1.0, 1e-5, s),
    lambda s: ExponentialMechanism(1.0, s),
    lambda s: ReportNoisyMax(1.0, s),
], ids=["laplace", "gaussian", "exponential", "rnm"])
def test_bad_sensitivity(make, sensitivity):
    with pytest.raises(ValueError, match="sensitivity"):
        make(sensitivity)


def test_bad_calibration():
    with pytest.raises(ValueError, match="calibration"):
        GaussianMechanism(1.0, 1e-5, calibration="exact")
    # The classic bound only holds for ε < 1 (Dwork & Roth 2014, Thm A.1).
    with pytest.raises(ValueError, match="epsilon"):
        GaussianMechanism(1.5, 1e-5, calibration="classic")


@pytest.mark.parametrize("bits", [[0, 2], [0.5, 1], [np.nan, 0], [-1]])
@pytest.mark.parametrize("mech", [RandomizedResponse(1.0), GaussianRandomizedResponse(1.0, 1e-5)],
                         ids=["rr", "grr"])
def test_randomized_response_rejects_non_bits(mech, bits):
    with pytest.raises(ValueError, match="bits"):
        mech(np.array(bits), _rng())


def test_randomized_response_accepts_bool_bits():
    out = RandomizedResponse(1.0)(np.array([True, False]), _rng())
    assert out.dtype == np.int8


@pytest.mark.parametrize("scores", [[0.0, np.nan], [0.0, np.inf], [], [[0.0, 1.0]]],
                         ids=["nan", "+inf", "empty", "2d"])
@pytest.mark.parametrize("mech", [ExponentialMechanism(1.0), ReportNoisyMax(1.0)], ids=["em", "rnm"])
def test_bad_scores(mech, scores):
    with pytest.raises(ValueError, match="scores"):
        mech(np.array(scores), _rng())


@pytest.mark.parametrize("mech", [ExponentialMechanism(1.0), ReportNoisyMax(1.0)], ids=["em", "rnm"])
def test_all_excluded_scores_rejected(mech):
    with pytest.raises(ValueError, match="scores"):
        mech(np.full(3, -np.inf), _rng())


# --------------------------------------------------------------------------- noise spying


def test_record_noise_per_mechanism():
    value = np.zeros((3, 4))
    lap = LaplaceMechanism(0.5, 2.0)
    gauss = GaussianMechanism(1.0, 1e-5, 2.0)
    em = ExponentialMechanism(0.5, 1.0)
    rnm = ReportNoisyMax(0.5, 1.0, monotonic=True)
    rr = RandomizedResponse(1.0)
    grr = GaussianRandomizedResponse(1.0, 1e-5)
    rng = _rng()
    with record_noise() as draws:
        lap(value, rng)
        lap(1.0, rng)
        gauss(value, rng)
        em(SCORES, rng)
        rnm(SCORES, rng)
        rr(np.zeros(6, dtype=int), rng)
        grr(np.ones(5, dtype=int), rng)
    got = [(d.kind, d.scale, d.count, d.tag) for d in draws]
    # Laplace noise is exact lattice noise whose scale is the nominal 4.0 within 0.2 %.
    assert [(k, c, t) for k, _, c, t in got[:2]] == [("discrete_laplace", 12, "laplace"),
                                                      ("discrete_laplace", 1, "laplace")]
    assert all(4.0 <= d.scale <= 4.0 * 1.002 for d in draws[:2])
    got[:2] = [("laplace", 4.0, 12, "laplace"), ("laplace", 4.0, 1, "laplace")]
    expected = [
        ("laplace", 4.0, 12, "laplace"),
        ("laplace", 4.0, 1, "laplace"),
        ("discrete_gaussian", gauss.lattice(12)[0] * gauss.lattice(12)[1], 12, "gaussian"),
        ("exact_exponential", 4.0, 4, "exponential"),
        ("discrete_laplace", 2.0, 4, "report_noisy_max"),
        ("bernoulli", 1.0 - rr.keep_probability, 6, "randomized_response"),
        ("discrete_gaussian", grr.sigma, 5, "gaussian_randomized_response"),
    ]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g[0] == e[0] and g[2:] == e[2:]
        assert g[1] == pytest.approx(e[1])


def test_record_noise_nesting_and_exit():
    rng = _rng()
    with record_noise() as outer:
        laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0, rng=rng)
        with record_noise() as inner:
            gaussian_mechanism(0.0, sensitivity=1.0, epsilon=1.0, delta=1e-5, rng=rng)
    laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0, rng=rng)  # not recorded
    assert [d.kind for d in outer] == ["discrete_laplace", "discrete_gaussian"]
    assert [d.kind for d in inner] == ["discrete_gaussian"]


def test_noise_scale_matches_declared_event():
    """The spy's scale is what the event claims (layer D's check, mechanism by mechanism)."""
    lap, gauss = LaplaceMechanism(0.25, 3.0), GaussianMechanism(0.5, 1e-6, 3.0)
    with record_noise() as draws:
        lap(np.zeros(2), _rng())
        gauss(np.zeros(2), _rng())
    # The lattice noise is never smaller than the event claims, and at most 0.2 % larger.
    assert 3.0 / draws[0].scale <= lap.event().epsilon <= 1.002 * 3.0 / draws[0].scale
    g, sigma_int, rho = gauss.lattice(2)
    assert draws[1].scale == g * sigma_int >= gauss.sigma and rho <= gauss.event().rho


# --------------------------------------------------------------------------- RNG discipline

CALLS = [
    lambda rng: LaplaceMechanism(1.0)(np.zeros(5), rng),
    lambda rng: GaussianMechanism(1.0, 1e-5)(np.zeros(5), rng),
    lambda rng: np.array([exponential_mechanism(SCORES, sensitivity=1.0, epsilon=1.0, rng=rng)
                          for _ in range(20)]),
    lambda rng: np.array([report_noisy_max(SCORES, sensitivity=1.0, epsilon=1.0, rng=rng)
                          for _ in range(20)]),
    lambda rng: np.array([report_noisy_min(SCORES, sensitivity=1.0, epsilon=1.0, rng=rng)
                          for _ in range(20)]),
    lambda rng: RandomizedResponse(0.5)(np.zeros(50, dtype=int), rng),
    lambda rng: GaussianRandomizedResponse(1.0, 1e-5)(np.zeros(5, dtype=int), rng),
]
IDS = ["laplace", "gaussian", "exponential", "rnm", "rnmin", "rr", "grr"]


@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_same_seed_same_output_and_global_state_untouched(call):
    np.random.seed(123)
    state = np.random.get_state()
    a, b = call(_rng(42)), call(_rng(42))
    assert np.array_equal(a, b)
    after = np.random.get_state()
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2:] == after[2:]
    # Different seeds give different noise (no hidden fixed seed).
    assert not np.array_equal(call(_rng(1)), call(_rng(2)))


@pytest.mark.parametrize("call", CALLS, ids=IDS)
def test_draws_only_from_the_generator_passed(call):
    rng = _rng(5)
    before = rng.bit_generator.state
    call(rng)
    assert rng.bit_generator.state != before  # it consumed randomness from rng ...
    # ... and only from rng: an identical generator advanced the same way gives the same output.
    rng_a, rng_b = _rng(6), _rng(6)
    call(rng_a)
    call(rng_b)
    assert rng_a.bit_generator.state == rng_b.bit_generator.state


def test_report_noisy_min_excludes_with_plus_inf():
    rng = np.random.default_rng(0)
    assert report_noisy_min([np.inf, 0.0, np.inf], sensitivity=1.0, epsilon=1.0, rng=rng) == 1
    with pytest.raises(ValueError, match="use inf to exclude"):
        report_noisy_min([-np.inf, 0.0], sensitivity=1.0, epsilon=1.0, rng=rng)


@pytest.mark.parametrize("sensitivity, integer", [(1.0, False), (1e-3, False), (1.0, True)])
def test_laplace_value_bound_is_where_the_clamp_bites(sensitivity, integer):
    mech = LaplaceMechanism(1.0, sensitivity)
    bound = mech.value_bound(integer=integer)
    dtype = np.int64 if integer else np.float64
    rng = np.random.default_rng(0)
    slack = 60 * mech.scale  # the noise, many scales wide
    inside = mech(np.array([bound / 2], dtype=dtype), rng)[0]
    assert abs(inside - bound / 2) < slack
    beyond = mech(np.array([bound * 4], dtype=dtype), rng)[0]  # clamped: released near the bound
    assert abs(beyond - bound) < slack


def test_functional_mechanisms_take_the_estimators_seeds():
    # rng accepts what random_state does: an int seeds (reproducibly), None draws fresh
    # entropy, a RandomState is wrapped; anything else is refused naming rng.
    from skhybrid.mechanisms import (exponential_mechanism, gaussian_mechanism,
                                     report_noisy_min)

    calls = [lambda rng: laplace_mechanism(1.0, sensitivity=1, epsilon=1, rng=rng),
             lambda rng: gaussian_mechanism(1.0, sensitivity=1, epsilon=1, delta=1e-5, rng=rng),
             lambda rng: exponential_mechanism([1, 2, 3], sensitivity=1, epsilon=1, rng=rng),
             lambda rng: report_noisy_min([1, 2, 3], sensitivity=1, epsilon=1, rng=rng)]
    for call in calls:
        assert call(7) == call(7) == call(np.random.default_rng(7))
        call(None)
        call(np.random.RandomState(0))
        with pytest.raises(ValueError, match="rng must be None, an int"):
            call("seed")
