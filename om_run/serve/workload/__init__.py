"""The requests of a serving benchmark, as the users' benchmark tools describe them: `vllm bench serve`'s random and
ShareGPT datasets timed by its --request-rate / --burstiness, or a recorded trace replayed at its own times
(Vidur's CSV, AISBench's Mooncake JSONL). `build(WorkloadSpec(...))` gives the list the engine serves: sorted by
arrival, ids "0", "1", ... in sending order. Too-long requests are kept: the engine refuses them one by one, as a
server refuses a request over its max_model_len."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..request import Request
from .arrivals import DEFAULT_BURSTINESS, DEFAULT_REQUEST_RATE, check_rate, timed
from .checks import bad_flag, check_seed
from .random_dataset import (
    DEFAULT_INPUT_LEN,
    DEFAULT_OUTPUT_LEN,
    DEFAULT_PREFIX_LEN,
    DEFAULT_RANGE_RATIO,
    random_requests,
)
from .sharegpt import sharegpt_requests
from .traces import read_trace

DATASETS = ("random", "sharegpt")
DEFAULT_NUM_PROMPTS = 1000          # vllm bench serve's --num-prompts


@dataclass(frozen=True)
class WorkloadSpec:
    """The flags of `vllm bench serve` that shape the requests, with its defaults, and --trace. num_prompts None is
    vLLM's 1000 for a dataset and the whole file for a trace; vocab_size None leaves the prompts without token ids."""
    dataset_name: str = "random"
    dataset_path: str | None = None
    num_prompts: int | None = None
    random_input_len: int = DEFAULT_INPUT_LEN
    random_output_len: int = DEFAULT_OUTPUT_LEN
    random_range_ratio: float = DEFAULT_RANGE_RATIO
    random_prefix_len: int = DEFAULT_PREFIX_LEN
    sharegpt_output_len: int | None = None
    request_rate: float = DEFAULT_REQUEST_RATE
    burstiness: float = DEFAULT_BURSTINESS
    seed: int = 0
    trace: str | None = None
    vocab_size: int | None = None


def _replay(spec: WorkloadSpec) -> list[Request]:
    if spec.dataset_name not in ("random", "trace"):
        raise bad_flag("--dataset-name", spec.dataset_name, "--trace replays its own requests; give one or the other")
    if spec.dataset_path is not None:
        raise bad_flag("--dataset-path", spec.dataset_path, "--trace replays its own requests; give one or the other")
    if not (math.isinf(spec.request_rate) and spec.burstiness == DEFAULT_BURSTINESS):
        raise bad_flag("--request-rate", spec.request_rate, "a trace's requests arrive at the trace's times: "
                       "--request-rate and --burstiness time a dataset's requests, not a trace's")
    return read_trace(spec.trace, spec.seed, spec.vocab_size, spec.num_prompts)


def build(spec: WorkloadSpec) -> list[Request]:
    """The requests `spec` describes, sorted by arrival_s, ids "0", "1", ... in the order vLLM sends them."""
    check_seed(spec.seed)
    check_rate(spec.request_rate, spec.burstiness)
    if spec.vocab_size is not None and spec.vocab_size < 1:
        raise bad_flag("vocab_size", spec.vocab_size, "the vocabulary must have at least one token")
    if spec.trace is not None:
        return _replay(spec)
    num = DEFAULT_NUM_PROMPTS if spec.num_prompts is None else spec.num_prompts
    if spec.dataset_name == "random":
        if spec.dataset_path is not None:
            raise bad_flag("--dataset-path", spec.dataset_path, "the random dataset reads no file (vLLM refuses it "
                           "too): name the file's dataset with --dataset-name")
        requests = random_requests(num, spec.random_input_len, spec.random_output_len, spec.random_range_ratio,
                                   spec.random_prefix_len, spec.seed, spec.vocab_size)
    elif spec.dataset_name == "sharegpt":
        if spec.dataset_path is None:
            raise bad_flag("--dataset-path", "", "--dataset-name sharegpt reads a ShareGPT JSON file: name it")
        requests = sharegpt_requests(spec.dataset_path, num, spec.seed, spec.sharegpt_output_len, spec.vocab_size)
    else:
        raise bad_flag("--dataset-name", spec.dataset_name, f"the datasets are {', '.join(DATASETS)} (or --trace)")
    return timed(requests, spec.request_rate, spec.burstiness, spec.seed)
