"""The AscIR registry: every node type an AscGraph may hold, with its inputs, attributes and compute type.

Names and attributes follow CANN's ascir ops (Data/Output with `index`, Load/Store with an `offset`
expression, Cast with `dst_type`, Scalar with its `value` as text, elementwise math, Sum/Max/Min/Mean/Prod
reductions, Broadcast). `op` names the GE op whose kernel function defines an elementwise or reduction
type's numbers: the AscGraph interpreter computes each node exactly as that op's own kernel would, which
is why a fused graph gives the unfused graph's bits. `ops_per_elem` is the vector cost of one element.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DATA, OUTPUT, SCALAR, LOAD, STORE, ELEWISE, BROADCAST, REDUCE, CAST = (
    "Data", "Output", "Scalar", "Load", "Store", "Elewise", "Broadcast", "Reduce", "Cast")

# attribute kinds: int, expr (a size expression), dtype (numpy name), float, str
DTYPES = ("float32", "float16", "int32", "int64", "int16", "int8", "uint8", "bool")


@dataclass(frozen=True)
class IrDef:
    name: str
    kind: str
    inputs: tuple[str, ...] = ("x",)
    attrs: dict = field(default_factory=dict)       # name -> kind
    op: str | None = None                           # GE op whose kernel function computes it
    ops_per_elem: int = 1
    out_dtype: str | None = None                    # fixed result dtype (comparisons)
    with_attrs: bool = False                        # the function takes the node's attributes: fn(x, attrs)

    @property
    def fn(self):
        """The op library's numpy function for this type (resolved on use: the ops import autofuse); the builtin
        op's, where a plugin's op replaced it (the AscGraph is the builtin's arithmetic)."""
        from ..ops.core.registry import builtin_op
        spec = builtin_op(self.op)
        return spec.fa if self.with_attrs else spec.fn


REGISTRY: dict[str, IrDef] = {}


def _reg(d: IrDef) -> IrDef:
    REGISTRY[d.name] = d
    return d


_reg(IrDef("Data", DATA, (), {"index": "int"}, ops_per_elem=0))
_reg(IrDef("Output", OUTPUT, ("x",), {"index": "int"}, ops_per_elem=0))
_reg(IrDef("Scalar", SCALAR, (), {"value": "str"}, ops_per_elem=0))
_reg(IrDef("Load", LOAD, ("x",), {"offset": "expr"}, ops_per_elem=0))
_reg(IrDef("Store", STORE, ("x",), {"offset": "expr"}, ops_per_elem=0))
_reg(IrDef("Broadcast", BROADCAST))
_reg(IrDef("Cast", CAST, ("x",), {"dst_type": "dtype"}, op="Cast"))

# unary elementwise: AscIR name -> (GE op, vector ops per element)
UNARY = {"Abs": ("Abs", 1), "Exp": ("Exp", 2), "Ln": ("Log", 3), "Sqrt": ("Sqrt", 2), "Rsqrt": ("Rsqrt", 3),
         "Reciprocal": ("Reciprocal", 2), "Erf": ("Erf", 8), "Tanh": ("Tanh", 5), "Relu": ("Relu", 1),
         "Neg": ("Neg", 1), "Sigmoid": ("Sigmoid", 4), "Sign": ("Sign", 2), "Floor": ("Floor", 1),
         "Ceil": ("Ceil", 1), "Square": ("Square", 1), "Gelu": ("Gelu", 10), "Relu6": ("Relu6", 2),
         "Softsign": ("Softsign", 3), "HardSwish": ("HardSwish", 4), "LogicalNot": ("LogicalNot", 1),
         "Sin": ("Sin", 10), "Cos": ("Cos", 10), "Round": ("Round", 2)}
for _name, (_op, _ops) in UNARY.items():
    _reg(IrDef(_name, ELEWISE, ("x",), op=_op, ops_per_elem=_ops))

# unary elementwise with float attributes (the op's own attribute names)
ATTR_UNARY = {"LeakyRelu": ("LeakyRelu", ("negative_slope",), 2), "Elu": ("Elu", ("alpha",), 4),
              "HardSigmoid": ("HardSigmoid", ("alpha", "beta"), 3), "Softplus": ("Softplus", (), 4)}
for _name, (_op, _attrs, _ops) in ATTR_UNARY.items():
    _reg(IrDef(_name, ELEWISE, ("x",), {a: "float" for a in _attrs}, op=_op, ops_per_elem=_ops, with_attrs=True))

BINARY = {"Add": ("Add", 1, None), "Sub": ("Sub", 1, None), "Mul": ("Mul", 1, None), "Div": ("RealDiv", 2, None),
          "Maximum": ("Maximum", 1, None), "Minimum": ("Minimum", 1, None), "Pow": ("Pow", 4, None),
          "Eq": ("Equal", 1, "bool"), "Ne": ("NotEqual", 1, "bool"), "Lt": ("Less", 1, "bool"),
          "Le": ("LessEqual", 1, "bool"), "Gt": ("Greater", 1, "bool"), "Ge": ("GreaterEqual", 1, "bool"),
          "LogicalAnd": ("LogicalAnd", 1, "bool"), "LogicalOr": ("LogicalOr", 1, "bool"),
          "FloorDiv": ("FloorDiv", 2, None), "FloorMod": ("FloorMod", 2, None)}
for _name, (_op, _ops, _dt) in BINARY.items():
    _reg(IrDef(_name, ELEWISE, ("x1", "x2"), op=_op, ops_per_elem=_ops, out_dtype=_dt))
_reg(IrDef("Where", ELEWISE, ("x1", "x2", "x3"), op="Select"))

REDUCE_OPS = {"Sum": ("ReduceSumD", 1), "Mean": ("ReduceMeanD", 2), "Max": ("ReduceMaxD", 1),
              "Min": ("ReduceMinD", 1), "Prod": ("ReduceProdD", 1)}
for _name, (_op, _ops) in REDUCE_OPS.items():
    _reg(IrDef(_name, REDUCE, ("x",), op=_op, ops_per_elem=_ops))


def get_ir(name: str) -> IrDef | None:
    return REGISTRY.get(name)
