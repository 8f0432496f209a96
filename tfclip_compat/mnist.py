"""TF 1's MNIST tutorial loader, which TF 2 does not ship: the same batches, on TF 2.

``from tensorflow.examples.tutorials.mnist import input_data`` stopped working with TF 2 (the
module, and ``tf.contrib.learn`` behind it, are gone). This module is a drop-in::

    from tfclip_compat import mnist as input_data

    mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
    batch_xs, batch_ys = mnist.train.next_batch(100)

It keeps TF 1.15's behaviour (``tensorflow/contrib/learn/python/learn/datasets/mnist.py``, which
``input_data`` re-exported), so a migrated script trains on the very same batches:

* the same four files (``train-images-idx3-ubyte.gz``...) in ``train_dir``, downloaded from the
  same mirror when missing (to a temporary file first, so an interrupted download leaves nothing
  half-written), the same ``Extracting ...`` / ``Successfully downloaded ...`` lines;
* the first ``validation_size`` training images as the validation set, images scaled to
  ``[0, 1]`` float32 (or left ``uint8``), flattened to 784 unless ``reshape=False``, labels
  one-hot as float64 (TF 1's ``dense_to_one_hot``);
* ``DataSet.__init__`` seeds NumPy's global generator as TF 1 did: with ``seed``, else the
  graph-level seed (``tf.compat.v1.set_random_seed``, eager or not), else from the OS; each
  ``next_batch`` shuffles with ``numpy.random.shuffle`` at the same points (the first call, and
  every epoch boundary, where a batch is the rest of the epoch plus the start of the next).

Reading the seed has no side effect here (TF 1 read it without one; ``tf.compat.v1.get_seed``
on TF 2 advances the graph's or the eager context's op-seed counter, which would move the seeds
of the program's later random ops).
"""

from __future__ import annotations

import collections
import gzip
import os
import shutil
import tempfile
import urllib.request
from typing import Any, Optional, Tuple

import numpy

from tfclip_compat._tf import tf

__all__ = [
    "DEFAULT_SOURCE_URL",
    "DataSet",
    "Datasets",
    "dense_to_one_hot",
    "extract_images",
    "extract_labels",
    "load_mnist",
    "maybe_download",
    "read_data_sets",
]

# CVDF mirror of http://yann.lecun.com/exdb/mnist/ (TF 1.15's default)
DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])

_MAXINT32 = 2**31 - 1
_DEFAULT_GRAPH_SEED = 87654321  # TF 1's random_seed.DEFAULT_GRAPH_SEED


def _global_seed() -> Optional[int]:
    """The graph-level seed ``tf.compat.v1.set_random_seed`` set (eager: the context's)."""
    if tf.executing_eagerly():
        from tensorflow.python.eager import context

        return context.global_seed()
    return tf.compat.v1.get_default_graph().seed


def _numpy_seed(seed: Optional[int]) -> Optional[int]:
    """What TF 1's ``DataSet`` passed to ``numpy.random.seed``: ``seed1 if seed is None else
    seed2`` of ``random_seed.get_seed(seed)``, without its side effect."""
    global_seed = _global_seed()
    if seed is None:
        return None if global_seed is None else global_seed % _MAXINT32
    if global_seed is not None and global_seed % _MAXINT32 == 0 and seed % _MAXINT32 == 0:
        return _MAXINT32  # get_seed maps (0, 0) to (0, MAXINT32)
    return seed % _MAXINT32


def _read32(bytestream: Any) -> int:
    dt = numpy.dtype(numpy.uint32).newbyteorder(">")
    return int(numpy.frombuffer(bytestream.read(4), dtype=dt)[0])


def extract_images(f: Any) -> numpy.ndarray:
    """The images of an IDX file object, as a 4-D uint8 array ``[index, y, x, depth]``."""
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as bytestream:
        magic = _read32(bytestream)
        if magic != 2051:
            raise ValueError("Invalid magic number %d in MNIST image file: %s" % (magic, f.name))
        num_images = _read32(bytestream)
        rows = _read32(bytestream)
        cols = _read32(bytestream)
        buf = bytestream.read(rows * cols * num_images)
        data = numpy.frombuffer(buf, dtype=numpy.uint8)
        return data.reshape(num_images, rows, cols, 1)


def dense_to_one_hot(labels_dense: numpy.ndarray, num_classes: int) -> numpy.ndarray:
    """Class labels to one-hot rows (float64, as in TF 1)."""
    num_labels = labels_dense.shape[0]
    index_offset = numpy.arange(num_labels) * num_classes
    labels_one_hot = numpy.zeros((num_labels, num_classes))
    labels_one_hot.flat[index_offset + labels_dense.ravel()] = 1
    return labels_one_hot


def extract_labels(f: Any, one_hot: bool = False, num_classes: int = 10) -> numpy.ndarray:
    """The labels of an IDX file object: uint8 ``[index]``, or one-hot rows."""
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as bytestream:
        magic = _read32(bytestream)
        if magic != 2049:
            raise ValueError("Invalid magic number %d in MNIST label file: %s" % (magic, f.name))
        num_items = _read32(bytestream)
        buf = bytestream.read(num_items)
        labels = numpy.frombuffer(buf, dtype=numpy.uint8)
        if one_hot:
            return dense_to_one_hot(labels, num_classes)
        return labels


class DataSet(object):
    """TF 1.15's ``DataSet``: images and labels, and ``next_batch`` over shuffled epochs."""

    def __init__(self, images: Any, labels: Any, fake_data: bool = False, one_hot: bool = False,
                 dtype: Any = None, reshape: bool = True, seed: Optional[int] = None) -> None:
        numpy.random.seed(_numpy_seed(seed))
        dtype = tf.as_dtype(tf.float32 if dtype is None else dtype).base_dtype
        if dtype not in (tf.uint8, tf.float32):
            raise TypeError("Invalid image dtype %r, expected uint8 or float32" % dtype)
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            if images.shape[0] != labels.shape[0]:
                raise ValueError("images.shape: %s labels.shape: %s" % (images.shape, labels.shape))
            self._num_examples = images.shape[0]
            # [num examples, rows, columns, depth] -> [num examples, rows*columns] (depth 1)
            if reshape:
                if images.shape[3] != 1:
                    raise ValueError("reshape=True needs images of depth 1, got shape %s" % (images.shape,))
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == tf.float32:
                images = images.astype(numpy.float32)
                images = numpy.multiply(images, 1.0 / 255.0)
        self._images = images
        self._labels = labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self) -> Any:
        return self._images

    @property
    def labels(self) -> Any:
        return self._labels

    @property
    def num_examples(self) -> int:
        return self._num_examples

    @property
    def epochs_completed(self) -> int:
        return self._epochs_completed

    def next_batch(self, batch_size: int, fake_data: bool = False, shuffle: bool = True) -> Tuple[Any, Any]:
        """The next ``batch_size`` examples (TF 1's order, shuffles and epoch wrap-around)."""
        if fake_data:
            fake_image = [1] * 784
            fake_label = [1] + [0] * 9 if self.one_hot else 0
            return [fake_image for _ in range(batch_size)], [fake_label for _ in range(batch_size)]
        start = self._index_in_epoch
        # shuffle for the first epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            perm0 = numpy.arange(self._num_examples)
            numpy.random.shuffle(perm0)
            self._images = self.images[perm0]
            self._labels = self.labels[perm0]
        if start + batch_size > self._num_examples:
            # the epoch is finished: the rest of it, then the start of the next
            self._epochs_completed += 1
            rest_num_examples = self._num_examples - start
            images_rest_part = self._images[start:self._num_examples]
            labels_rest_part = self._labels[start:self._num_examples]
            if shuffle:
                perm = numpy.arange(self._num_examples)
                numpy.random.shuffle(perm)
                self._images = self.images[perm]
                self._labels = self.labels[perm]
            start = 0
            self._index_in_epoch = batch_size - rest_num_examples
            end = self._index_in_epoch
            images_new_part = self._images[start:end]
            labels_new_part = self._labels[start:end]
            return (numpy.concatenate((images_rest_part, images_new_part), axis=0),
                    numpy.concatenate((labels_rest_part, labels_new_part), axis=0))
        self._index_in_epoch += batch_size
        end = self._index_in_epoch
        return self._images[start:end], self._labels[start:end]


def maybe_download(filename: str, work_directory: str, source_url: str) -> str:
    """``work_directory/filename``, downloaded from ``source_url`` first when it is missing. The
    download goes to a temporary file in ``work_directory``, moved in place when complete."""
    os.makedirs(work_directory, exist_ok=True)
    filepath = os.path.join(work_directory, filename)
    if not os.path.exists(filepath):
        handle, temp_path = tempfile.mkstemp(prefix=filename + ".", suffix=".part", dir=work_directory)
        try:
            with os.fdopen(handle, "wb") as out, urllib.request.urlopen(source_url) as response:  # noqa: S310
                shutil.copyfileobj(response, out)
            os.replace(temp_path, filepath)
        except BaseException as exc:
            if os.path.exists(temp_path):
                os.unlink(temp_path)
            if isinstance(exc, OSError):
                raise OSError(f"cannot download {source_url} to {filepath}: {exc}; put the MNIST file "
                              f"there by hand, or pass source_url= a reachable mirror") from exc
            raise
        print("Successfully downloaded", filename, os.path.getsize(filepath), "bytes.")
    return filepath


def read_data_sets(train_dir: str, fake_data: bool = False, one_hot: bool = False, dtype: Any = None,
                   reshape: bool = True, validation_size: int = 5000, seed: Optional[int] = None,
                   source_url: str = DEFAULT_SOURCE_URL) -> Datasets:
    """TF 1.15's ``input_data.read_data_sets``: ``Datasets(train, validation, test)``."""
    if fake_data:
        def fake() -> DataSet:
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)

        return Datasets(train=fake(), validation=fake(), test=fake())
    if not source_url:
        source_url = DEFAULT_SOURCE_URL

    def load(filename: str, extract: Any, **kwargs: Any) -> numpy.ndarray:
        local_file = maybe_download(filename, train_dir, source_url + filename)
        with open(local_file, "rb") as f:
            return extract(f, **kwargs)

    train_images = load("train-images-idx3-ubyte.gz", extract_images)
    train_labels = load("train-labels-idx1-ubyte.gz", extract_labels, one_hot=one_hot)
    test_images = load("t10k-images-idx3-ubyte.gz", extract_images)
    test_labels = load("t10k-labels-idx1-ubyte.gz", extract_labels, one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError("Validation size should be between 0 and {}. Received: {}."
                         .format(len(train_images), validation_size))
    validation_images = train_images[:validation_size]
    validation_labels = train_labels[:validation_size]
    train_images = train_images[validation_size:]
    train_labels = train_labels[validation_size:]
    options = dict(dtype=dtype, reshape=reshape, seed=seed)
    return Datasets(train=DataSet(train_images, train_labels, **options),
                    validation=DataSet(validation_images, validation_labels, **options),
                    test=DataSet(test_images, test_labels, **options))


def load_mnist(train_dir: str = "MNIST-data") -> Datasets:
    return read_data_sets(train_dir)
