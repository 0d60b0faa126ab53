"""om-run compare: layer-by-layer accuracy comparison of an .om against its framework model (msit debug compare's
flags and CSV), without a device: the framework model runs in onnxruntime (or the project's reference path), the
.om in the simulator with dumps, tensors are matched through the original names GE keeps on every op."""
