"""The executed proofs of the codemods run TensorFlow: set it up as the shim's tests do (one
process may collect both folders, and the logical devices can be set only before the runtime
starts)."""

import _tf_devices

_tf_devices.configure()
