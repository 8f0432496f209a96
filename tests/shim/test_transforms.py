"""Each gradient transform vs a numpy reference written from its paper's formula (eager, tf.function, graph)."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import tfclip_compat as tfc
from _tf_versions import KERAS_MAJOR

V1 = tf.compat.v1
RNG = np.random.RandomState(0)
SHAPES = [(3, 4), (4,), (2, 2, 3)]
BASE = [RNG.randn(*s).astype(np.float32) for s in SHAPES]
PARAMS = [RNG.randn(*s).astype(np.float32) for s in SHAPES]
# Global-norm multipliers per step: calm, then spikes, then calm again.
MULTS = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 25.0, 1.0, 1.2, 0.8, 40.0, 1.0, 1.1, 0.9]
NAMES = ["dense/kernel", "dense/bias", "conv/kernel"]


def _grad_seq(mults=MULTS):
    """Per step, a list of gradients: BASE scaled, with per-tensor variation so shapes matter."""
    seq = []
    for t, m in enumerate(mults):
        seq.append([(b * m * (1.0 + 0.1 * ((t + i) % 3))).astype(np.float32) for i, b in enumerate(BASE)])
    return seq


def _gnorm(grads):
    return float(np.sqrt(sum(float(np.sum(np.square(g.astype(np.float64)))) for g in grads)))


def run_transform(make, seq, mode):
    """Apply ``make()`` to each step's gradients in ``mode``; return [(grads, skip, stats)] as numpy."""
    results = []
    if mode == "graph":
        with tf.Graph().as_default():
            variables = [tf.Variable(p, name=n) for p, n in zip(PARAMS, NAMES)]
            phs = [V1.placeholder(tf.float32, s) for s in SHAPES]
            t = make()
            t.build(variables)
            r = t(list(zip(phs, variables)))
            skip = r.skip if r.skip is not None else tf.constant(False)
            fetch = ([g for g, _ in r.grads_and_vars], skip, r.stats)
            with V1.Session() as sess:
                sess.run(V1.global_variables_initializer())
                for grads in seq:
                    results.append(sess.run(fetch, dict(zip(phs, grads))))
        return results
    variables = [tf.Variable(p, name=n) for p, n in zip(PARAMS, NAMES)]
    t = make()

    def step(*grads):
        r = t(list(zip(grads, variables)))
        skip = r.skip if r.skip is not None else tf.constant(False)
        return [g for g, _ in r.grads_and_vars], skip, r.stats

    fn = tf.function(step) if mode == "function" else step
    for grads in seq:
        out, skip, stats = fn(*[tf.constant(g) for g in grads])
        results.append(([o.numpy() for o in out], bool(skip), {k: v.numpy() for k, v in stats.items()}))
    return results


MODES = ["eager", "function", "graph"]


def _assert_grads(got, want):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------- stateless
@pytest.mark.parametrize("mode", MODES)
def test_clip_by_norm_per_tensor(mode):
    """ClipByNorm clips each tensor to its own norm: g * c / max(||g||, c)."""
    seq = _grad_seq(MULTS[:3])
    for (got, _, stats), grads in zip(run_transform(lambda: tfc.ClipByNorm(1.5), seq, mode), seq):
        want = [g * 1.5 / max(np.linalg.norm(g), 1.5) for g in grads]
        _assert_grads(got, want)
        np.testing.assert_allclose(stats["global_norm"], _gnorm(grads), rtol=1e-5)
        np.testing.assert_allclose(stats["clipped_global_norm"], _gnorm(want), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_clip_by_value(mode):
    """ClipByValue(0.3) clips every element to [-0.3, 0.3]; explicit bounds too."""
    seq = _grad_seq(MULTS[:2])
    for (got, _, stats), grads in zip(run_transform(lambda: tfc.ClipByValue(0.3), seq, mode), seq):
        _assert_grads(got, [np.clip(g, -0.3, 0.3) for g in grads])
        assert stats["clipped"] == 1.0
    res = run_transform(lambda: tfc.ClipByValue(0.5, clip_value_min=-0.1), seq[:1], mode)
    _assert_grads(res[0][0], [np.clip(g, -0.1, 0.5) for g in seq[0]])


def _agc_reference(g, p, clipping, eps=1e-3):
    """Brock et al. 2021, eq. 3, unit-wise over all axes but the last (scalars/vectors: whole)."""

    def unitwise(x):
        if np.squeeze(x).ndim <= 1:
            return np.sqrt(np.sum(x**2))
        return np.sqrt(np.sum(x**2, axis=tuple(range(x.ndim - 1)), keepdims=True))

    max_norm = np.maximum(unitwise(p), eps) * clipping
    gn = unitwise(g)
    return np.where(gn > max_norm, g * (max_norm / np.maximum(gn, 1e-6)), g)


@pytest.mark.parametrize("mode", MODES)
def test_adaptive_grad_clip_unitwise(mode):
    """AGC clips each unit whose grad/param norm ratio exceeds lambda, others untouched."""
    seq = _grad_seq([0.05, 0.2, 0.3, 0.4, 10.0])
    res = run_transform(lambda: tfc.AdaptiveGradClip(clipping=0.3), seq, mode)
    partial = False
    for (got, _, _), grads in zip(res, seq):
        want = [_agc_reference(g, p, 0.3) for g, p in zip(grads, PARAMS)]
        _assert_grads(got, want)
        partial |= any(0 < np.mean(w != g) < 1 for w, g in zip(want, grads))
    assert partial, "some kernel must be clipped unit-wise, not as a whole"


# ---------------------------------------------------------------------------- AutoClip
def _autoclip_reference(norms, percentile, history_size):
    hist, scales, thresholds = [], [], []
    for n in norms:
        hist.append(n)
        hist = hist[-history_size:]
        thr = np.percentile(hist, percentile)
        thresholds.append(thr)
        scales.append(min(1.0, thr / n))
    return scales, thresholds


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("history_size", [100, 5])
def test_autoclip_percentile_of_history(mode, history_size):
    """AutoClip clips at np.percentile(history incl. current, p), history as a ring buffer."""
    seq = _grad_seq()
    norms = [_gnorm(g) for g in seq]
    scales, thresholds = _autoclip_reference(norms, 25.0, history_size)
    res = run_transform(lambda: tfc.AutoClip(percentile=25.0, history_size=history_size), seq, mode)
    for (got, _, stats), grads, s, thr in zip(res, seq, scales, thresholds):
        _assert_grads(got, [g * s for g in grads])
        np.testing.assert_allclose(stats["clip_threshold"], thr, rtol=1e-5)
    assert min(scales) < 0.1


# ---------------------------------------------------------------------------- ZClip
def _zclip_reference(norms, alpha=0.97, z_thresh=2.5, max_norm=None, eps=1e-6, warmup=25,
                     option="adaptive_scaling", factor=1.0, skip_update_on_spike=False):
    """ZClip (Kumar et al. 2025), z-score mode, written from the paper / authors' algorithm."""
    buf, init, mean, var, scales = [], False, None, None, []
    for g in norms:
        if not init:
            buf.append(g)
            if len(buf) >= warmup:
                mean = sum(buf) / len(buf)
                var = sum((x - mean) ** 2 for x in buf) / len(buf)
                init, buf = True, []
            eff = g if max_norm is None else min(g, max_norm)
            scales.append(eff / (g + 1e-6) if g > eff else 1.0)
            continue
        std = var**0.5
        z = (g - mean) / (std + eps)
        clip_val = None
        if z > z_thresh:
            if option == "adaptive_scaling":
                clip_val = (mean + z_thresh * std / (z / z_thresh)) * factor
            else:
                clip_val = mean
        eff = clip_val if clip_val is not None else g
        if max_norm is not None:
            eff = min(eff, max_norm)
        scales.append(eff / (g + 1e-6) if g > eff else 1.0)
        if clip_val is not None and skip_update_on_spike:
            continue
        x = clip_val if clip_val is not None else g
        mean = alpha * mean + (1 - alpha) * x
        var = alpha * var + (1 - alpha) * (x - mean) ** 2
    return scales


ZCLIP_CASES = {
    "adaptive": dict(alpha=0.9, warmup=4),
    "mean_maxnorm": dict(alpha=0.8, warmup=3, option="mean", max_norm=30.0),
    "skip_update": dict(alpha=0.9, warmup=4, skip_update_on_spike=True, factor=0.9),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(ZCLIP_CASES))
def test_zclip_matches_paper_algorithm(mode, case):
    """ZClip: warm-up mean/var, z-score spike test, reciprocal clipping, EMA with the clipped norm."""
    kw = ZCLIP_CASES[case]
    seq = _grad_seq()
    scales = _zclip_reference([_gnorm(g) for g in seq], **kw)

    def make():
        return tfc.ZClip(
            alpha=kw["alpha"], warmup_steps=kw["warmup"], max_norm=kw.get("max_norm"),
            clip_option=kw.get("option", "adaptive_scaling"), clip_factor=kw.get("factor", 1.0),
            skip_update_on_spike=kw.get("skip_update_on_spike", False),
        )

    for (got, _, _), grads, s in zip(run_transform(make, seq, mode), seq, scales):
        _assert_grads(got, [g * s for g in grads])
    assert min(scales) < 0.2


# ---------------------------------------------------------------------------- skipping
def _spike_reference(norms, k, window, min_history, max_consecutive=None):
    hist, skips, consecutive = collections.deque(maxlen=window), [], 0
    for n in norms:
        spike = len(hist) >= min_history and n > np.mean(hist) + k * np.std(hist)
        if max_consecutive is not None and consecutive >= max_consecutive:
            spike = False
        skips.append(bool(spike))
        consecutive = consecutive + 1 if spike else 0
        if not spike and np.isfinite(n):
            hist.append(n)
    return skips


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("max_consecutive", [None, 1])
def test_skip_on_spike_rolling_window(mode, max_consecutive):
    """SkipOnSpike skips when norm > mean + k*std of the last accepted norms; spikes not recorded."""
    mults = MULTS[:6] + [25.0, 30.0, 1.0, 1.1, 40.0, 1.0]
    seq = _grad_seq(mults)
    want = _spike_reference([_gnorm(g) for g in seq], 3.0, 4, 3, max_consecutive)
    res = run_transform(
        lambda: tfc.SkipOnSpike(std_factor=3.0, window=4, min_history=3,
                                max_consecutive_skips=max_consecutive), seq, mode)
    assert [bool(r[1]) for r in res] == want
    # Steps 6 and 7 are spikes; with max_consecutive_skips=1 the second one is accepted.
    assert want[6] and want[7] == (max_consecutive is None)
    for (got, _, _), grads in zip(res, seq):
        _assert_grads(got, grads)  # skipping never changes the gradients


@pytest.mark.parametrize("mode", MODES)
def test_skip_nonfinite(mode):
    """SkipNonFinite flags exactly the steps with inf/NaN gradients."""
    seq = _grad_seq(MULTS[:3])
    seq[1][2] = seq[1][2].copy()
    seq[1][2][0, 0, 0] = np.nan
    seq[2][0] = seq[2][0].copy()
    seq[2][0][1, 1] = np.inf
    res = run_transform(tfc.SkipNonFinite, seq, mode)
    assert [bool(r[1]) for r in res] == [False, True, True]


# ---------------------------------------------------------------------------- groups
@pytest.mark.parametrize("mode", MODES)
def test_per_group_thresholds_and_exclusions(mode):
    """PerGroup: each group clipped by its own global norm, excluded variables untouched."""
    seq = _grad_seq(MULTS[:3])

    def make():
        return tfc.PerGroup(
            [("bias", None), (["^conv/"], tfc.ClipByGlobalNorm(0.5, name="conv_clip"))],
            default=tfc.ClipByGlobalNorm(2.0, name="rest"),
        )

    for (got, _, stats), grads in zip(run_transform(make, seq, mode), seq):
        k, b, c = grads
        want = [k * min(1.0, 2.0 / _gnorm([k])), b, c * min(1.0, 0.5 / _gnorm([c]))]
        _assert_grads(got, want)
        np.testing.assert_allclose(stats["conv_clip/global_norm"], _gnorm([c]), rtol=1e-5)
        np.testing.assert_allclose(stats["global_norm"], _gnorm(grads), rtol=1e-5)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_select_include_exclude(mode):
    """Select applies the transform only to included, non-excluded variables."""
    seq = _grad_seq(MULTS[:2])
    res = run_transform(lambda: tfc.Select(tfc.ClipByValue(0.1), include="kernel", exclude="conv"), seq, mode)
    for (got, _, _), grads in zip(res, seq):
        _assert_grads(got, [np.clip(grads[0], -0.1, 0.1), grads[1], grads[2]])


def test_chain_composes_in_order_and_ors_skips():
    """Chain(value clip, global-norm clip, skip-on-non-finite): order matters, skip flags OR-ed."""
    seq = _grad_seq([3.0])
    res = run_transform(
        lambda: tfc.Chain(tfc.ClipByValue(0.5), tfc.ClipByGlobalNorm(1.0), tfc.SkipNonFinite()),
        seq, "eager")
    v = [np.clip(g, -0.5, 0.5) for g in seq[0]]
    _assert_grads(res[0][0], [g * min(1.0, 1.0 / _gnorm(v)) for g in v])
    assert res[0][1] is False


# ---------------------------------------------------------------------------- statistics
@pytest.mark.parametrize("mode", MODES)
def test_clip_statistics_values_and_counts(mode):
    """ClipStatistics reports pre/post norm, coefficient, flags, running counts, per-variable norms."""
    seq = _grad_seq(MULTS[:8])
    seq[3] = [np.full_like(g, np.nan) for g in seq[3]]

    def make():
        return tfc.ClipStatistics(
            tfc.Chain(tfc.SkipNonFinite(), tfc.ClipByGlobalNorm(3.0)), per_variable_norms=True)

    res = run_transform(make, seq, mode)
    clips = skips = 0
    for step, ((_, skip, stats), grads) in enumerate(zip(res, seq)):
        pre = _gnorm(grads)
        if np.isfinite(pre):
            np.testing.assert_allclose(stats["global_norm"], pre, rtol=1e-5)
            np.testing.assert_allclose(stats["clipped_global_norm"], min(pre, 3.0), rtol=1e-5)
            np.testing.assert_allclose(stats["clip_coefficient"], min(1.0, 3.0 / pre), rtol=1e-5)
            np.testing.assert_allclose(stats["norm/dense/bias"], np.linalg.norm(grads[1]), rtol=1e-5)
        clips += pre > 3.0 * (1 + 1e-6)
        skips += not np.isfinite(pre)
        assert stats["clipped"] == float(pre > 3.0 * (1 + 1e-6))
        assert stats["skipped"] == float(not np.isfinite(pre)) == float(skip)
        assert (stats["steps"], stats["clip_count"], stats["skip_count"]) == (step + 1, clips, skips)
    assert clips >= 2 and skips == 1


def test_bad_arguments_name_the_argument():
    """Bad constructor arguments fail with a message naming the argument."""
    cases = [
        (lambda: tfc.AutoClip(percentile=120), "percentile"),
        (lambda: tfc.AutoClip(history_size=0), "history_size"),
        (lambda: tfc.ZClip(alpha=1.0), "alpha"),
        (lambda: tfc.ZClip(clip_option="median"), "clip_option"),
        (lambda: tfc.SkipOnSpike(window=3, min_history=5), "min_history"),
        (lambda: tfc.AdaptiveGradClip(clipping=-1), "clipping"),
        (lambda: tfc.ClipByValue(-1.0), "clip_value_max"),
        (lambda: tfc.ClipByNorm(0.0), "max_norm"),
        (lambda: tfc.PerGroup([("(", None)]), "groups\\[0\\] patterns"),
        (lambda: tfc.PerGroup([("a", "clip")]), "groups\\[0\\] transform"),
        (lambda: tfc.ClipStatistics(object()), "transform"),
    ]
    for make, words in cases:
        with pytest.raises((TypeError, ValueError), match=words):
            make()


# ---------------------------------------------------------------------------- example
def test_clip_stats_example_writes_event_files(tmp_path):
    """examples/clip_stats_tensorboard.py writes the clip statistics as scalars to event files."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(
        [sys.executable, str(root / "examples" / "clip_stats_tensorboard.py"), "--logdir", str(tmp_path),
         "--steps", "12"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    tags = collections.defaultdict(dict)
    for mode in ("eager", "graph"):
        files = sorted((tmp_path / mode).glob("events.out.tfevents.*"))
        assert files, f"no event file for {mode}"
        for f in files:
            for event in V1.train.summary_iterator(str(f)):
                for value in event.summary.value:
                    number = (value.simple_value if value.HasField("simple_value")
                              else float(tf.make_ndarray(value.tensor)))
                    tags[mode].setdefault(value.tag.split("/", 1)[-1], []).append((event.step, number))
    for mode in ("eager", "graph"):
        for key in ("global_norm", "clipped_global_norm", "clip_coefficient", "clip_count",
                    "skip_count", "skipped", "clipped"):
            assert key in tags[mode], (mode, key, sorted(tags[mode]))
        counts = [v for _, v in sorted(tags[mode]["skip_count"])]
        assert counts[-1] >= 1, "the example injects a spike that is skipped"
        coefs = [v for _, v in tags[mode]["clip_coefficient"]]
        assert min(coefs) < 1.0


# ---------------------------------------------------------------------------- skipped steps
def _skip_chain():
    spike = tfc.SkipOnSpike(std_factor=3.0, window=8, min_history=3)
    auto = tfc.AutoClip(percentile=50.0, history_size=8)
    zclip = tfc.ZClip(alpha=0.9, warmup_steps=2)
    return spike, auto, zclip, tfc.Chain(tfc.SkipNonFinite(), spike, auto, zclip)


def _transform_state(spike, auto, zclip, read):
    return {
        "spike_count": read(spike.history.count),
        "spike_window": read(spike.history.values),
        "auto_count": read(auto.history.count),
        "zclip_mean": read(zclip.mean),
    }


@pytest.mark.parametrize("use_function", [False, True])
def test_skipped_step_keras_leaves_state_as_specified(use_function):
    """Keras Adam: a spike / NaN step leaves weights, slots, iterations and the spike window alone;
    AutoClip and ZClip record the (finite) spike norm, as their methods specify; NaN is not recorded."""
    w = tf.Variable(np.ones((3, 4), np.float32))
    spike, auto, zclip, chain = _skip_chain()
    opt = tfc.wrap_optimizer(tf.keras.optimizers.Adam(0.1), chain)
    opt.build([w])
    apply = tf.function(lambda g: opt.apply_gradients([(g, w)])) if use_function else (
        lambda g: opt.apply_gradients([(g, w)]))
    base = BASE[0]
    for m in (1.0, 1.1, 0.9, 1.0):
        apply(tf.constant(base * m))

    def snapshot():
        return [w.numpy()] + [v.numpy() for v in opt.optimizer.variables], _transform_state(
            spike, auto, zclip, lambda v: v.numpy())

    for bad, records in ((base * 50.0, True), (base * np.nan, False)):
        (opt_before, tr_before) = snapshot()
        apply(tf.constant(bad))
        (opt_after, tr_after) = snapshot()
        for a, b in zip(opt_before, opt_after):
            np.testing.assert_array_equal(a, b)  # weights, slots, iterations untouched
        assert tr_after["spike_count"] == tr_before["spike_count"]
        np.testing.assert_array_equal(tr_after["spike_window"], tr_before["spike_window"])
        assert tr_after["auto_count"] == tr_before["auto_count"] + int(records)
        assert (tr_after["zclip_mean"] != tr_before["zclip_mean"]) == records
    apply(tf.constant(base))
    assert int(opt.iterations.numpy()) == 5


def test_skipped_step_graph_v1_leaves_state_as_specified():
    """v1 Adam in graph mode: a skipped spike leaves variables, slots, beta powers, global_step."""
    with tf.Graph().as_default():
        g_ph = V1.placeholder(tf.float32, SHAPES[0])
        w = tf.Variable(np.ones(SHAPES[0], np.float32))
        spike, auto, zclip, chain = _skip_chain()
        opt = tfc.wrap_optimizer(V1.train.AdamOptimizer(0.1), chain)
        gs = V1.train.get_or_create_global_step()
        train = opt.apply_gradients([(g_ph, w)], global_step=gs)
        tracked = [w, gs] + opt.optimizer.variables()  # slots and beta powers
        state = _transform_state(spike, auto, zclip, lambda v: v)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for m in (1.0, 1.1, 0.9, 1.0):
                sess.run(train, {g_ph: BASE[0] * m})
            before, tr_before = sess.run([tracked, state])
            sess.run(train, {g_ph: BASE[0] * 50.0})
            after, tr_after = sess.run([tracked, state])
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert after[1] == 4
    assert tr_after["spike_count"] == tr_before["spike_count"]
    assert tr_after["auto_count"] == tr_before["auto_count"] + 1


@pytest.mark.skipif(KERAS_MAJOR < 3, reason="Keras 2 variables have no .path (a Keras 3 attribute) to group by")
def test_per_group_matches_keras_variable_paths():
    """Keras 3 variables are matched on their path ("dense_a/kernel"): one layer clipped, one excluded."""
    model = tf.keras.Sequential([
        tf.keras.Input((3,)),
        tf.keras.layers.Dense(4, name="dense_a"),
        tf.keras.layers.Dense(1, name="dense_b"),
    ])
    transform = tfc.PerGroup([("^dense_b/", None)], default=tfc.ClipByValue(1e-3))
    opt = tfc.wrap_optimizer(tf.keras.optimizers.SGD(1.0), transform)
    before = [v.numpy() for v in model.trainable_variables]
    grads = [tf.ones_like(v) for v in model.trainable_variables]
    opt.apply_gradients(zip(grads, model.trainable_variables))
    for v, b in zip(model.trainable_variables, before):
        step = 1.0 if v.path.startswith("dense_b/") else 1e-3
        np.testing.assert_allclose(b - v.numpy(), step, rtol=0, atol=1e-6)


def test_clip_statistics_counts_policy_skips_when_asked():
    """count_nonfinite_as_skipped=True counts the wrapper's nonfinite='skip' steps in skip_count."""
    w = tf.Variable([1.0, 2.0])
    stats = tfc.ClipStatistics(tfc.ClipByGlobalNorm(1.0), count_nonfinite_as_skipped=True)
    opt = tfc.wrap_optimizer(tf.keras.optimizers.SGD(0.1), stats, nonfinite="skip")
    for g in ([1.0, 1.0], [np.nan, 1.0], [0.1, 0.1]):
        opt.apply_gradients([(tf.constant(g), w)])
    result = {k: float(v) for k, v in stats.result().items()}
    assert (result["steps"], result["skip_count"], result["clip_count"]) == (3, 1, 1)
    assert int(opt.iterations.numpy()) == 2
