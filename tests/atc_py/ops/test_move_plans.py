"""CANN's data-movement kernels as atc_py/ops/core/move_plans.py models them: which cores a Transpose or an
NCHW <-> NC1HWC0 TransData uses and how many MTE instructions its busiest core issues. The expected figures are
what the public CANN sources (canndev: op_tiling/transpose.cc, tbe/impl/dynamic/transpose.py,
trans_data_positive_source_ntc.py, trans_data_negative_target_ntc.py) give for ShuffleNetV2's tensors on a
310P3 (8 AI Cores, 256 KiB UB, fp16), traced by hand from their tiling and kernel loops."""
from __future__ import annotations

import pytest

from atc_py.ir.graph import TensorDesc
from atc_py.ops import get_op
from atc_py.ops.core.base import TilingContext, Work
from atc_py.ops.core.cost import CostParams, work_cost
from atc_py.ops.core.move_plans import from_5hd_plan, to_5hd_plan, transpose_plan
from atc_py.platform.soc import load_soc
from om_run.sim.profile import RuntimeProfile

SOC = load_soc("Ascend310P3")
UB, CORES, C0 = 262144, 8, 16
SHUFFLE = (0, 2, 1, 3)          # a channel shuffle's (N, 2, C/2, H*W) -> (N, C/2, 2, H*W)


def test_an_aligned_long_row_transpose_moves_in_bulk():
    """Rows of 784 fp16 (49 blocks): scenario 9, one move in and one out per loop of whole rows."""
    assert transpose_plan((32, 2, 58, 784), SHUFFLE, 2, CORES, UB).moves == 16     # 64 loops, 8 a core
    one = transpose_plan((1, 2, 58, 784), SHUFFLE, 2, CORES, UB)
    assert (one.cores, one.moves) == (8, 16)        # 58 loops of 2 rows: every core still gets work


def test_an_unaligned_row_transpose_copies_row_by_row():
    """Rows of 196 fp16 (392 bytes, not block-aligned): scenario 1. A core's 928 rows go in one pass of the 620
    rows the UB holds (two moves in and two out each), 307 single rows and the last row's fix: 3097 moves."""
    plan = transpose_plan((32, 2, 116, 196), SHUFFLE, 2, CORES, UB)
    assert (plan.cores, plan.moves, plan.vector_ops) == (8, 3097, 0)
    assert transpose_plan((1, 2, 116, 196), SHUFFLE, 2, CORES, UB).moves == 59       # 29 rows a core


def test_a_short_row_transpose_widens_every_element_to_a_block():
    """Rows of 49 fp16 (98 bytes): scenario 5 borrows an axis through vnchwconv, each value in its own block;
    the vector work is 16 slots per element, three times (two vnchwconv passes and the reorder between)."""
    plan = transpose_plan((32, 2, 232, 49), SHUFFLE, 2, CORES, UB)
    per_core = 32 * 464 * 49 // CORES
    assert plan.cores == CORES and plan.vector_ops >= 3 * 16 * per_core
    assert plan.vector_ops < 3 * 16 * per_core * 1.1


def test_a_transpose_that_moves_its_last_axis_has_no_plan():
    assert transpose_plan((2, 8, 2, 16), (0, 2, 3, 1), 2, CORES, UB) is None
    assert transpose_plan((64, 64), (1, 0), 2, CORES, UB) is None


def test_an_empty_tensor_has_no_plan():
    assert transpose_plan((0, 2, 58, 784), SHUFFLE, 2, CORES, UB) is None
    assert to_5hd_plan(0, 58, 784, C0, CORES, 2, UB) is None
    assert from_5hd_plan(2, 58, 0, C0, CORES, 2, UB) is None


def test_nchw_to_5hd_reads_a_ragged_plane_channel_by_channel():
    """trans_data_positive_source_ntc: H*W of 196 or 49 is not a multiple of C0, so every channel is its own
    move in (464 and 928 a core at batch 32); 784 reads a C1 block in one strided move."""
    assert to_5hd_plan(32, 116, 196, C0, CORES, 2, UB).moves == 464 + 32
    assert to_5hd_plan(32, 232, 49, C0, CORES, 2, UB).moves == 928 + 60
    assert to_5hd_plan(32, 58, 784, C0, CORES, 2, UB).moves == 16 + 16
    one = to_5hd_plan(1, 58, 784, C0, CORES, 2, UB)
    assert (one.cores, one.moves) == (4, 2)          # batch 1: the 4 C1 blocks over 4 cores


def test_5hd_to_nchw_splits_the_axis_canns_score_picks():
    """trans_data_negative_target_ntc: one image at H*W 784 is one core's work; below the gate (H*W 196, 49)
    16 images share a pass and the C1 blocks are split, 3 of them a pass at H*W 49 (5 cores for 15 blocks)."""
    assert from_5hd_plan(1, 58, 784, C0, CORES, 2, UB).cores == 1
    assert from_5hd_plan(32, 58, 784, C0, CORES, 2, UB).moves == 8
    assert from_5hd_plan(32, 116, 196, C0, CORES, 2, UB).moves == 32 + 2 * 17
    small = from_5hd_plan(1, 232, 49, C0, CORES, 2, UB)
    assert (small.cores, small.moves) == (5, 50)


def test_each_counted_move_costs_the_measured_instruction_cycles():
    """RuntimeProfile.mte_move_cycles prices Work.mte_moves on top of the bytes (Atlas A2's measured 20 cycles
    an instruction); a kernel without counted moves costs what it did."""
    params = RuntimeProfile().cost_params()
    assert params.move_cycles == RuntimeProfile().mte_move_cycles == 20
    spec = get_op("TransposeD")
    bulk = work_cost(spec, Work(bytes=1 << 20, dtype="float16"), SOC, params)
    rows = work_cost(spec, Work(bytes=1 << 20, dtype="float16", mte_moves=3000), SOC, params)
    assert rows.mte - bulk.mte == 3000 * 20
    assert work_cost(spec, Work(bytes=1 << 20, mte_moves=3000), SOC, CostParams()).mte == bulk.mte


@pytest.mark.parametrize("op,shape,attrs,cores", [
    ("TransposeD", (1, 2, 8, 16), {"perm": [0, 2, 1, 3]}, 1),                # one borrow tile: one core
    ("TransData", (1, 58, 28, 28), {"src_format": "NC1HWC0", "dst_format": "NCHW"}, 1),
    ("TransData", (1, 232, 7, 7), {"src_format": "NC1HWC0", "dst_format": "NCHW"}, 5),
    ("TransData", (32, 116, 14, 14), {"src_format": "NCHW", "dst_format": "NC1HWC0"}, 8),
])
def test_the_kernel_launches_on_the_cores_its_plan_uses(op, shape, attrs, cores):
    """The tiling's block_dim is the plan's core count, and the busiest block carries the plan's moves."""
    spec = get_op(op)
    out = tuple(shape[p] for p in attrs["perm"]) if "perm" in attrs else shape
    ctx = TilingContext([TensorDesc(shape, "float16")], [TensorDesc(out, "float16")], attrs, SOC, {}, 1.0)
    res = spec.tiling(ctx)
    assert res.block_dim == cores
    assert spec.launch_block_work(ctx, res.block_dim).mte_moves > 0
