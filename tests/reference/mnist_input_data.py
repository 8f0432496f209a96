"""Reference: TF 1.15's ``tensorflow.examples.tutorials.mnist.input_data`` (tests only).

Rewritten from the TF 1.15 source semantics of ``input_data.py``, which re-exported
``tensorflow/contrib/learn/python/learn/datasets/mnist.py`` (and ``base.py``'s
``maybe_download``/``Datasets``), independent of ``tfclip_compat``. TF 1.15's ``DataSet``
seeded NumPy's global generator with ``seed1 if seed is None else seed2`` of
``random_seed.get_seed(seed)``; TF 1.15's ``get_seed`` read the graph seed and, for a missing
op seed, ``graph._last_id`` (no counter to advance, unlike TF 2's): rebuilt here from the graph,
as the "before" programs run in graph mode. Only files already on disk are read (the tests make
them); a missing file is an error, not a download.
"""

import collections
import gzip
import os
import tempfile

import numpy
import tensorflow as tf

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _get_seed(op_seed):
    graph = tf.compat.v1.get_default_graph()
    if graph.seed is not None:
        if op_seed is None:
            # TF 1.15 took graph._last_id (gone from TF 2's Graph); DataSet then uses seed1 only
            op_seed = 1
        seeds = graph.seed % (2**31 - 1), op_seed % (2**31 - 1)
    elif op_seed is not None:
        seeds = 87654321, op_seed % (2**31 - 1)
    else:
        seeds = None, None
    return (0, 2**31 - 1) if seeds == (0, 0) else seeds


def _read32(stream):
    return numpy.frombuffer(stream.read(4), dtype=numpy.dtype(numpy.uint32).newbyteorder(">"))[0]


def extract_images(f):
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as stream:
        if _read32(stream) != 2051:
            raise ValueError("bad image magic")
        n, rows, cols = _read32(stream), _read32(stream), _read32(stream)
        return numpy.frombuffer(stream.read(rows * cols * n), dtype=numpy.uint8).reshape(n, rows, cols, 1)


def dense_to_one_hot(labels_dense, num_classes):
    out = numpy.zeros((labels_dense.shape[0], num_classes))
    out.flat[numpy.arange(labels_dense.shape[0]) * num_classes + labels_dense.ravel()] = 1
    return out


def extract_labels(f, one_hot=False, num_classes=10):
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as stream:
        if _read32(stream) != 2049:
            raise ValueError("bad label magic")
        labels = numpy.frombuffer(stream.read(_read32(stream)), dtype=numpy.uint8)
        return dense_to_one_hot(labels, num_classes) if one_hot else labels


class DataSet(object):
    def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=tf.float32, reshape=True, seed=None):
        seed1, seed2 = _get_seed(seed)
        numpy.random.seed(seed1 if seed is None else seed2)
        dtype = tf.as_dtype(dtype).base_dtype
        assert dtype in (tf.uint8, tf.float32)
        assert not fake_data
        assert images.shape[0] == labels.shape[0]
        self._num_examples = images.shape[0]
        if reshape:
            images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
        if dtype == tf.float32:
            images = numpy.multiply(images.astype(numpy.float32), 1.0 / 255.0)
        self._images, self._labels = images, labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            perm0 = numpy.arange(self._num_examples)
            numpy.random.shuffle(perm0)
            self._images, self._labels = self.images[perm0], self.labels[perm0]
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            return self._images[start:self._index_in_epoch], self._labels[start:self._index_in_epoch]
        self._epochs_completed += 1
        rest = self._num_examples - start
        images_rest, labels_rest = self._images[start:], self._labels[start:]
        if shuffle:
            perm = numpy.arange(self._num_examples)
            numpy.random.shuffle(perm)
            self._images, self._labels = self.images[perm], self.labels[perm]
        self._index_in_epoch = batch_size - rest
        end = self._index_in_epoch
        return (numpy.concatenate((images_rest, self._images[:end]), axis=0),
                numpy.concatenate((labels_rest, self._labels[:end]), axis=0))


def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=tf.float32, reshape=True,
                   validation_size=5000, seed=None, source_url=None):
    assert not fake_data

    def load(name, extract, **kw):
        with open(os.path.join(train_dir, name), "rb") as f:
            return extract(f, **kw)

    train_images = load("train-images-idx3-ubyte.gz", extract_images)
    train_labels = load("train-labels-idx1-ubyte.gz", extract_labels, one_hot=one_hot)
    test_images = load("t10k-images-idx3-ubyte.gz", extract_images)
    test_labels = load("t10k-labels-idx1-ubyte.gz", extract_labels, one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError("Validation size should be between 0 and {}. Received: {}.".format(
            len(train_images), validation_size))
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    return Datasets(
        train=DataSet(train_images[validation_size:], train_labels[validation_size:], **options),
        validation=DataSet(train_images[:validation_size], train_labels[:validation_size], **options),
        test=DataSet(test_images, test_labels, **options))


def write_fake_mnist(directory, train=5100, test=40, seed=0):
    """Tiny MNIST-format files (IDX, gzip) in ``directory``: ``train`` + ``test`` 28x28 images
    with labels 0-9, drawn from ``numpy.random.RandomState(seed)`` (what the tests and the eager
    fuzzer read in place of the real data set)."""
    rng = numpy.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        labels = rng.randint(0, 10, size=n).astype(numpy.uint8)
        # mostly-dark images with a label-dependent bright square: learnable, and small gzipped
        images = numpy.zeros((n, 28, 28), numpy.uint8)
        for i, label in enumerate(labels):
            r, c = 2 + 2 * int(label), 4 + rng.randint(0, 12)
            images[i, r:r + 6, c:c + 6] = rng.randint(128, 256, size=(6, 6))
        header = numpy.array([2051, n, 28, 28], dtype=">u4").tobytes()
        with gzip.open(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(header + images.tobytes())
        with gzip.open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(numpy.array([2049, n], dtype=">u4").tobytes() + labels.tobytes())


def fake_mnist_workdir(prefix):
    """A fresh temporary directory holding ``MNIST_data/`` (``write_fake_mnist``): where the
    harness workers run scripts that read ``read_data_sets("MNIST_data/")``. The caller removes it."""
    work = tempfile.mkdtemp(prefix=prefix)
    write_fake_mnist(os.path.join(work, "MNIST_data"))
    return work
