"""Limits the compiler puts on what a model may make it do (a model file is untrusted input).

They bound host memory and time: a tensor the largest Ascend device could not hold is an error naming the
node; a constant fold bigger or costlier than the limits below is not done at compile time — the node stays
in the graph and runs on the device (where the memory check of the build applies to it).
"""

MAX_TENSOR_BYTES = 64 << 30        # one tensor: the memory of the largest device modelled (Ascend910B, 64 GiB)
MAX_RANK = 32                      # dimensions of one tensor (numpy allows 64; exporters stay below 10)
DEFAULT_FOLD_SIZE_LIMIT = 256 << 20  # bytes of one folded constant (--fold_size_limit)
FOLD_WORK_PER_BYTE = 64            # element operations a fold may spend per byte of the size limit (~16 G ops)
MAX_CONST_BYTES = 4 << 30          # one constant materialised from a model file (a TF splat, an initializer)
MAX_SINK_NOPS = 1024               # --debug_sink_nops
MAX_IMPORT_UNROLL_ITERATIONS = 4096  # an ONNX Loop carrying sequences is unrolled when imported: at most this many
MAX_IMPORT_UNROLL_NODES = 1 << 16    # iterations, and at most this many IR nodes added by unrolling one Loop
DEFAULT_LOWER_LIMIT = 4   # --static_model_ops_lower_limit's default (GE's kDefaultMinKnownSubGraphClusterNum)
