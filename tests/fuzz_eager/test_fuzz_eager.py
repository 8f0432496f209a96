"""The eager-migration fuzzer on its CI seed: generated session scripts inside and just outside the
convertible class go through TFC301 and the harness; no rewrite may change what a script trains."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.fuzz_eager import runner
from tests.fuzz_eager.generator import OUTSIDE, OUTSIDE_CHAINS, OUTSIDE_STATE, Program, generate, program

CI_SEED, CI_PROGRAMS = 0, 40
HAND = Path(__file__).parent / "hand"


@pytest.fixture(scope="module")
def ci_report():
    """Seed 0, programs 0..CI_PROGRAMS-1, checked once for the module."""
    return runner.run(CI_SEED, range(CI_PROGRAMS))


def test_generate_is_reproducible_and_varied():
    """generate(seed, index) gives the same source every time, different sources across indices, and the
    grammar reaches every outside construct and the main inside productions within 200 programs."""
    assert generate(3, 7) == generate(3, 7)
    programs = [program(0, i) for i in range(200)]
    assert len({p.source for p in programs}) == 200
    tags = Counter(t for p in programs for t in p.tags)
    for construct in OUTSIDE + OUTSIDE_CHAINS:
        assert tags[f"outside:{construct}"] > 0, construct
    for tag in ("kind:gan", "kind:plain", "heads:two", "fetch:dict", "fetch:loss_op", "fetch:separate", "fetch:separate_after", "plain_fed_learning_rate",
                "plain_float64_feed", "batch_norm", "dropout:tf_layers", "dropout:nn_keep_prob", "inputs:embedding",
                "encoder:BasicLSTMCell", "encoder:GRUCell", "lr:exponential_decay", "site:minimize",
                "site:clip_by_value", "site:clip_by_norm", "site:zip_global_norm", "site:tf_gradients",
                "block:get_variable", "block:tf_variable", "block:keras_dense", "model:class", "model:helper",
                "eval:tensor_eval", "session:explicit_close", "training:placeholder_with_default", "reset:tf",
                "reset:ops", "inputs:image", "dropout:nn_unseeded", "tf_variable:unnamed",
                "run:training_only", "shared_weight:three_uses", "loss:log_epsilon", "run:two_in_one_expression",
                "helper:printing", "init:twice_before_training"):
        assert tags[tag] > 0, tag
    assert sum(p.inside for p in programs) > 95  # (101 on seed 0 since round 14's outside constructs; 114 in round 12)
    # round 12's constructs come from one draw in the classifier's session block: 600 programs
    state = Counter(program(0, i).outside for i in range(600))
    for construct in OUTSIDE_STATE:
        assert state[construct] > 0, construct


def test_the_round_14_forms_are_generated():
    """Each RNN form, cell spelling, checkpoint form and construct just outside the class (round
    14's own stream) occurs within 3,000 programs of seed 0."""
    from tests.fuzz_eager.generator import OUTSIDE_RNN, OUTSIDE_SAVER, RNN_FORMS, RNN_SPELLINGS

    programs = [program(0, i) for i in range(3000)]
    tags = Counter(t for p in programs for t in p.tags)
    for form in RNN_FORMS[1:]:
        assert tags[f"rnn:{form}"] > 0, form
    for spelling in RNN_SPELLINGS:
        assert tags[f"rnn_spelling:{spelling}"] > 0, spelling
    assert tags["rnn_cell:LSTMCell"] > 0 and tags["rnn:sequence_length"] > 0
    assert tags["saver:save"] > 0 and tags["saver:after_loop"] > 0
    for construct in OUTSIDE_RNN + OUTSIDE_SAVER:
        assert tags[f"outside:{construct}"] > 0, construct
    aliased = [p for p in programs if "from tensorflow.contrib import rnn" in p.source]
    assert aliased and all("rnn_spelling:rnn" in p.tags or p.outside == "rnn_alias_as_value" for p in aliased)


def test_no_tfc301_rewrite_changes_training(ci_report):
    """On the CI seed: every script runs as TF 1 code, every outside script is left byte-identical, and
    every script TFC301 rewrites trains the same, bit for bit (losses at every step, every variable)."""
    summary = ci_report["summary"]
    print(runner.format_summary(ci_report))
    assert not summary["failures"], "\n".join(summary["failures"])
    assert summary["programs"] == CI_PROGRAMS and summary["outside"] > 0


def test_the_ci_seed_exercises_tfc301(ci_report):
    """The CI seed is not all declines: TFC301 rewrites some of its scripts (else the safety check above
    would pass on a rule that declines everything)."""
    from codemods.engine.registry import rules_by_code

    if "TFC301" not in rules_by_code():
        pytest.xfail("TFC301 is not a registered rule on this branch (it is built on wip/eager)")
    assert ci_report["summary"]["applied"] >= 3, runner.format_summary(ci_report)


def test_runner_verdicts_on_hand_conversions(monkeypatch):
    """check() gives applied-equal for a correct conversion, applied-different for a wrong one and
    applied-outside for a rewritten outside program (TFC301 replaced by a lookup of hand conversions)."""
    before = (HAND / "dense_dropout_clip_value.before.py").read_text()
    outputs = {}

    class Result:
        def __init__(self, code, changed=True):
            self.code, self.changed, self.diagnostics = code, changed, []

    monkeypatch.setattr(runner, "migrate", lambda source: Result(outputs.get(source, source), source in outputs))
    with runner.Harness() as harness:
        outputs[before] = (HAND / "dense_dropout_clip_value.after.py").read_text()
        assert runner.check(Program(0, 0, before, True), harness)["verdict"] == "applied-equal"
        outputs[before] = (HAND / "dense_dropout_clip_value.no_clip.wrong.py").read_text()
        assert runner.check(Program(0, 0, before, True), harness)["verdict"] == "applied-different"
        assert runner.check(Program(0, 0, before, False, "tensor_by_name"), harness)["verdict"] == "applied-outside"
        del outputs[before]
        res = runner.check(Program(0, 0, before, True), harness)
        assert res["verdict"] == "declined" and res["reason"] == "no TFC301 diagnostic"


def test_notebooks_train_the_same():
    """The first 16 programs of the CI seed cut into notebook cells (``--notebook``): every rewrite
    trains the same, bit for bit, and some are rewritten (the cut is no excuse to decline them)."""
    report = runner.run(CI_SEED, range(16), notebook=True)
    summary = report["summary"]
    print(runner.format_summary(report))
    assert not summary["failures"], "\n".join(summary["failures"])
    assert summary["applied"] >= 5 and summary["applied"] == summary["bitwise"], runner.format_summary(report)
