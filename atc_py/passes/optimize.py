"""The graph passes of a build, in order: the pass table's rows (atc_py/options/pass_table.py) phase by phase, with
the steps that are no switchable pass between them (shape inference, the precision and output-type passes, the
second cse/fold round over the casts those add).

A row names its function as "module:function" (options sit below the passes); `run_pass` resolves it and runs it
over the graphs its scope says, with the keyword arguments its row `takes` from PassInputs."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

from ..common.limits import DEFAULT_FOLD_SIZE_LIMIT
from ..ir.graph import Graph, all_graphs, all_nodes
from ..ops.core.infer import infer_graph
from ..options.output_type import OutputTypes
from ..options.pass_table import CLEANUP, FUSE, IMPORT, PASSES, ROOT_ONLY, SIMPLIFY, WITH_LATE_JOBS, GraphPass, in_phase
from ..options.precision import MixList
from ..platform.soc import SocSpec
from .const_jobs import ConstJobs
from .output_type import apply_output_type
from .precision import SATURATE, apply_precision, compute_in


@cache
def resolve(reference: str):
    """The function a "module:function" reference names."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def pass_function(name: str):
    """The function of graph pass `name` (its row of the pass table)."""
    return resolve(PASSES[name].function)


@dataclass(frozen=True)
class PassInputs:
    """What pass functions take besides the graph, by parameter name (a row's `takes`)."""
    soc: SocSpec | None = None
    size_limit: int = DEFAULT_FOLD_SIZE_LIMIT      # --fold_size_limit
    small_channel: bool = False                    # --enable_small_channel
    pool_fusion: bool = True                       # the aipp_conv_pool_fusion switch
    jobs: ConstJobs | None = None                  # the root graph's late jobs (scope WITH_LATE_JOBS)


def run_pass(row: GraphPass, graph: Graph, inputs: PassInputs, *args) -> int:
    """One pass over `graph` and, as its scope says, its subgraphs; returns its count. `args` follow the graph."""
    fn = resolve(row.function)
    kwargs = {name: getattr(inputs, name) for name in row.takes}
    if row.scope == ROOT_ONLY:
        return fn(graph, *args, **kwargs)
    if row.scope == WITH_LATE_JOBS:   # subgraphs' constants are computed at once (late jobs go to the root graph)
        return sum(fn(g, *args, jobs=inputs.jobs if g is graph else None, **kwargs) or 0 for g in all_graphs(graph))
    return sum(fn(g, *args, **kwargs) or 0 for g in all_graphs(graph))


def optimize(graph: Graph, soc, st, switches: dict[str, bool] | None = None,
             precision: str = "must_keep_origin_dtype", output_type: OutputTypes = OutputTypes(),
             late: ConstJobs | None = None, fold_limit: int = DEFAULT_FOLD_SIZE_LIMIT,
             mix: MixList | None = None, keep: frozenset = frozenset(), low: dict[str, str] | None = None
             ) -> dict[str, int]:
    """The graph passes in order; --optimization_switch NAME:off skips one (its count is 0; infer always runs).
    The weight Casts of the dtype round are left computing on host threads in `late`, if given, while compiling
    goes on. Graph-local passes run on the graph and on every subgraph (If branches, loop bodies: they are closed,
    their captures are explicit inputs); output_type works on the model's outputs only, so on the root. `st` runs
    and times each stage (pipeline._Stages)."""
    on = lambda name: (switches or {}).get(name, True)  # noqa: E731
    inputs = PassInputs(soc=soc, size_limit=fold_limit, jobs=late)
    stats: dict[str, int] = {}

    def run(name: str, stage: str, *args) -> int:
        return st.run(stage, run_pass, PASSES[name], graph, inputs, *args)

    def phase(name: str) -> None:
        for row in in_phase(name):
            stats[row.stat] = run(row.name, row.name) if on(row.name) else 0

    fold, cse = PASSES["fold"].stat, PASSES["cse"].stat
    phase(IMPORT)
    st.run("infer", infer_graph, graph)
    # merge equal subexpressions (each distinct constant is then computed once), fold (weights computed by
    # ConstantOfShape & co become constants), resolve control flow; fuse on the model's dtypes, then choose
    # dtypes; the weight Casts that adds are merged and fold in a second, cheap round
    phase(SIMPLIFY)
    if stats[PASSES["control_flow"].stat] or stats[PASSES["loop_unroll"].stat]:
        st.run("infer control flow", infer_graph, graph)
        if on("fold"):
            stats[fold] += run("fold", "fold control flow")
    phase(FUSE)
    counts = [st.run("precision", apply_precision, g, precision, mix, keep) for g in all_graphs(graph)]
    stats["fp16_cube_ops"], stats["fp16_vector_ops"] = sum(c[0] for c in counts), sum(c[1] for c in counts)
    stats["custom_dtype_ops"] = sum(st.run("customize_dtypes", compute_in, g, low, "customize_dtypes")
                                    for g in all_graphs(graph)) if low else 0
    stats["outputs_cast"] = st.run("output_type", apply_output_type, graph, output_type)
    if on("fold") and (stats["fp16_cube_ops"] or stats["fp16_vector_ops"] or stats["outputs_cast"] or
                       stats["custom_dtype_ops"]):
        if on("cse"):
            stats[cse] += run("cse", "cse dtypes", False)    # casts only: the constants were merged before
        stats[fold] += run("fold", "fold dtypes")
    for node in all_nodes(graph):   # the folds took their copy; the .om carries no build-internal marks
        node.attrs.pop(SATURATE, None)
    phase(CLEANUP)
    for g in all_graphs(graph):
        g.topo_sort()
    if any(g is not graph for g in all_graphs(graph)):
        st.run("infer subgraphs", infer_graph, graph)   # control nodes' outputs after their bodies changed
    return stats
