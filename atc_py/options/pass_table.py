"""Every switchable graph pass of a build, one row each: its switch name, the function that does it, where and on
what it runs, the build-summary key it fills and the GE fusion passes a --fusion_switch_file switches it by.

--optimization_switch's names, --fusion_switch_file's mapping, the --help text and the generated reference
derive from these rows, and the build runs them from here (atc_py/passes/optimize.py, atc_py/pipeline.py).
Options sit below the passes in the package layers, so a row names its function as "module:function", resolved
when the build runs it; tests/atc_py/options/test_pass_table.py checks that every name resolves."""
from __future__ import annotations

from dataclasses import dataclass

# where in the build a pass runs (in table order within its phase)
IMPORT = "import"        # before the first shape inference: what the import left behind
SIMPLIFY = "simplify"    # on the model's dtypes: merge, fold, resolve control flow
FUSE = "fuse"            # on the model's dtypes, before the precision pass chooses the compute dtypes
CLEANUP = "cleanup"      # after the dtypes are chosen (and the casts they add folded)
MODEL = "model"          # per compiled model, after partitioning (atc_py/pipeline.py compile_model)
PHASES = {IMPORT: "after import, before shape inference", SIMPLIFY: "simplification, on the model's dtypes",
          FUSE: "fusion, on the model's dtypes", CLEANUP: "after the compute dtypes are chosen",
          MODEL: "per compiled model, after partitioning"}    # in the order they run

# what a pass runs on
EVERY_GRAPH = "every graph"            # the graph and each subgraph (If branches, loop bodies): closed graphs
ROOT_ONLY = "root only"                # the graph it is given (the root, or a compiled model's), not subgraphs
WITH_LATE_JOBS = "every graph, late jobs on the root"   # the root graph's heavy constants computed on host
                                                        # threads while the build goes on (passes/const_jobs.py)
GRAPH_FUSION, UB_FUSION = "GraphFusion", "UBFusion"    # the two tables of a --fusion_switch_file


@dataclass(frozen=True)
class GraphPass:
    name: str                       # the --optimization_switch name (and the stage name --log=info prints)
    function: str                   # "module:function" doing it: fn(graph, **takes) -> its count (autofuse:
                                    # FuseStats, summed by pipeline.fuse_model)
    stat: str                       # the build summary key of its count ("": counted under another pass's key)
    phase: str
    scope: str = EVERY_GRAPH
    takes: tuple[str, ...] = ()     # keyword arguments besides the graph (passes/optimize.py PassInputs)
    fusion: tuple[tuple[str, str], ...] = ()   # (GRAPH_FUSION | UB_FUSION, GE fusion pass name) switching it
    doc: str = ""                   # what it does, for the reference page


PASSES = {p.name: p for p in [
    GraphPass("identity", "atc_py.passes.prune:remove_identities", "identities_removed", IMPORT,
              doc="Identity nodes bypassed"),
    GraphPass("cse", "atc_py.passes.cse:eliminate_common_subexpressions", "cse_merged", SIMPLIFY,
              fusion=((GRAPH_FUSION, "CommonSubexpressionEliminationPass"),),
              doc="Equal nodes and equal constants merged (each distinct constant computed once)"),
    GraphPass("fold", "atc_py.passes.fold:fold_constants", "constants_folded", SIMPLIFY, WITH_LATE_JOBS,
              takes=("soc", "size_limit"), fusion=((GRAPH_FUSION, "ConstantFoldingPass"),),
              doc="Nodes of constant inputs computed at compile time (up to --fold_size_limit)"),
    GraphPass("transpose_cancel", "atc_py.passes.transpose_sink:cancel_transposes", "transposes_cancelled", FUSE,
              fusion=((GRAPH_FUSION, "TransposeTransposeFusionPass"),),
              doc="Transposes sunk through elementwise ops and inverse pairs cancelled"),
    GraphPass("conv_bias", "atc_py.passes.fusion:conv_bias", "bias_fused_into_conv", FUSE,
              fusion=((GRAPH_FUSION, "ConvBiasAddFusionPass"),),
              doc="A constant Add after a convolution becomes its bias"),
    GraphPass("bn_conv_fold", "atc_py.passes.fusion:bn_conv_fold", "bn_folded_into_conv", FUSE, WITH_LATE_JOBS,
              fusion=((GRAPH_FUSION, "ConvBatchnormFusionPass"), (GRAPH_FUSION, "ConvBnFusionPass"),
                      (GRAPH_FUSION, "BatchNormBnInferFusionPass")),
              doc="An inference BatchNorm (or a constant per-channel scale) after a convolution folded into its filter "
                  "and bias"),
    GraphPass("batch_matmul_reshape", "atc_py.passes.matmul_reshape:batch_matmul_reshape", "batch_matmul_reshaped",
              FUSE, fusion=((GRAPH_FUSION, "BatchMatMulV2ReshapeFusionPass"),),
              doc="A BatchMatMulV2 of [B, M, K] by a 2-D weight with a small M (and its bias Add) computed as one "
                  "[B*M, K] product"),
    GraphPass("matmul_bias", "atc_py.passes.fusion:matmul_bias", "matmul_bias_fused", FUSE,
              fusion=((GRAPH_FUSION, "MatMulBiasAddFusionPass"),),
              doc="A constant Add after a MatMul becomes its bias"),
    GraphPass("relu_fusion", "atc_py.passes.fusion:relu_fusion", "relu_fused", FUSE,
              fusion=((UB_FUSION, "TbeConvReluFusion"), (UB_FUSION, "TbeEltwiseReluFusion")),
              doc="A Relu becomes the epilogue of the convolution (or elementwise op) before it"),
    GraphPass("conv_add_fusion", "atc_py.passes.fusion:conv_add_fusion", "conv_add_fused", FUSE,
              fusion=((UB_FUSION, "TbeConvElemwiseReluFusion"),),
              doc="A residual Add (and its Relu) becomes the epilogue of the convolution before it"),
    GraphPass("dce", "atc_py.passes.prune:remove_dead_nodes", "dead_removed", CLEANUP,
              doc="Nodes no output depends on removed"),
    GraphPass("autofuse", "atc_py.autofuse.fusion:autofuse", "autofused_ops", MODEL,
              fusion=((UB_FUSION, "TbeElemwiseFusion"),),
              doc="Groups of vector ops fused into AscBackend nodes"),
    GraphPass("control_flow", "atc_py.passes.control_flow:select_branches", "branches_selected", SIMPLIFY, ROOT_ONLY,
              doc="An If/Case of a constant predicate replaced by its branch"),
    GraphPass("loop_unroll", "atc_py.passes.control_flow:unroll_loops", "loops_unrolled", SIMPLIFY, ROOT_ONLY,
              doc="A small static loop of a known trip count unrolled"),
    GraphPass("formats", "atc_py.passes.formats:select_formats", "trans_data_inserted", MODEL, ROOT_ONLY,
              takes=("small_channel", "soc"),
              doc="Device formats (NC1HWC0, FRACTAL_Z, FRACTAL_NZ) and the TransData between them, on a static "
                  "model"),
    GraphPass("aipp_conv_fusion", "atc_py.passes.aipp_fusion:aipp_conv_fusion", "aipp_conv_fused", MODEL, ROOT_ONLY,
              takes=("soc", "pool_fusion"),
              fusion=((UB_FUSION, "TbeAippConvFusion"), (UB_FUSION, "TbeAippConvZ"),
                      (UB_FUSION, "TbeAippConvSingleInFusion")),
              doc="The convolution behind an AIPP takes the image and runs the AIPP itself, on a static model"),
    GraphPass("aipp_conv_pool_fusion", "atc_py.passes.aipp_fusion:aipp_conv_fusion", "", MODEL, ROOT_ONLY,
              takes=("soc", "pool_fusion"), fusion=((UB_FUSION, "TbeAippConvReluMaxpoolingFusion"),),
              doc="Within aipp_conv_fusion (its pool_fusion): on Ascend310P the ResNet stem's max pool fused too; "
                  "counted in aipp_conv_fused"),
]}

OPTIMIZATION_PASSES = tuple(PASSES)


def fusion_passes() -> dict[str, dict[str, str]]:
    """GE fusion pass names by table (GraphFusion / UBFusion) -> the atc-py pass that does that fusion."""
    out: dict[str, dict[str, str]] = {GRAPH_FUSION: {}, UB_FUSION: {}}
    for p in PASSES.values():
        for kind, ge_name in p.fusion:
            out[kind][ge_name] = p.name
    return out


def in_phase(phase: str) -> list[GraphPass]:
    """The passes of one phase, in the order they run."""
    return [p for p in PASSES.values() if p.phase == phase]
