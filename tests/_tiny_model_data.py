"""The data of the tiny dense + embedding model that the contrib-replacement tests
(test_create_train_op.py, test_optimize_loss.py) train against the TF 1.15 reference."""

import numpy as np

X = np.array([[1.0, 2.0, -1.0], [0.5, -1.5, 2.0], [2.0, 0.0, 1.0], [-1.0, 1.0, 0.5]], np.float32)
Y = np.array([[3.0, -2.0], [1.0, 4.0], [-3.0, 2.0], [2.0, 2.0]], np.float32)
W0 = np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]], np.float32)
E0 = np.arange(12, dtype=np.float32).reshape(6, 2) / 4.0
IDS_UNIQUE = np.array([0, 2, 4, 5], np.int32)
IDS_DUPLICATE = np.array([1, 1, 1, 3], np.int32)
