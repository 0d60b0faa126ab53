"""GE-style IR: Graph of Nodes connected by Values that carry TensorDescs (and data for constants)."""
from .dtypes import DType, dtype_by_name, dtype_from_numpy
from .graph import Graph, Node, TensorDesc, Value

__all__ = ["DType", "dtype_from_numpy", "dtype_by_name", "Graph", "Node", "TensorDesc", "Value"]
