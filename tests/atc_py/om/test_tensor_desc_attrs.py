"""fill_tensor_desc's inline origin_format/origin_shape attrs (2 of every 3 set_attr calls of a
DenseNet-121 build) give the same bytes as set_attr's general path, for every shape kind."""
from __future__ import annotations

import pytest

from atc_py.engines.modeldef import fill_tensor_desc
from atc_py.ir.graph import TensorDesc
from atc_py.om.attrs import set_attr
from atc_py.proto import ge_ir_pb2 as ge


def _general(d: TensorDesc) -> ge.TensorDescriptor:
    td = ge.TensorDescriptor()
    fill_tensor_desc(td, d)
    del td.attr["origin_format"], td.attr["origin_shape"]
    set_attr(td.attr["origin_format"], d.origin_format)
    set_attr(td.attr["origin_shape"], list(d.shape))
    return td


@pytest.mark.parametrize("desc", [TensorDesc((1, 3, 224, 224), "float16", "NCHW", "NCHW"), TensorDesc((), "float32"),
                                  TensorDesc((-1, 7), "int64", "ND", "ND"), TensorDesc((5,), "int32", "ND", "NHWC")])
def test_inline_descriptor_attrs_serialise_as_set_attr_does(desc):
    td = ge.TensorDescriptor()
    fill_tensor_desc(td, desc)
    assert td.SerializeToString(deterministic=True) == _general(desc).SerializeToString(deterministic=True)
    assert td.attr["origin_shape"].list.val_type == ge.AttrDef.ListValue.VT_LIST_INT

