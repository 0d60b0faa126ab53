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
# Nodes a model asks for by reference beyond those its file spells out, over the whole model: an unrolled loop's
# copies of its body, SequenceMap's per element, the second and later copies of a TensorFlow function that
# several If / While / Case / calls name. Counted before copying (trip count x body nodes): each node is
# compiled (~0.2 ms), and a small file asking for 80,000 of them would hold the compiler for minutes.
MAX_IMPORT_COPIED_NODES = 1 << 15
# control-flow subgraphs of one model (If branches, loop bodies, TensorFlow functions called by If / While / Case,
# at every nesting level, every gear's), counted before they are converted: each is compiled and memory-planned
# as a graph of its own (~1.5 ms) and held in the .om once per owner, so a tree of branches that repeat one
# graph (2^depth copies from a small file) is refused. Exported models hold a few hundred at most.
MAX_SUBGRAPHS = 4096
DEFAULT_LOWER_LIMIT = 4   # --static_model_ops_lower_limit's default (GE's kDefaultMinKnownSubGraphClusterNum)
