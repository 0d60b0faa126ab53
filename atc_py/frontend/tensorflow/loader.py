"""Load a frozen GraphDef (.pb); every problem with the file is one E10041."""
from __future__ import annotations

import os
import pathlib

from google.protobuf.message import DecodeError

from ...common.errors import AtcError
from ...proto import tf_graph_pb2


def load_tf(path: str) -> tf_graph_pb2.GraphDef:
    p = pathlib.Path(path)
    if not os.path.isfile(p):     # False for a name too long or a link loop too
        raise AtcError("E10041", path=path, reason="the file does not exist or is not a regular file")
    g = tf_graph_pb2.GraphDef()
    try:
        g.ParseFromString(p.read_bytes())
    except (DecodeError, ValueError, OSError) as exc:
        raise AtcError("E10041", path=path, reason=f"it is not a valid TensorFlow GraphDef ({exc})") from None
    except Exception as exc:  # noqa: BLE001 -- the C++ protobuf backend raises its own error types
        raise AtcError("E10041", path=path, reason=f"it is not a valid TensorFlow GraphDef ({exc})") from None
    if not g.node:
        raise AtcError("E10041", path=path, reason="the graph has no nodes (is it a frozen GraphDef?)")
    return g
