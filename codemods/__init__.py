"""libcst codemods and the ``tfclip-migrate`` command (never imports TensorFlow)."""
