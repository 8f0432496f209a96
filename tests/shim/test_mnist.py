"""``tfclip_compat.mnist``: TF 1's MNIST tutorial loader (``tensorflow.examples.tutorials.mnist.
input_data``), which TF 2 does not ship, batch for batch against the TF 1.15 reference
(:mod:`reference.mnist_input_data`) on MNIST-format files made by the test."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from reference import mnist_input_data as ref
from tfclip_compat import mnist


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("mnist") / "MNIST_data")
    ref.write_fake_mnist(directory)
    return directory


def _batches(datasets, sizes):
    return [datasets.train.next_batch(n) for n in sizes] + [datasets.test.next_batch(15) for _ in range(4)]


def _reference(data_dir, graph_seed, **kwargs):
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.compat.v1.set_random_seed(graph_seed)
        return _batches(ref.read_data_sets(data_dir, **kwargs), [50, 700, 30, 64] * 3)


CASES = [
    (3, dict(one_hot=True)),  # the tutorials: the graph seed seeds NumPy
    (None, dict(seed=7)),
    (5, dict(seed=9, dtype=tf.uint8, reshape=False, validation_size=4000)),
    (0, dict(seed=0, validation_size=4990)),  # get_seed's (0, 0) case; epochs shorter than a batch
]


@pytest.mark.parametrize("graph_seed,kwargs", CASES)
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_same_batches_as_tf1(data_dir, graph_seed, kwargs, mode, capsys):
    expected = _reference(data_dir, graph_seed, **kwargs)
    printed_by_tf1 = capsys.readouterr().out
    if mode == "graph":
        with tf.Graph().as_default():
            if graph_seed is not None:
                tf.compat.v1.set_random_seed(graph_seed)
            got = _batches(mnist.read_data_sets(data_dir, **kwargs), [50, 700, 30, 64] * 3)
    else:
        tf.random.set_seed(graph_seed if graph_seed is not None else 1)
        if graph_seed is None:
            from tensorflow.python.eager import context

            context.set_global_seed(None)
        got = _batches(mnist.read_data_sets(data_dir, **kwargs), [50, 700, 30, 64] * 3)
    assert capsys.readouterr().out == printed_by_tf1  # the same "Extracting ..." lines
    assert len(got) == len(expected)
    for (gx, gy), (ex, ey) in zip(got, expected):
        assert gx.dtype == ex.dtype and gy.dtype == ey.dtype and gx.shape == ex.shape
        np.testing.assert_array_equal(gx, ex)
        np.testing.assert_array_equal(gy, ey)


def test_batches_follow_the_graph_seed(data_dir):
    """Different graph seeds shuffle differently (the comparison above is not vacuous)."""
    one = mnist.read_data_sets(data_dir, seed=1).train.next_batch(20)[1]
    two = mnist.read_data_sets(data_dir, seed=2).train.next_batch(20)[1]
    assert not np.array_equal(one, two)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_reading_the_seed_moves_no_later_random_op(data_dir, mode):
    """TF 1 read the graph seed without side effect; ``tf.compat.v1.get_seed`` on TF 2 would
    advance the op-seed counter and change the next unseeded random op."""
    def draw(load):
        if mode == "eager":
            tf.random.set_seed(11)
            if load:
                mnist.read_data_sets(data_dir)
            return tf.random.uniform([4]).numpy()
        with tf.Graph().as_default():
            tf.compat.v1.set_random_seed(11)
            if load:
                mnist.read_data_sets(data_dir)
            op = tf.random.uniform([4])
            with tf.compat.v1.Session() as sess:
                return sess.run(op)

    np.testing.assert_array_equal(draw(False), draw(True))


def test_downloads_missing_files_whole(data_dir, tmp_path, capsys):
    target = str(tmp_path / "fresh")
    url = "file://" + data_dir + "/"
    datasets = mnist.read_data_sets(target, source_url=url, validation_size=100)
    assert sorted(os.listdir(target)) == sorted(os.listdir(data_dir))
    assert "Successfully downloaded train-images-idx3-ubyte.gz" in capsys.readouterr().out
    assert datasets.train.num_examples == 5000 and datasets.validation.num_examples == 100


def test_a_failed_download_leaves_nothing_and_says_what_to_do(tmp_path):
    target = tmp_path / "empty"
    with pytest.raises(OSError, match="train-images-idx3-ubyte.gz.*by hand"):
        mnist.read_data_sets(str(target), source_url="file://" + str(tmp_path / "nowhere") + "/")
    assert os.listdir(target) == []


def test_rejects_files_that_are_not_mnist(tmp_path):
    ref.write_fake_mnist(str(tmp_path))
    os.replace(tmp_path / "train-labels-idx1-ubyte.gz", tmp_path / "train-images-idx3-ubyte.gz")
    with pytest.raises(ValueError, match="Invalid magic number 2049 in MNIST image file"):
        mnist.read_data_sets(str(tmp_path))
