"""How a frontend reports a failure while converting one framework node: the frontend's own validation errors
(an adapter rejecting an attribute, a prototype rejecting shapes) are the model's fault — E14001 naming the
node, what it was given and why; anything else is ours — E19999 naming the node, its traceback with
ATC_PY_DEBUG=1."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Callable

from ..common.errors import AtcError


@contextmanager
def converting(name: str, op_type: str, model_faults: tuple, describe: Callable[[], str]):
    try:
        yield
    except model_faults as exc:
        raise AtcError("E14001", value=describe(), opname=name, optype=op_type,
                       reason=str(exc).rstrip(".")) from None
    except AtcError:
        raise
    except Exception as exc:
        if os.environ.get("ATC_PY_DEBUG"):
            raise
        raise AtcError("E19999", message=f"Internal error while converting node {name} ({op_type}): "
                                         f"{type(exc).__name__}: {exc}") from None
