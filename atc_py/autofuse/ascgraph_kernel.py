"""The AscBackend kernel: an ImplGraph interpreted tile by tile, and its cost from the same ImplGraph.

The loop nest is the schedule's (schedule.py): for every block, for every tile of the block, the
nodes run in order on numpy arrays over the vectorized axes (rows of the tile x the reduce axes); nodes the
schedule hoisted out of the tile loop run once per block. Loads gather the tile's rows of an input from
global memory, Stores write them back; nothing else touches global memory. All loop bounds come from the
tiling data the kernel was launched with (size and tiling variables), checked against the tensors it got.

Numbers: each node computes as the GE op its AscIR type names does (ascir.py). Elementwise work is exact;
a reduction adds along its axes moved last and made contiguous (pairwise summation, as SoftmaxV2, LayerNorm
and a reduction over trailing axes do), so fused results equal the unfused ones bit for bit, except a
reduction over a non-trailing axis, which the unfused ReduceSumD/MeanD add in another order (within a few
ulp of the row sum: the tolerance documented in docs/autofuse.md).

Cost (Work, per launch, costed like any kernel by ops/core/cost.py): bytes the Loads and Stores move (gathered
rows, a hoisted input once per block, spilled tensors written and read back in GM workspace), vector element
operations of every node, and whether MTE and vector work overlap (double-buffered queues, tiling key 0).
"""
from __future__ import annotations

import contextvars
import hashlib
import math

import numpy as np

from ..ops.core.base import OpError, Work, ceil_div
from ..platform.soc import SocSpec
from ..proto import ge_ir_pb2 as ge
from . import ascir
from .expr import ExprError
from .graph import AscGraph, AscGraphError, AscNode, check_contract
from .schedule import DOUBLE, KEYS, SPILL, Nest, variants
from .serialize import from_graph_def
from .tiling import TilingError, TilingPlan, auto_tiling, bind_sizes, footprint, output_shapes, tiling_struct

# om-run compare: a list set here receives, per launch run in this context, a dict of every AscIR node's value
# by node name (the one-pass plan only; a FusedAscBackend launches its members in order); None (the default)
# costs one lookup a launch
TRACE: contextvars.ContextVar[list | None] = contextvars.ContextVar("ascgraph_trace", default=None)

MAX_DIM = (1 << 31) - 1
MAX_ELEMENTS = 1 << 34      # elements of a loop nest (16 Gi: beyond any device memory)
MAX_RUNS = 64               # launch plans kept per kernel (a dynamic-shape model may launch it with many shapes)
ONE_PASS = True             # a launch's tiles as one pass over all rows; False: tile by tile, the loop nest as
                            # the schedule writes it (the reference tests hold the one pass equal to)


def launch_covers(block_dim: int, per_block: int, tiles: int) -> bool:
    """block_dim blocks of per_block tiles cover `tiles` with no idle block; an empty launch (no rows: a batch of
    0) is one block with nothing to do. Checked at load and again at run time."""
    if tiles == 0:
        return block_dim == 1
    return block_dim >= 1 and (block_dim - 1) * per_block < tiles <= block_dim * per_block


class AscKernel:
    """One AscBackend's graphs, checked once, with what its tiling, kernel and cost need."""

    def __init__(self, hint: AscGraph, impl: AscGraph):
        if impl.attrs.get("tiling_key") != DOUBLE:
            raise AscGraphError(f"graph {impl.name!r}", "tiling_key", f"the recorded ImplGraph is tiling key "
                                f"{DOUBLE}, not {impl.attrs.get('tiling_key')}")
        check_contract(hint, impl)
        Nest.of(impl, hint)
        self.hint, self.impl = hint, impl
        self.impls = variants(impl)
        self.nests = [Nest.of(g, hint) for g in self.impls]
        if len({(n.tile_var, n.block_var, tuple(n.par)) for n in self.nests}) != 1:
            raise AscGraphError(f"graph {hint.name!r}", "ascgraph_impl", "the ImplGraphs split different axes")
        self.struct = tiling_struct(hint, impl)
        self.n_inputs, self.n_outputs = len(hint.data_nodes), len(hint.output_nodes)
        self._runs: dict[tuple, _Run] = {}     # launch plans by (key, tiling values, block_dim, shapes)

    digest = ""          # set by kernel_for: sha256 of the graphs' content (their names aside)

    # -- shapes and tiling ------------------------------------------------------------------------------------
    def bind(self, shapes) -> dict[str, int]:
        """Size variables from input shapes; the iteration space they give is bounded (a file's graph may size
        its axes with any expression of them)."""
        try:
            env = bind_sizes(self.hint, [tuple(s) for s in shapes])
            space = 1
            for ax in self.hint.axes:
                n = ax.size.eval(env)
                if not 0 <= n <= MAX_DIM:
                    raise TilingError(f"axis {ax.name} = {ax.size} = {n} is out of range")
                space *= n
            if space > MAX_ELEMENTS:
                raise TilingError(f"the loop nest covers {space} elements (limit {MAX_ELEMENTS})")
        except (TilingError, ExprError) as exc:
            raise OpError(f"AscGraph: {exc}") from None
        return env

    def check_launch(self, values: dict, key: int, block_dim: int, shapes, out_shapes, soc: SocSpec) -> None:
        """What om-run checks of a launch read from a file: the tiling data agrees with the tensors, the tiles
        cover the work exactly once per block, the tiling key's buffers fit the SoC's UB."""
        if not 0 <= key < len(self.impls):
            raise OpError(f"tiling key {key} is not one of {list(KEYS)}")
        env = self.bind(shapes)
        outs = [s for s, _ in self.out_shapes(env)]
        if [tuple(s) for s in out_shapes] != outs:
            raise OpError(f"output shapes {[list(s) for s in out_shapes]} are not the graph's "
                          f"{[list(s) for s in outs]}")
        for name, v in env.items():
            if values.get(name) != v:
                raise OpError(f"tiling data says {name} = {values.get(name)}, the inputs give {v}")
        nest = self.nests[key]
        if not nest.split:
            if block_dim != 1:
                raise OpError(f"block_dim {block_dim}: a graph without parallel axes runs on one core")
            tile_env = env
        else:
            tile, per_block = values.get(nest.tile_var, 0), values.get(nest.block_var, 0)
            rows = math.prod(self.impls[key].axes[a].size.eval(env) for a in nest.par)
            if not 1 <= tile <= max(rows, 1) or not 1 <= per_block:
                raise OpError(f"tiling variables {nest.tile_var} = {tile}, {nest.block_var} = {per_block} for "
                              f"{rows} rows")
            tiles = ceil_div(rows, tile)
            if not launch_covers(block_dim, per_block, tiles):
                raise OpError(f"block_dim {block_dim} x {per_block} tiles does not cover the {tiles} tiles")
            tile_env = {**env, nest.tile_var: tile, nest.block_var: per_block}
        ub, _ = footprint(self.impls[key], tile_env)
        if key != SPILL and ub > soc.ub_size:
            raise OpError(f"tiling key {key} with these tiles needs {ub} B of UB; {soc.soc_version} has {soc.ub_size}")

    def out_shapes(self, env: dict[str, int]):
        return output_shapes(self.hint, env)

    def plan(self, shapes, soc: SocSpec) -> TilingPlan:
        env = self.bind(shapes)
        return auto_tiling(self.hint, self.impls, env, soc.ub_size, soc.vector_cores, self.nests[0])

    def tiling_values(self, plan: TilingPlan) -> bytes:
        return self.struct.pack(**{n: plan.values.get(n, 1) for n in self.struct.names})

    # -- the kernel --------------------------------------------------------------------------------------------
    def run(self, values: dict, key: int, block_dim: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if not 0 <= key < len(self.impls):
            raise OpError(f"tiling key {key} is not one of the kernel's {list(KEYS)}")
        env = {n: int(values[n]) for n in self.struct.names}
        shapes = tuple(tuple(x.shape) for x in inputs)
        cache_key = (key, tuple(env.values()), block_dim, shapes, ONE_PASS)
        run = self._runs.get(cache_key)
        if run is None:
            want = self.bind(shapes)
            for name, v in want.items():
                if env.get(name) != v:
                    raise OpError(f"tiling data says {name} = {env.get(name)}, the inputs give {v}")
            run = _Run(self, self.impls[key], self.nests[key], env, block_dim)
            if len(self._runs) >= MAX_RUNS:
                self._runs.clear()
            self._runs[cache_key] = run
        return run(inputs)

    # -- the cost ----------------------------------------------------------------------------------------------
    def work(self, plan: TilingPlan, block: bool = False) -> Work:
        """The launch's work, or (block=True) its largest block's: a whole share of tiles, the hoisted nodes once."""
        impl, nest = self.impls[plan.key], self.nests[plan.key]
        env = plan.values
        rows, tiles, blocks = plan.rows, ceil_div(plan.rows, plan.tile), plan.block_dim
        if block:
            per_block = ceil_div(tiles, max(1, blocks))
            rows, tiles, blocks = min(rows, per_block * plan.tile), min(tiles, per_block), 1
        moved = 0
        vec: list[tuple[int, int]] = []        # (element ops, itemsize)
        for n in impl.nodes:
            kind = n.ir.kind
            if kind in (ascir.DATA, ascir.OUTPUT, ascir.SCALAR):
                continue
            t = n.input_attr(0) if kind == ascir.STORE else n.y
            local = n.inputs[0][0].y if kind == ascir.STORE else n.y
            per_row = _vec_elems(local, nest, env)
            times = blocks if nest.is_hoisted(n) else (rows if nest.along_m(local) else tiles)
            elems = per_row * times
            size = int(np.dtype(t.dtype).itemsize)
            if kind == ascir.LOAD and nest.along_m(local):
                distinct = _distinct_rows(n.inputs[0][0].y, nest, impl, env, plan.tile)
                if distinct < plan.tile:                 # the rows read are broadcast to the tile on chip
                    vec.append((elems, size))
                elems = per_row * min(rows, tiles * distinct)
            if kind in (ascir.LOAD, ascir.STORE):
                moved += elems * size
                continue
            if kind == ascir.REDUCE:
                elems = _vec_elems(n.input_attr(0), nest, env) * times
            vec.append((n.ir.ops_per_elem * elems, size))
            if plan.key == SPILL:
                moved += 2 * elems * size       # written to and read back from GM workspace
        widest = max([s for _, s in vec] or [4])
        ops = sum(o * s for o, s in vec) // widest
        norm = any(n.ir.kind == ascir.REDUCE for n in impl.nodes)   # dependent passes per row: max, exp, sum...
        return Work(vector_ops=ops, bytes=moved, dtype={1: "int8", 2: "float16", 4: "float32", 8: "int64"}[widest],
                    vector_class="norm" if norm else "elementwise", pipelined=plan.key == DOUBLE)


def _distinct_rows(gm, nest: Nest, impl: AscGraph, env, tile: int) -> int:
    """Rows of an input one tile reads from global memory: a tile is `tile` consecutive rows of the merged
    parallel axes; an input that does not iterate the innermost of them (a per-channel scale over C of
    [N, C, H, W]) changes only every `inner` rows, so its tile is about tile / inner + 1 distinct rows (the
    Load broadcasts them on chip)."""
    present = {a for a, r in zip(gm.axis, gm.repeats) if r != 1}
    sizes = [impl.axes[a].size.eval(env) for a in nest.par]
    last = max((k for k, a in enumerate(nest.par) if a in present), default=-1)
    if last == len(nest.par) - 1:
        return tile
    inner = math.prod(sizes[last + 1:])
    distinct = math.prod(n for a, n in zip(nest.par, sizes) if a in present)
    return max(1, min(tile, ceil_div(tile, inner) + 1, distinct))


def _vec_elems(t, nest: Nest, env) -> int:
    """Elements of one row of a tile of t (its reduce-axis repeats)."""
    n = 1
    for a, r in zip(t.axis, t.repeats):
        if a in nest.red:
            n *= r.eval(env)
    return n


class _Run:
    """One launch configuration (tiling values, block_dim, input shapes), prepared once: inputs arranged as
    (rows, reduce axes...), the loop nest's steps, outputs arranged back. Called per launch with the inputs;
    everything a launch writes lives in that call's value list (one slot per node: a Data node's slot holds
    its gathered input, a Store's its output buffer), so one plan serves threads launching it at once."""

    def __init__(self, k: AscKernel, impl: AscGraph, nest: Nest, env: dict, block_dim: int):
        self.k, self.impl, self.nest, self.env = k, impl, nest, env
        axes = impl.axes
        self.rows = math.prod(axes[a].size.eval(env) for a in nest.par) if nest.par else 1
        self.red_ext = [axes[a].size.eval(env) for a in nest.red]
        if nest.split:
            tile, per_block = env[nest.tile_var], env[nest.block_var]
            if tile < 1 or per_block < 1:
                raise OpError(f"tiling variables {nest.tile_var} = {tile}, {nest.block_var} = {per_block}")
        else:
            tile, per_block = 1, 1
        tiles = ceil_div(self.rows, tile)
        if not launch_covers(block_dim, per_block, tiles):
            raise OpError(f"block_dim {block_dim} x {per_block} tiles per block does not cover the {tiles} tiles "
                          "of the launch")
        self.tile, self.per_block, self.block_dim = tile, per_block, block_dim
        self.one_pass = ONE_PASS     # fixed per plan (the plan cache is keyed by it too)
        # the leading dims a value has: one of `rows` (tile by tile: tiles slice it), or in the one pass the
        # parallel axes unflattened — a per-channel input then stays a broadcast view instead of being copied
        # out to every row (flattening a broadcast copies it), and the outputs need no unflattening copy
        multi = self.one_pass and len(nest.par) > 1
        self.lead_shape = tuple(axes[a].size.eval(env) for a in nest.par) if multi else (self.rows,)
        self.nlead = len(self.lead_shape)
        self.ones = (1,) * self.nlead
        slot = {id(n): k for k, n in enumerate(impl.nodes)}
        self.n_slots = len(impl.nodes)
        self.gathers = [(slot[id(d)], self.gather_spec(d)) for d in impl.data_nodes]
        self.lead = {slot[id(d)]: spec[3] for d, (_, spec) in zip(impl.data_nodes, self.gathers)}
        self.stores = []
        for o in impl.output_nodes:
            store = o.inputs[0][0]
            local = store.inputs[0][0].y
            self.stores.append((slot[id(store)], self.tile_shape(local, self.rows), np.dtype(store.y.dtype),
                                self.scatter_spec(store)))
        self.store_rows = {dst: shape[0] for dst, shape, _, _ in self.stores}
        hoisted, inner = [], []
        for n in impl.nodes:
            if n.ir.kind not in (ascir.DATA, ascir.OUTPUT):
                (hoisted if nest.is_hoisted(n) else inner).append(self.step(n, slot))
        self.hoisted, self.inner = hoisted, inner

    def __call__(self, inputs) -> list[np.ndarray]:
        vals: list = [None] * self.n_slots
        for (dst, spec), x in zip(self.gathers, inputs):
            vals[dst] = self.gather(spec, x)
        for dst, shape, dt, _ in self.stores:
            vals[dst] = np.zeros(shape, dt)
        hoisted, inner = self.hoisted, self.inner
        if self.one_pass:
            # Every row is computed alone (a Reduce reduces only the tile's reduce axes, row by row, each row one
            # contiguous pairwise sum), so the tiles together are one pass over all rows: the same numbers
            # without a Python loop per tile (DenseNet's BN+ReLU groups ran ~50 tiles each, BERT's LayerNorms
            # and Softmaxes tens). The blocks cover every tile (checked when the plan was made).
            for run in hoisted:
                run(vals, 0, 1)
            for run in inner:
                run(vals, 0, self.rows)
            trace = TRACE.get()
            if trace is not None:
                trace.append(self.trace(vals))
        else:
            tile, per_block = self.tile, self.per_block
            for b in range(self.block_dim):
                for run in hoisted:
                    run(vals, 0, 1)
                for t in range(per_block):
                    lo = (b * per_block + t) * tile
                    if lo >= self.rows:
                        break
                    hi = min(lo + tile, self.rows)
                    for run in inner:
                        run(vals, lo, hi)
        return [self.scatter(spec, vals[dst]) for dst, _, _, spec in self.stores]

    def trace(self, vals: list) -> dict:
        """Every computed node's value over the original axes (1 where it does not iterate an axis). A value
        of the one pass is (lead dims, reduce axes...): the parallel axes (or their rows, or 1), then the rest."""
        nest, env = self.nest, self.env
        par_sizes = tuple(self.k.hint.axes[a].size.eval(env) for a in nest.par)
        inv = tuple(int(i) for i in np.argsort(nest.par + nest.red))
        into = {}
        for k, n in enumerate(self.impl.nodes):
            buf = vals[k]
            if n.ir.kind in (ascir.DATA, ascir.OUTPUT) or not isinstance(buf, np.ndarray) or \
                    buf.ndim != self.nlead + len(nest.red):
                continue
            lead = buf.shape[:self.nlead]
            if self.nlead > 1:
                par = lead
            elif lead[0] == self.rows:
                par = par_sizes
            elif lead[0] == 1:
                par = (1,) * len(nest.par)
            else:
                continue
            if any(st == 0 and d > 1 for st, d in zip(buf.strides, buf.shape)):   # a broadcast view: its own rows
                buf = buf[tuple(slice(0, 1) if st == 0 else slice(None) for st in buf.strides)]
                if self.nlead > 1:
                    par = buf.shape[:self.nlead]
                elif buf.shape[0] == 1:
                    par = (1,) * len(nest.par)
            into[n.name] = buf.reshape(par + buf.shape[self.nlead:]).transpose(inv)
        return into

    # -- global memory <-> tiles ---------------------------------------------------------------------------
    def gather_spec(self, data: AscNode):
        """How an input becomes (rows or 1, reduce extents...), the rows a tile's Load reads: (its shape over
        all original axes, 1 where absent; the transpose; the broadcast shape or None; rows or 1)."""
        nest, axes = self.nest, self.k.hint.axes
        full = [1] * len(axes)
        for a, r in zip(data.y.axis, data.y.repeats):
            full[a] = r.eval(self.env)
        perm = nest.par + nest.red
        moved = [full[a] for a in perm]
        p = moved[:len(nest.par)]
        if any(d != 1 for d in p):
            to = tuple(axes[a].size.eval(self.env) for a in nest.par) + tuple(moved[len(p):])
            return tuple(full), perm, to, self.rows
        return tuple(full), perm, None, 1

    def gather(self, spec, x: np.ndarray) -> np.ndarray:
        full, perm, to, lead = spec
        arr = x.reshape(full).transpose(perm)
        if to is not None:
            arr = np.broadcast_to(arr, to)
        if self.nlead > 1:     # the parallel axes kept: (par..., red...) as it is (broadcast dims stay views)
            return arr
        return arr.reshape((lead,) + arr.shape[len(self.nest.par):])

    def scatter_spec(self, store: AscNode):
        return self.node_spec(store.inputs[0][0].y, store.y)

    def node_spec(self, local, own=None):
        """How a tile value of tensor `local` goes back to global memory as tensor `own` (default: itself)."""
        nest, axes = self.nest, self.k.hint.axes
        own = own if own is not None else local
        rows_lead = self.rows != 1 and nest.along_m(local)
        par_ext = tuple(axes[a].size.eval(self.env) for a in nest.par) if rows_lead else (1,) * len(nest.par)
        inv = tuple(int(i) for i in np.argsort(nest.par + nest.red))
        keep = tuple(slice(None) if any(a == b and r != 1 for b, r in zip(own.axis, own.repeats)) else slice(0, 1)
                     for a in range(len(axes)))
        return par_ext, inv, keep, tuple(r.eval(self.env) for r in own.repeats)

    def scatter(self, spec, buf: np.ndarray) -> np.ndarray:
        par_ext, inv, keep, shape = spec
        arr = buf.reshape(par_ext + buf.shape[self.nlead:]).transpose(inv)[keep]
        return np.ascontiguousarray(arr).reshape(shape)

    def tile_shape(self, t, rows: int) -> tuple[int, ...]:
        """(rows or 1, reduce extents...); with the parallel axes kept (nlead > 1), all rows are
        lead_shape and one row is k ones."""
        ext = dict(zip(t.axis, t.repeats))
        red = tuple(ext[a].eval(self.env) for a in self.nest.red)
        if self.nlead > 1:
            return (self.lead_shape if rows != 1 and self.nest.along_m(t) else self.ones) + red
        return (rows if self.nest.along_m(t) else 1,) + red

    # -- one node: a step, prepared once per launch --------------------------------------------------------
    def step(self, n: AscNode, slot: dict):
        """The node as a function of (values, lo, hi): what it reads, computes and where its result goes."""
        kind, dst, dt = n.ir.kind, slot[id(n)], np.dtype(n.y.dtype)
        src = [slot[id(s)] for s, _ in n.inputs]
        if kind == ascir.LOAD:
            gm = src[0]
            if self.one_pass:   # all rows at once: the gathered input itself (every step makes new arrays, none
                def load_all(v, lo, hi):   # writes into its operands, as the unfused kernels on device memory)
                    v[dst] = v[gm]
                return load_all
            if self.lead[gm] == 1:
                def load_row(v, lo, hi):
                    v[dst] = v[gm].copy()                                    # MTE2: GM -> UB
                return load_row

            def load(v, lo, hi):
                v[dst] = v[gm][lo:hi].copy()                                 # MTE2: GM -> UB
            return load
        if kind == ascir.STORE:
            x = src[0]
            # one pass: no copy into a zeroed buffer when the stored value is this store's alone (another
            # Store of the same value would make two outputs share memory)
            alone = sum(1 for m in self.impl.nodes if m.ir.kind == ascir.STORE and m.inputs[0][0] is n.inputs[0][0]) == 1
            if self.one_pass and alone:
                full = next(shape for d, shape, _, _ in self.stores if d == dst)

                def store_all(v, lo, hi):   # a fresh result of the output's shape and dtype is the output itself
                    y = v[x]
                    if y.base is None and y.shape == full and y.dtype == dt:
                        v[dst] = y
                    else:
                        v[dst][...] = y
                return store_all
            if self.store_rows[dst] == 1:
                def store_row(v, lo, hi):
                    v[dst][...] = v[x]
                return store_row

            def store(v, lo, hi):
                v[dst][lo:hi] = v[x]                                         # MTE3: UB -> GM
            return store
        if kind == ascir.SCALAR:
            text = n.attrs["value"]
            value = np.asarray(float(text) if dt.kind == "f" else int(float(text)), dt)

            def scalar(v, lo, hi):
                v[dst] = value
            return scalar
        if kind == ascir.BROADCAST:
            x, rest = src[0], self.tile_shape(n.y, 1)[self.nlead:]
            lead = self.nest.along_m(n.y)
            if self.nlead > 1:      # one pass, parallel axes kept
                shape = (self.lead_shape if lead else self.ones) + rest

                def broadcast_all(v, lo, hi):
                    v[dst] = np.broadcast_to(v[x], shape)
                return broadcast_all

            def broadcast(v, lo, hi):
                v[dst] = np.broadcast_to(v[x], ((hi - lo) if lead else 1,) + rest)
            return broadcast
        if kind == ascir.CAST:
            x = src[0]

            def cast(v, lo, hi):
                v[dst] = v[x].astype(dt)
            return cast
        if kind == ascir.REDUCE:
            return self.reduce_step(n, src[0], dst, dt)
        fn = np.where if n.type == "Where" else _fn(n.ir)
        if n.ir.with_attrs:
            attrs = dict(n.attrs)

            def unary_attrs(v, lo, hi):
                v[dst] = np.asarray(fn(v[src[0]], attrs)).astype(dt, copy=False)
            return unary_attrs
        if len(src) == 1:
            x = src[0]

            def unary(v, lo, hi):
                v[dst] = np.asarray(fn(v[x])).astype(dt, copy=False)
            return unary
        if len(src) == 2:
            a, b = src

            def binary(v, lo, hi):
                v[dst] = np.asarray(fn(v[a], v[b])).astype(dt, copy=False)
            return binary

        def nary(v, lo, hi):
            v[dst] = np.asarray(fn(*(v[i] for i in src))).astype(dt, copy=False)
        return nary

    def reduce_step(self, n: AscNode, x: int, dst: int, dt):
        """The reduced axes moved last and flattened, reduced as one contiguous row (pairwise)."""
        t_in, t_out = n.input_attr(0), n.y
        red = self.nest.red
        k = self.nlead
        axes = [k + red.index(a) for a, ri, ro in zip(t_in.axis, t_in.repeats, t_out.repeats) if ri != ro]
        if not axes:
            raise OpError(f"node {n.name} reduces no axis")
        fn, rest = _fn(n.ir), self.tile_shape(t_out, 1)[k:]
        lead = self.nest.along_m(t_out)
        all_rows = (self.lead_shape if lead else self.ones) + rest if k > 1 else None

        def reduce(v, lo, hi):
            a = v[x]
            keep = [d for d in range(a.ndim) if d not in axes]
            flat = np.ascontiguousarray(a.transpose(keep + axes)).reshape(
                [a.shape[d] for d in keep] + [math.prod(a.shape[d] for d in axes)])   # -1 fails on 0 rows
            y = fn(flat, (flat.ndim - 1,), True)
            v[dst] = np.asarray(y).astype(dt, copy=False).reshape(
                all_rows if all_rows is not None else ((hi - lo) if lead else 1,) + rest)
        return reduce


_FNS: dict[str, object] = {}


def _fn(ir: ascir.IrDef):
    """An AscIR type's numpy function, resolved once."""
    f = _FNS.get(ir.name)
    if f is None:
        f = _FNS[ir.name] = ir.fn
    return f


_BY_ID: dict[int, tuple[object, object, "AscKernel"]] = {}
_BY_CONTENT: dict[tuple[bytes, bytes], "AscKernel"] = {}


def content(g) -> bytes:
    """A graph's bytes without its name: what its kernel binary depends on (equal structure, one kernel)."""
    gd = ge.GraphDef()
    gd.CopyFrom(g if isinstance(g, ge.GraphDef) else g.to_graph_def())
    gd.ClearField("name")
    return gd.SerializeToString(deterministic=True)


def kernel_for(hint_attr, impl_attr) -> AscKernel:
    """The checked kernel of an AscBackend's attributes: AscGraph objects (compile time) or the GraphDefs an
    .om holds. Decoded and checked once per distinct graph (a model has many nodes of one structure), looked up
    per attribute object after that (a Program keeps its messages for every launch)."""
    if not all(isinstance(a, (AscGraph, ge.GraphDef)) for a in (hint_attr, impl_attr)):
        raise OpError("attributes ascgraph and ascgraph_impl must be graphs")
    hit = _BY_ID.get(id(hint_attr))
    if hit is not None and hit[0] is hint_attr and hit[1] is impl_attr:
        return hit[2]
    key = (content(hint_attr), content(impl_attr))
    k = _BY_CONTENT.get(key)
    if k is None:
        try:
            hint = hint_attr if isinstance(hint_attr, AscGraph) else from_graph_def(hint_attr)
            impl = impl_attr if isinstance(impl_attr, AscGraph) else from_graph_def(impl_attr)
            k = AscKernel(hint, impl)
        except AscGraphError as exc:
            raise OpError(f"AscGraph: {exc}") from None
        k.digest = hashlib.sha256(key[0] + b"|" + key[1]).hexdigest()[:16]
        if len(_BY_CONTENT) >= 1024:
            _BY_CONTENT.clear()
        _BY_CONTENT[key] = k
    if len(_BY_ID) >= 4096:
        _BY_ID.clear()
    _BY_ID[id(hint_attr)] = (hint_attr, impl_attr, k)
    return k
