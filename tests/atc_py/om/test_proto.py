"""The committed generated modules are what protoc makes of proto/*.proto (compared as descriptors)."""

import pytest
from google.protobuf import descriptor_pb2

from atc_py.proto import ge_ir_pb2, insert_op_pb2, task_pb2, tf_graph_pb2
from tests.helpers import ROOT


def _strip_json_names(messages):
    for m in messages:
        for f in m.field:
            f.ClearField("json_name")
        _strip_json_names(m.nested_type)


@pytest.mark.parametrize("module,proto", [(ge_ir_pb2, "ge_ir.proto"), (task_pb2, "task.proto"),
                                          (tf_graph_pb2, "tf_graph.proto"), (insert_op_pb2, "insert_op.proto")])
def test_generated_module_matches_proto(tmp_path, module, proto):
    protoc = pytest.importorskip("grpc_tools.protoc")
    out = tmp_path / "set.pb"
    rc = protoc.main(["protoc", f"-I{ROOT / 'proto'}", f"--descriptor_set_out={out}", str(ROOT / "proto" / proto)])
    assert rc == 0
    fresh = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    _strip_json_names(fresh.message_type)  # protoc adds json_name to descriptor sets, not to gencode
    committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    assert committed == fresh, "atc_py/proto is stale: run `make proto`"


def test_ge_field_numbers():
    """Spot checks of GE's field numbers and enum values (ge_ir.proto, task.proto)."""
    op = ge_ir_pb2.OpDef.DESCRIPTOR.fields_by_name
    assert (op["input_i"].number, op["output_i"].number, op["input_desc"].number, op["output_desc"].number) == (28, 29, 33, 34)
    assert ge_ir_pb2.ModelDef.DESCRIPTOR.fields_by_name["attr"].number == 11
    assert ge_ir_pb2.AttrDef.DESCRIPTOR.fields_by_name["list"].number == 1
    t = task_pb2.TaskDef.DESCRIPTOR.fields_by_name
    assert (t["kernel"].number, t["kernel_with_handle"].number, t["ffts_plus_task"].number,
            t["update_pc_task"].number) == (20, 40, 42, 52)
    assert task_pb2.KernelContext.DESCRIPTOR.fields_by_name["args_format"].number == 10
    assert task_pb2.KernelDef.DESCRIPTOR.fields_by_name["block_dim"].number == 11
