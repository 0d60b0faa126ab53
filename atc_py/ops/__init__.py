"""The operator library: one OpSpec per GE op type (prototype, info, tiling, kernel, cost)."""
from .core.base import AIC, AICORE, AICPU, AIV, MIX, OpError, OpSpec, TilingResult
from .core.registry import all_ops, get_op, register

__all__ = ["AIC", "AICORE", "AICPU", "AIV", "MIX", "OpError", "OpSpec", "TilingResult", "all_ops", "get_op",
           "register"]
