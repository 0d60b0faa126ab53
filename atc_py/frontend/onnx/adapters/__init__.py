"""ONNX op adapters, one module per family; importing a module registers its adapters. A compile imports only
the modules its model's ops need (adapter.ADAPTERS looks them up in adapter_index.py); load_all() imports
every one in this order (plugins, which may replace builtin adapters, load after all of them)."""
import importlib

MODULES = ("math", "activation", "nn", "tensor", "index", "reduce", "sequence", "training",
           "ascend", "hccl", "scan", "strings", "ml",
           "losses", "quant", "recurrent", "signal", "vision",
           "gather_scatter", "bitwise", "linear_algebra", "norm", "transformer",
           "control", "optional", "sequence_map", "quant_ms")


def load_all() -> None:
    for module in MODULES:
        importlib.import_module(f"{__name__}.{module}")
