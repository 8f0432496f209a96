"""Whole-program migration of a TF 1 session script into an eager TF 2 program (TFC301).

``model`` reads the script into a program model (placeholders, forward statements, optimizers,
train ops, the session block and its ``run`` calls) or declines with the true cause;
``emit`` writes the eager program (TensorFlow's "model mapping" recipe). Pure libcst: nothing
here imports TensorFlow.
"""
