"""Limits om-run puts on what an .om may ask of it (a file is untrusted until validate.py has checked it).

Each bounds a loop, an allocation or a recursion that a field of the file would otherwise control. They are
far above anything the compiler writes; a file beyond them is rejected with E30001 naming the field.
"""

MAX_OM_BYTES = 64 << 30           # the file itself (the largest device we model has 64 GiB)
MAX_OPS = 1_000_000               # OpDefs per model
MAX_TASKS = 4_000_000             # TaskDefs per model
MAX_MODELS = 4096                 # models in a multi-model om (container.MAX_MODELS)
MAX_RANK = 32                     # GE's kMaxDimNum is 8; ONNX models reach ~10 after Reshape chains
MAX_DIM = (1 << 31) - 1           # one dimension
MAX_BLOCK_DIM = 65535             # blocks of one kernel launch (the hardware's limit; the sink placeholder aside)
MAX_EVENTS = 65536                # events of one model
MAX_WORKSPACE_BYTES = 16 << 30    # one workspace of one kernel
MAX_EXT_INFO_BYTES = 1 << 20      # SUPER_KERNEL kernel_ext_info JSON
MAX_EXT_INFO_DEPTH = 16           # its nesting (the compiler writes depth 3)
MAX_ADDRESS = 1 << 48             # logical device addresses
DEFAULT_DEVICE_MEMORY = 32 << 30  # when the SoC's platform file gives no memory_size
# graphs in one MODEL_DEF (the root and its control-flow subgraphs): what the compiler writes at most (its
# MAX_SUBGRAPHS 4096, a branch per gear of 100, the root) rounded up. Each costs ~1 ms to check and decode, and
# a tree of If branches doubles them per level: the count is refused before any graph is looked at.
MAX_GRAPHS = 4352
MAX_SUBGRAPH_DEPTH = 64           # nesting of control-flow subgraphs
MAX_LABELS = 65535                # labels of one model (aclrtCreateLabel: 65535 per process)
MAX_MEMCPY_BYTES = 16 << 30       # one MEMCPY_ASYNC task
FM_SLACK_BYTES = 16 << 20         # memory_size beyond the feature map the model addresses (or 2x that end)
DEFAULT_MAX_LOOP_ITERATIONS = 1_000_000   # jumps to one label / activations of one stream per execution
