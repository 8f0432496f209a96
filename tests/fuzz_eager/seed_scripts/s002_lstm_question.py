"""Seed 002, the question: an LSTM (BasicLSTMCell, forget_bias=1.0) whose inputs are clipped with
tf.clip_by_value (not gradient clipping), trained with the accepted answer's clipped Adam; the question's
TF 0.x `rnn_cell`/`tf.split(0, n_steps, _X)` written as TF 1.15 spelled them (dynamic_rnn)."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(5)
n_steps, n_input, n_hidden, n_classes = 4, 3, 5, 2
learning_rate = 0.01
_X = tf.placeholder(tf.float32, [None, n_steps, n_input], name="x")
labels = tf.placeholder(tf.float32, [None, n_classes], name="labels")

with tf.variable_scope("RNN"):
    lstm_cell = tf.nn.rnn_cell.BasicLSTMCell(n_hidden, forget_bias=1.0)
    inputs = tf.clip_by_value(_X, -1, 1, name=None)
    outputs, state = tf.nn.dynamic_rnn(lstm_cell, inputs, dtype=tf.float32)
    w_out = tf.get_variable("w_out", [n_hidden, n_classes])
    b_out = tf.get_variable("b_out", [n_classes], initializer=tf.zeros_initializer())
    logits = tf.matmul(outputs[:, -1, :], w_out) + b_out
cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))

optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
gvs = optimizer.compute_gradients(cost)
capped_gvs = [(tf.clip_by_value(grad, -1., 1.), var) for grad, var in gvs]
train_op = optimizer.apply_gradients(capped_gvs)

rng = np.random.RandomState(5)
x_data = (rng.randn(16, n_steps, n_input) * 2.0).astype(np.float32)
y_data = np.eye(n_classes, dtype=np.float32)[(x_data[:, -1, 0] > 0).astype(np.int64)]
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        _, cost_value = sess.run([train_op, cost], feed_dict={_X: x_data, labels: y_data})
        print("step", step, "cost", repr(float(cost_value)))
