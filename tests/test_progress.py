"""The progress policy: bars on stderr with progress=True, none with False, "auto" on a
terminal only, nested bars, and results that never depend on it."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdlearn import _progress
from crowdlearn._progress import (
    check_progress,
    format_postfix,
    progress_bar,
    progress_enabled,
    progress_scope,
    set_progress_default,
)
from crowdlearn.aggregation import DSWC, GLAD, MACE, DawidSkene, OneCoinDawidSkene
from crowdlearn.learning import (
    DLEM,
    ICED,
    TRAINING_PARAMS,
    AnnotMix,
    CoNAL,
    CrowdInG,
    CrowdLayer,
    CrowdLayerSelf,
    CrowdMixture,
    DoctorNet,
    DoctorNetWeighted,
    GeoCrowdNet,
    MaDL,
    MaxMIG,
    SelfCrowd,
    TraceReg,
    TwoStage,
    UnionNet,
)
from crowdlearn.simulate import crowd_on_features

TINY = {"max_epochs": 2, "batch_size": 32, "hidden": (8,), "device": "cpu"}

#: Every learner, tiny, with the bar descriptions its fit must show.
LEARNERS = {
    "crowdlayer": (lambda: CrowdLayer(**TINY), ["CrowdLayer", "epoch"]),
    "conal": (lambda: CoNAL(**TINY), ["CoNAL"]),
    "dl-em": (lambda: DLEM(n_restarts=2, **TINY), ["DLEM restarts", "restart", "DLEM"]),
    "cmm": (lambda: CrowdMixture(n_groups=2, **TINY), ["CrowdMixture"]),
    "twostage": (lambda: TwoStage(DawidSkene(), soft=True, **TINY), ["TwoStage", "DawidSkene"]),
    "doctornet": (lambda: DoctorNet(**TINY), ["DoctorNet"]),
    "doctornet-w": (lambda: DoctorNetWeighted(**TINY), ["DoctorNetWeighted"]),
    "annot-mix": (lambda: AnnotMix(**TINY), ["AnnotMix"]),
    "madl": (lambda: MaDL(**TINY), ["MaDL"]),
    "max-mig": (lambda: MaxMIG(**TINY), ["MaxMIG"]),
    "geocrowdnet": (lambda: GeoCrowdNet(**TINY), ["GeoCrowdNet"]),
    "trace-reg": (lambda: TraceReg(**TINY), ["TraceReg"]),
    "union-net": (lambda: UnionNet(**TINY), ["UnionNet"]),
    "self-crowd": (
        lambda: SelfCrowd(n_per_round=20, n_rounds=1, **TINY),
        ["SelfCrowd", "round", "CrowdLayer round 0", "CrowdLayer round 1"],
    ),
    "dl-cl+self": (lambda: CrowdLayerSelf(**TINY), ["CrowdLayerSelf", "round"]),
    "iced": (
        lambda: ICED(
            n_rounds=1,
            warmup_epochs=1,
            decoder_epochs=2,
            decoder_refit_epochs=1,
            **{**TINY, "max_epochs": 4},
        ),
        ["ICED", "ICED decoder", "stage=round", "DawidSkene"],
    ),
    "crowding": (  # every stage, the DL-CL+InG retraining included
        lambda: CrowdInG(
            gan_epochs=2, updates_per_epoch=1, gan_pretrain_epochs=1, final="crowdlayer", **TINY
        ),
        [
            "CrowdInG",
            "stage",
            "CrowdLayer",
            "G pre-training",
            "D pre-training",
            "CrowdInG epochs",
            "update",
            "DL-CL+InG retraining",
        ],
    ),
}


@pytest.fixture(scope="module")
def crowd():
    rng = np.random.default_rng(0)
    y = (rng.random(60) < 0.3).astype(int)
    X = (rng.normal(size=(60, 4)) + 1.5 * y[:, None]).astype(np.float32)
    return crowd_on_features(X, y, n_workers=5, labels_per_task=2, seed=0), X


@pytest.fixture
def terminal(monkeypatch):
    """Make the captured stderr claim to be a terminal (on its class: capsys swaps the
    stream object between the fixtures' setup and the test's call)."""
    monkeypatch.setattr(type(sys.stderr), "isatty", lambda self: True)


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_every_learner_shows_its_bars_only_when_asked_and_results_do_not_change(
    name, crowd, capsys
):
    data, X = crowd
    make, expected = LEARNERS[name]
    capsys.readouterr()
    # on the whole crowd (valid=None): every stage of every learner runs, ICED's decoder
    # pre-training included; crowd validation has its own test below
    shown = make().set_params(progress=True).fit(data, valid=None)
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, f"{name}: {text!r} missing from stderr:\n{err}"
    assert "100%" in err or "|" in err  # a tqdm bar, not just a word
    silent = make().set_params(progress=False).fit(data, valid=None)
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(shown.predict_proba(X), silent.predict_proba(X))


def test_crowd_validation_results_do_not_depend_on_progress(crowd, capsys):
    data, X = crowd
    shown = CrowdLayer(**TINY, progress=True).fit(data)
    assert "CrowdLayer" in capsys.readouterr().err
    silent = CrowdLayer(**TINY, progress=False).fit(data)
    assert capsys.readouterr().err == ""
    assert shown.validation_ == "crowd"
    np.testing.assert_array_equal(shown.predict_proba(X), silent.predict_proba(X))


def test_learners_default_to_auto_which_is_silent_when_stderr_is_not_a_terminal(crowd, capsys):
    data, _ = crowd
    assert TRAINING_PARAMS["progress"] == "auto"
    for make, _ in LEARNERS.values():
        assert make().get_params()["progress"] == "auto"
    capsys.readouterr()
    CrowdLayer(**TINY).fit(data)  # pytest captures stderr: not a terminal
    assert capsys.readouterr().err == ""


def test_auto_shows_the_bar_on_a_terminal(crowd, capsys, terminal):
    data, _ = crowd
    capsys.readouterr()
    CrowdLayer(**TINY).fit(data)
    assert "CrowdLayer" in capsys.readouterr().err


def test_false_on_a_learner_silences_the_aggregator_it_fits_even_on_a_terminal(
    crowd, capsys, terminal
):
    data, _ = crowd
    capsys.readouterr()
    TwoStage(DawidSkene(), progress=False, **TINY).fit(data)  # DawidSkene has "auto"
    assert capsys.readouterr().err == ""
    TwoStage(DawidSkene(progress=True), progress=False, **TINY).fit(data)
    assert "DawidSkene" in capsys.readouterr().err  # an explicit True is kept


def test_true_on_a_learner_shows_the_auto_aggregator_inside_it_off_a_terminal(crowd, capsys):
    data, _ = crowd
    capsys.readouterr()
    TwoStage(DawidSkene(), progress=True, **TINY).fit(data)
    err = capsys.readouterr().err
    assert "TwoStage" in err and "DawidSkene" in err


def test_a_bad_progress_value_is_refused_before_training(crowd):
    data, _ = crowd
    with pytest.raises(ValueError, match="progress must be True, False or 'auto'"):
        CrowdLayer(progress="yes", **TINY).fit(data)
    with pytest.raises(ValueError, match="progress"):
        DawidSkene(progress=1).fit(data)


@pytest.mark.parametrize("aggregator", [DawidSkene, GLAD, OneCoinDawidSkene, MACE, DSWC])
def test_aggregators_default_to_auto_and_give_the_same_results(aggregator, crowd, capsys):
    data, _ = crowd
    assert aggregator().get_params()["progress"] == "auto"
    capsys.readouterr()
    quiet = aggregator(progress=False).fit(data).predict_proba()
    assert capsys.readouterr().err == ""
    loud = aggregator(progress=True).fit(data).predict_proba()
    assert aggregator.__name__ in capsys.readouterr().err
    np.testing.assert_array_equal(quiet, loud)


# ---------------------------------------------------------------------- the policy


def test_check_progress_accepts_exactly_true_false_auto():
    assert check_progress(True) is True and check_progress(False) is False
    assert check_progress("auto") == "auto"
    assert check_progress(np.bool_(True)) is True
    for bad in (1, 0, None, "on", "AUTO", 2.0):
        with pytest.raises(ValueError):
            check_progress(bad)


def test_auto_follows_the_terminal_then_the_innermost_scope(capsys, monkeypatch):
    assert progress_enabled("auto") is False  # captured stderr
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress_enabled("auto") is True
    with progress_scope(False) as outer:
        assert outer is False and progress_enabled("auto") is False
        assert progress_enabled(True) is True  # explicit values win
        with progress_scope(True):
            assert progress_enabled("auto") is True
        assert progress_enabled("auto") is False
    assert progress_enabled("auto") is True


def test_set_progress_default_is_what_auto_means_until_reset(monkeypatch):
    monkeypatch.setattr(_progress, "stderr_is_terminal", lambda: True)
    try:
        set_progress_default(False)
        assert progress_enabled("auto") is False
    finally:
        set_progress_default(None)
    assert progress_enabled("auto") is True


def test_a_silent_bar_supports_the_calls_of_a_real_one(capsys):
    bar = progress_bar(range(3), progress=False, desc="x")
    assert list(bar) == [0, 1, 2]
    with progress_bar(total=5, progress=False) as counter:
        counter.update(2)
        counter.set_postfix(loss="1")
        counter.set_description("y")
    assert counter.n == 2
    assert capsys.readouterr().err == ""


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=4))
def test_nested_bars_do_not_stay_on_screen_and_the_nesting_unwinds(depth):
    """An outermost bar stays when done; bars opened inside others do not (leave=False),
    and after closing them all the next bar is outermost again."""
    _progress._open_bars = 0  # a bar of another test left to the garbage collector
    bars = []
    try:
        for level in range(depth):
            bars.append(progress_bar(total=1, progress=True, desc=f"level{level}"))
        assert [bar.leave for bar in bars] == [True] + [False] * (depth - 1)
    finally:
        for bar in reversed(bars):
            bar.close()
            bar.close()  # closing twice counts once
    assert _progress._open_bars == 0
    last = progress_bar(total=1, progress=True)
    assert last.leave is True
    last.close()


def test_format_postfix_keeps_numbers_short_and_drops_missing_values():
    values = {"loss": 0.123456789, "epoch": "2/5", "valid": float("nan"), "none": None, "n": 7}
    assert format_postfix(values) == {"loss": "0.1235", "epoch": "2/5", "n": "7"}


@pytest.mark.parametrize("shown", [True, False])
def test_a_latched_interrupt_stops_every_later_step_of_a_bar(shown, monkeypatch, capsys):
    """A KeyboardInterrupt dropped inside a finaliser still stops the loop: the CLI's
    handler sets a flag that the bars' iteration and update turn into one."""
    import signal

    monkeypatch.setattr(_progress, "_interrupted", 0)
    bar = progress_bar(range(10), progress=shown, desc="t")
    seen = []
    with pytest.raises(KeyboardInterrupt):
        for step in bar:
            seen.append(step)
            if step == 2:
                monkeypatch.setattr(_progress, "_interrupted", signal.SIGINT)
    assert seen == [0, 1, 2]
    other = progress_bar(total=5, progress=shown)
    with pytest.raises(KeyboardInterrupt):
        other.update()
    monkeypatch.setattr(_progress, "_interrupted", 0)
    other.update()
    bar.close()
    other.close()


def test_latch_interrupts_sets_the_flag_and_raises(monkeypatch):
    import signal

    monkeypatch.setattr(_progress, "_interrupted", 0)
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.getsignal(signum) for signum in signals}
    try:
        _progress.latch_interrupts()
        handler = signal.getsignal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt) as caught:
            handler(signal.SIGINT, None)
        assert not isinstance(caught.value, _progress.Terminated)
        assert _progress._interrupted == signal.SIGINT
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with pytest.raises(_progress.Terminated) as caught:
                signal.getsignal(signum)(signum, None)
            assert caught.value.signum == signum and _progress._interrupted == signum
            with pytest.raises(_progress.Terminated):  # it sticks, as Ctrl-C does
                _progress.check_interrupted()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        monkeypatch.setattr(_progress, "_interrupted", 0)


def test_a_bar_interrupted_while_it_draws_itself_stays_counted(monkeypatch, capsys):
    """Its half-drawn line is unfinished, so the CLI must start its error on a new line."""
    from tqdm.auto import tqdm

    monkeypatch.setattr(_progress, "_open_bars", 0)

    def broken_init(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tqdm, "__init__", broken_init)
    with pytest.raises(KeyboardInterrupt):
        progress_bar(range(3), progress=True)
    assert _progress.open_bars() == 1
    monkeypatch.undo()
    monkeypatch.setattr(_progress, "_open_bars", 0)
    bar = progress_bar(range(3), progress=True)
    assert _progress.open_bars() == 1
    bar.close()
    assert _progress.open_bars() == 0
