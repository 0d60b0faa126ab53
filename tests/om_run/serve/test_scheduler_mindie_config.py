"""Reading a MindIE config.json: fields, MindIE's defaults and checks, errors that name the key and the file."""
from __future__ import annotations

import copy
import json

import pytest

from atc_py.common.errors import AtcError
from om_run.serve.scheduler.mindie_config import load_mindie_config, mindie_config_from_dict

CONFIG = {
    "Version": "1.0.0",
    "BackendConfig": {
        "ModelDeployConfig": {
            "maxSeqLen": 2560,
            "maxInputTokenLen": 2048,
            "truncation": False,
            "ModelConfig": [{
                "modelInstanceType": "Standard",
                "modelName": "qwen2_7b",
                "modelWeightPath": "/data/weights/qwen2-7b",
                "worldSize": 2,
                "cpuMemSize": 5,
                "npuMemSize": -1,
                "backendType": "atb",
                "plugin_params": "{\"plugin_type\":\"prefix_cache\"}",
            }],
        },
        "ScheduleConfig": {
            "templateType": "Standard",
            "templateName": "Standard_LLM",
            "cacheBlockSize": 128,
            "maxPrefillBatchSize": 50,
            "maxPrefillTokens": 8192,
            "prefillTimeMsPerReq": 150,
            "prefillPolicyType": 0,
            "decodeTimeMsPerReq": 50,
            "decodePolicyType": 0,
            "maxBatchSize": 200,
            "maxIterTimes": 512,
            "maxPreemptCount": 0,
            "supportSelectBatch": False,
            "maxQueueDelayMicroseconds": 5000,
        },
    },
}


def write(tmp_path, data) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=4) if not isinstance(data, str) else data)
    return str(path)


def edited(section: str, key: str, value) -> dict:
    data = copy.deepcopy(CONFIG)
    target = data["BackendConfig"][section] if section != "ModelConfig" else \
        data["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]
    if value is None:
        del target[key]
    else:
        target[key] = value
    return data


def test_reads_the_scheduling_fields(tmp_path):
    cfg = load_mindie_config(write(tmp_path, CONFIG))
    assert (cfg.max_batch_size, cfg.max_prefill_batch_size, cfg.max_prefill_tokens) == (200, 50, 8192)
    assert (cfg.prefill_time_ms_per_req, cfg.decode_time_ms_per_req) == (150, 50)
    assert cfg.support_select_batch is False and cfg.max_queue_delay_us == 5000 and cfg.max_preempt_count == 0
    assert (cfg.cache_block_size, cfg.max_seq_len, cfg.max_input_token_len, cfg.max_iter_times) == (128, 2560, 2048,
                                                                                                     512)
    assert (cfg.npu_mem_size_gb, cfg.cpu_mem_size_gb, cfg.world_size) == (-1, 5, 2)
    assert (cfg.model_name, cfg.model_weight_path) == ("qwen2_7b", "/data/weights/qwen2-7b")
    assert cfg.prefix_cache is True and cfg.splitfuse is False
    assert cfg.max_first_token_wait_ms == 2500 and cfg.input_limit == 2048 and cfg.truncation == 0


def test_zero_max_prefill_batch_size_means_max_batch_size():
    assert mindie_config_from_dict(edited("ScheduleConfig", "maxPrefillBatchSize", 0)).max_prefill_batch_size == 200


def test_missing_key_names_key_and_file(tmp_path):
    path = write(tmp_path, edited("ScheduleConfig", "maxBatchSize", None))
    with pytest.raises(AtcError) as err:
        load_mindie_config(path)
    assert err.value.code == "E10001"
    assert f"BackendConfig.ScheduleConfig.maxBatchSize in {path}" in str(err.value) and "missing" in str(err.value)


def test_missing_section():
    data = copy.deepcopy(CONFIG)
    del data["BackendConfig"]["ModelDeployConfig"]
    with pytest.raises(AtcError, match="BackendConfig.ModelDeployConfig .*section is missing"):
        mindie_config_from_dict(data)


def test_malformed_json_gives_its_line(tmp_path):
    text = json.dumps(CONFIG, indent=4).replace('"maxBatchSize": 200,', '"maxBatchSize": 200,,')
    line = text[:text.index(",,")].count("\n") + 1
    with pytest.raises(AtcError) as err:
        load_mindie_config(write(tmp_path, text))
    assert err.value.code == "E13003" and f"line {line}," in str(err.value)


def test_unreadable_and_empty_files(tmp_path):
    with pytest.raises(AtcError) as err:
        load_mindie_config(str(tmp_path / "nope.json"))
    assert err.value.code == "E13001"
    with pytest.raises(AtcError) as err:
        load_mindie_config(write(tmp_path, ""))
    assert err.value.code == "E13015"


@pytest.mark.parametrize("section, key, value, text", [
    ("ScheduleConfig", "supportSelectBatch", 1, "supportSelectBatch in .* must be true or false"),
    ("ScheduleConfig", "maxBatchSize", 0, r"maxBatchSize .* must be in \[1, 819200\]"),
    ("ScheduleConfig", "maxBatchSize", 12.5, "maxBatchSize .* must be a non-negative integer"),
    ("ScheduleConfig", "cacheBlockSize", 256, r"cacheBlockSize .* must be in \[1, 128\]"),
    ("ScheduleConfig", "maxPreemptCount", 300, r"maxPreemptCount .* must be in \[0, 200\]"),
    ("ScheduleConfig", "maxPrefillBatchSize", 201, r"maxPrefillBatchSize .* must be in \[1, 200\]"),
    ("ScheduleConfig", "maxPrefillTokens", 1024, r"maxPrefillTokens .* must be >= .*maxInputTokenLen \(2048\)"),
    ("ScheduleConfig", "maxQueueDelayMicroseconds", 100, r"must be in \[500, 1000000\]"),
    ("ScheduleConfig", "prefillTimeMsPerReq", 1001, r"prefillTimeMsPerReq .* must be in \[0, 1000\]"),
    ("ScheduleConfig", "templateType", "Split", 'must be "Standard" or "Mix"'),
    ("ModelDeployConfig", "maxSeqLen", 0, r"maxSeqLen .* must be in \[1,"),
    ("ModelConfig", "npuMemSize", 0, "npuMemSize .* must be -1"),
    ("ModelConfig", "worldSize", 0, "worldSize .* must be >= 1"),
    ("ModelConfig", "plugin_params", "{bad", "plugin_params .* must be a JSON object string"),
])
def test_invalid_values(section, key, value, text):
    with pytest.raises(AtcError, match=text):
        mindie_config_from_dict(edited(section, key, value), "/x/config.json")


@pytest.mark.parametrize("ids, text", [
    ([[0]], r"\[0\] has 1 device\(s\), ModelConfig.worldSize is 2"),
    ([[0, 0]], "names a device twice"),
    ([0, 1], "must be a list of lists of device ids"),
])
def test_npu_device_ids_are_one_per_rank(ids, text):
    data = edited("ModelConfig", "worldSize", 2)
    data["BackendConfig"]["npuDeviceIds"] = ids
    with pytest.raises(AtcError, match=text):
        mindie_config_from_dict(data, "/x/config.json")
    data["BackendConfig"]["npuDeviceIds"] = [[4, 5]]
    assert mindie_config_from_dict(data).world_size == 2


def test_swap_needs_host_memory():
    data = edited("ScheduleConfig", "maxPreemptCount", 4)
    data["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]["cpuMemSize"] = 0
    with pytest.raises(AtcError, match="cpuMemSize .* > 0 when maxPreemptCount > 0"):
        mindie_config_from_dict(data)


def test_optional_model_fields_and_truncation():
    data = edited("ModelConfig", "worldSize", None)
    data["BackendConfig"]["ModelDeployConfig"]["truncation"] = True
    cfg = mindie_config_from_dict(data)
    assert cfg.world_size is None and cfg.truncation == -1
    data["BackendConfig"]["ModelDeployConfig"]["ModelConfig"][0]["plugin_params"] = \
        "{\"plugin_type\":\"mtp, splitfuse\"}"
    assert mindie_config_from_dict(data).splitfuse is True
