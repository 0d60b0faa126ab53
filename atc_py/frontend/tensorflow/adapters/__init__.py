"""TensorFlow op adapters: op type -> function(ctx) returning the node's output Values."""
from __future__ import annotations

from typing import Callable

TF_ADAPTERS: dict[str, Callable] = {}


class TfAdapterError(Exception):
    """A node the adapter cannot translate."""


def tf_op(*names: str):
    def deco(fn):
        for n in names:
            TF_ADAPTERS[n] = fn
        return fn
    return deco


from . import array, conv_more, hccl, index, math, nn, rnn  # noqa: E402,F401  (registers the adapters)
