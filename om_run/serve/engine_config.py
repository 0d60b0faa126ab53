"""The engine a run simulates, from its own settings: vllm serve's flags (VllmSettings, vLLM's defaults and checks)
or MindIE's config.json; the KV cache's blocks from the SoC's memory; eager or graph mode and its capture sizes."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, is_dataclass

from atc_py.common.errors import AtcError
from atc_py.platform.soc import load_soc

from .build import BuildSpec
from .hf_config import DecoderConfig
from .kv_memory import GIB, KvBudget, kv_budget
from .tensor_parallel import shard

NUMERICS_CACHE_BYTES = 1 << 30    # --load-format auto keeps the KV cache in host arrays: at most this much


# vLLM's default graph capture sizes (1, 2, 4, then every 8 up to max_num_seqs; vllm config.py
# _set_cudagraph_sizes, which vllm-ascend's ACLGraph follows)
def capture_sizes(max_seqs: int) -> list[int]:
    return [n for n in [1, 2, 4] + list(range(8, max_seqs + 1, 8)) if n <= max_seqs]


@dataclass
class EngineConfig:
    engine: str                       # vllm | mindie
    scheduler_settings: object        # VllmSettings (resolved) or MindieConfig
    soc_version: str
    tiling_sink: bool
    block_size: int
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    num_blocks: int
    prefix_caching: bool
    graph_mode: bool
    budget: KvBudget | None = None
    capture_sizes: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    num_cpu_blocks: int | None = None     # MindIE's swap space (cpuMemSize)
    tp: int = 1                           # tensor-parallel ranks (--tensor-parallel-size / worldSize)
    topology: object = None               # their machine (atc_py/platform/topology.py), tp > 1
    host: object = None                   # vLLM: the host software its eager steps dispatch through (HostSoftware)
    profile: object = None                # the simulator's RuntimeProfile (--sim-config); None: the defaults

    @property
    def async_output(self) -> bool:
        """vLLM's V0 engine processes a step's output while the next step runs (its async output processor);
        V1 hands outputs to its front-end process at the step's end, MindIE at the step's end."""
        return self.engine == "vllm" and getattr(self.scheduler_settings, "scheduler", "") == "v0"

    @property
    def frontend_output(self) -> bool:
        """vLLM's V1 engine: its API server process detokenises the outputs, apart from the engine core."""
        return self.engine == "vllm" and getattr(self.scheduler_settings, "scheduler", "") == "v1"

    def lines(self) -> list[str]:
        mode = f"graph mode ({len(self.capture_sizes)} captured decode batches up to {self.capture_sizes[-1]})" \
            if self.graph_mode and self.capture_sizes else "eager mode"
        where = f"{self.tp} x {self.soc_version} (tensor parallel on {self.topology.product}, " \
                f"{self.topology.intra_link.name})" if self.tp > 1 else self.soc_version
        out = [f"{self.engine} on {where}: {mode}, tiling sink {'on' if self.tiling_sink else 'off'}, "
               f"max {self.max_num_seqs} sequences / {self.max_num_batched_tokens} tokens per step, max model len "
               f"{self.max_model_len}, block size {self.block_size}, prefix caching "
               f"{'on' if self.prefix_caching else 'off'}"]
        if self.host is not None and not (self.graph_mode and self.capture_sizes):
            out.append(f"host: {self.host.name}, {self.host.dispatch_ns / 1000:g} us to dispatch each eager op, "
                       f"TASK_QUEUE_ENABLE={self.host.task_queue}")
        if self.budget is not None:
            out += self.budget.lines()
        else:
            out.append(f"{self.num_blocks} KV blocks")
        return out + self.notes

    def build_spec(self, num_blocks: int = 0) -> BuildSpec:
        """What the compiled decoder depends on (num_blocks 0: the pricing graphs' own cache size)."""
        return BuildSpec(self.soc_version, self.tiling_sink, self.block_size, self.max_model_len,
                         self.max_num_batched_tokens, self.max_num_seqs, num_blocks=num_blocks, tp=self.tp)

    def settings_dict(self) -> dict:
        s = self.scheduler_settings
        base = asdict(s) if is_dataclass(s) else {}
        return {**base, "soc_version": self.soc_version, "tiling_schedule_optimize": int(self.tiling_sink),
                "num_kv_blocks": self.num_blocks, "graph_mode": self.graph_mode, "tensor_parallel_size": self.tp,
                **({"host": self.host.name, "host_dispatch_us": self.host.dispatch_ns / 1000,
                    "task_queue_enable": self.host.task_queue} if self.host else {})}


def _vllm(flags: dict, cfg: DecoderConfig, device_bytes: int) -> EngineConfig:
    from .scheduler.vllm_settings import VllmSettings, check_kv_capacity
    mml = flags["max_model_len"] or cfg.max_position_embeddings
    if mml > cfg.max_position_embeddings:
        raise AtcError("E10001", value=mml, parameter="--max-model-len",
                       reason=f"larger than the model's max_position_embeddings ({cfg.max_position_embeddings})")
    s = VllmSettings(scheduler=flags["scheduler_version"], max_model_len=mml, max_num_seqs=flags["max_num_seqs"],
                     max_num_batched_tokens=flags["max_num_batched_tokens"], block_size=flags["block_size"],
                     enable_chunked_prefill=flags["enable_chunked_prefill"],
                     enable_prefix_caching=flags["enable_prefix_caching"],
                     gpu_memory_utilization=flags["gpu_memory_utilization"], enforce_eager=flags["enforce_eager"])
    s = s.resolved()
    tp = flags.get("tensor_parallel_size", 1)
    sh = shard(cfg, tp)
    budget = kv_budget(cfg, device_bytes, s.gpu_memory_utilization, s.block_size, s.max_num_batched_tokens,
                       s.max_num_seqs, s.max_model_len, tp)
    blocks = budget.num_blocks
    notes = []
    if flags.get("num_gpu_blocks_override") is not None:      # vLLM's --num-gpu-blocks-override
        if flags["num_gpu_blocks_override"] < 1:
            raise AtcError("E10001", value=flags["num_gpu_blocks_override"], parameter="--num-gpu-blocks-override",
                           reason="must be >= 1")
        blocks = flags["num_gpu_blocks_override"]
        budget = None
    if flags.get("load_format") == "auto":
        cap = NUMERICS_CACHE_BYTES // (s.block_size * sh.kv_bytes_per_token() * tp)
        if blocks > cap:
            blocks = max(cap, 1)
            budget = None
            notes.append(f"numerics: the KV cache is held in host memory, {blocks} blocks "
                         f"({NUMERICS_CACHE_BYTES >> 20} MiB) instead of what the device's memory gives")
    check_kv_capacity(s, blocks)
    # vllm-ascend v0.7.3 (the V0 engine) runs Llama / Qwen eager only: its graph mode (torchair) served DeepSeek
    graph = not s.enforce_eager and s.scheduler == "v1"
    if not s.enforce_eager and s.scheduler == "v0":
        notes.append("vllm-ascend v0.7.3 (V0) has no graph mode for these models: the steps run eager")
    sink = flags["tiling_sink"] == "1"
    if sink and not graph:
        notes.append("--tiling_schedule_optimize=1 acts on captured graphs only: eager steps tile on the host")
    return EngineConfig("vllm", s, flags["soc_version"], sink, s.block_size, s.max_model_len, s.max_num_batched_tokens,
                        s.max_num_seqs, blocks, s.enable_prefix_caching, graph, budget,
                        capture_sizes(s.max_num_seqs) if graph else [], notes, tp=tp, host=_host(flags))


def _host(flags: dict):
    from .host_costs import MAX_DISPATCH_US, host_software
    us = flags.get("host_dispatch_us")
    if us is not None and not 0 <= us <= MAX_DISPATCH_US:
        raise AtcError("E10001", value=us, parameter="--host-dispatch-us",
                       reason=f"must be a time in microseconds in [0, {MAX_DISPATCH_US:g}]")
    return host_software(bool(flags.get("mindie_turbo")), us)


def _mindie(flags: dict, cfg: DecoderConfig, device_bytes: int) -> EngineConfig:
    from .scheduler.mindie_config import load_mindie_config
    if not flags["mindie_config"]:
        raise AtcError("E10001", value="", parameter="--mindie-config",
                       reason="--engine mindie reads MindIE's config.json: give its path")
    m = load_mindie_config(flags["mindie_config"])
    tp = m.world_size or 1
    sh = shard(cfg, tp, "ModelConfig.worldSize")
    mml = m.max_seq_len
    block = m.cache_block_size
    max_tokens = max(m.max_prefill_tokens, m.max_batch_size)
    if m.npu_mem_size_gb > 0:                      # MindIE: the KV cache's GB per NPU
        blocks = int(m.npu_mem_size_gb * GIB) // (block * sh.kv_bytes_per_token())
        budget = None
    else:                                          # -1: what the memory leaves (as vLLM sizes it, at 0.9)
        budget = kv_budget(cfg, device_bytes, 0.9, block, max_tokens, m.max_batch_size, mml, tp)
        blocks = budget.num_blocks
    if blocks * block < mml:
        raise AtcError("E10001", value=m.npu_mem_size_gb, parameter="ModelConfig.npuMemSize",
                       reason=f"{blocks} KV blocks of {block} tokens cannot hold one sequence of maxSeqLen {mml}")
    # MindIE runs ATB graphs (its operations' graph mode); every step is one launch of the layer graphs, priced
    # by the dynamic-shape decoder with ATB's caches (no framework dispatch)
    return EngineConfig("mindie", m, flags["soc_version"], flags["tiling_sink"] == "1", block, mml, max_tokens,
                        m.max_batch_size, blocks, m.prefix_cache, False, budget, [], [],
                        num_cpu_blocks=int(m.cpu_mem_size_gb * GIB) // (block * sh.kv_bytes_per_token()), tp=tp)


def engine_config(flags: dict, cfg: DecoderConfig) -> EngineConfig:
    soc = load_soc(flags["soc_version"])
    device = soc.memory_size
    if not device:
        raise AtcError("E10001", value=flags["soc_version"], parameter="--soc_version",
                       reason="the SoC's data has no memory size to size the KV cache from")
    from ..sim.profile import RuntimeProfile
    profile = RuntimeProfile.load(flags.get("sim_config"))      # a bad file fails before anything is built
    eng = _vllm(flags, cfg, device) if flags["engine"] == "vllm" else _mindie(flags, cfg, device)
    eng.profile = profile
    if eng.tp > 1:
        eng.topology = tp_machine(flags, eng)
    return eng


def tp_machine(flags: dict, eng: EngineConfig):
    """The machine the tp ranks run on: --topology, else the SoC's product (an Atlas 800 A2 for 910B, an Atlas 300I
    Duo for 310P); all ranks in one server, as vLLM and MindIE place a tensor-parallel group."""
    from atc_py.platform.topology import load_topology, topology_for_soc
    flag = "--tensor-parallel-size" if eng.engine == "vllm" else "ModelConfig.worldSize"
    topo = load_topology(flags["topology"]) if flags.get("topology") else topology_for_soc(eng.soc_version)
    if topo.soc_version.rstrip("0123456789") != eng.soc_version.rstrip("0123456789"):
        raise AtcError("E10001", value=flags.get("topology"), parameter="--topology",
                       reason=f"its devices are {topo.soc_version}, the model runs on {eng.soc_version}")
    if eng.tp > topo.chips_per_server:
        raise AtcError("E10001", value=eng.tp, parameter=flag,
                       reason=f"{topo.product} ({topo.name}) has {topo.chips_per_server} NPUs: a tensor-parallel "
                              f"group of {eng.tp} does not fit it")
    if flags.get("link_calibration"):
        from ..hccl.calibration import load_link_calibration
        topo = topo.with_link_params(load_link_calibration(flags["link_calibration"], topo))
    return topo
