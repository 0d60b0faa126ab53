"""What runs the op library rather than being an op: OpSpec and the registry, shape inference, running a kernel, its
cost, the host threads and GEMMs kernels compute with, implementation modes, and the tilings and helpers that many
families share. The op families are the modules of atc_py.ops; this package imports none of them (the registry
loads a family by name, through the generated op_index)."""
