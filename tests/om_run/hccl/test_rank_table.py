"""HCCL's rank table: the documented format read into ranks (rank id -> server, device), checked against the
topology; every bad table one E10001 naming its problem."""
from __future__ import annotations

import copy
import json

import pytest

from atc_py.common.errors import AtcError
from atc_py.platform import load_topology
from om_run.hccl.algorithms import collective_cost
from om_run.hccl.rank_table import parse_rank_table

A2, DUO = load_topology("atlas-800-a2"), load_topology("atlas-300i-duo")


def table(servers=2, per=2, version="1.0"):
    """The documented example (hicann/hccl rank_table_config_a2.md): numbers as strings."""
    return {"status": "completed", "version": version, "server_count": str(servers), "server_list": [
        {"server_id": f"node_{s}", "device": [
            {"device_id": str(d), "device_ip": f"192.168.{s + 1}.{8 + d}", "device_port": "16667",
             "rank_id": str(s * per + d)} for d in range(per)]} for s in range(servers)]}


def write(tmp_path, data, name="rank_table.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_the_documented_table_reads_into_ranks(tmp_path):
    rt = parse_rank_table(write(tmp_path, table()), A2)
    assert rt.size == 4 and rt.server_ids == ("node_0", "node_1")
    assert [(r.rank_id, r.server_index, r.device_id) for r in rt.ranks] == [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)]
    assert rt.ranks[3].device_ip == "192.168.2.9" and rt.devices_per_server() == 2


def test_integers_version_1_2_and_a_single_server_without_ips(tmp_path):
    data = table(servers=1, per=8, version="1.2")
    for dev in data["server_list"][0]["device"]:
        dev["device_id"], dev["rank_id"] = int(dev["device_id"]), int(dev["rank_id"])
        del dev["device_ip"]
    data["server_count"] = 1
    assert parse_rank_table(write(tmp_path, data), A2).size == 8


def test_a_table_places_the_ranks_of_a_collective(tmp_path):
    rt = parse_rank_table(write(tmp_path, table(servers=2, per=4)), A2)
    across = collective_cost("all_reduce", 1 << 20, range(8), A2, placement=rt, environ={})
    inside = collective_cost("all_reduce", 1 << 20, range(4), A2, placement=rt)
    assert "level1" in across.algorithm and inside.algorithm == "mesh"


def _edit(fn):
    data = table()
    fn(data)
    return data


BAD = {
    "not JSON": ("{not json", "not valid JSON"),
    "not an object": ("[1, 2]", "JSON object"),
    "missing server_list": (_edit(lambda d: d.pop("server_list")), "'server_list' is missing"),
    "not completed": (_edit(lambda d: d.update(status="initializing")), "completed"),
    "version": (_edit(lambda d: d.update(version="2.0")), "version"),
    "server_count": (_edit(lambda d: d.update(server_count="3")), "server_count is 3"),
    "rank repeated": (_edit(lambda d: d["server_list"][1]["device"][0].update(rank_id="1")),
                      "rank_id 1 is given to two"),
    "ranks not 0..N-1": (_edit(lambda d: d["server_list"][1]["device"][1].update(rank_id="7")), "0..3"),
    "device twice": (_edit(lambda d: d["server_list"][0]["device"][1].update(device_id="0")), "named twice"),
    "device the machine lacks": (_edit(lambda d: d["server_list"][0]["device"][1].update(device_id="8")),
                                 "not a chip"),
    "missing rank_id": (_edit(lambda d: d["server_list"][0]["device"][0].pop("rank_id")), "'rank_id' is missing"),
    "negative rank": (_edit(lambda d: d["server_list"][0]["device"][0].update(rank_id="-1")), "non-negative"),
    "bad ip": (_edit(lambda d: d["server_list"][0]["device"][0].update(device_ip="300.1.1.1")), "IPv4"),
    "ip twice": (_edit(lambda d: d["server_list"][0]["device"][1].update(device_ip="192.168.1.8")), "two devices"),
    "no ip across servers": (_edit(lambda d: d["server_list"][0]["device"][0].pop("device_ip")), "mandatory"),
    "server twice": (_edit(lambda d: d["server_list"][1].update(server_id="node_0")), "named twice"),
    "interleaved": (_edit(lambda d: (d["server_list"][0]["device"][1].update(rank_id="2"),
                                     d["server_list"][1]["device"][0].update(rank_id="1"))), "interleaved"),
    "empty device list": (_edit(lambda d: d["server_list"][0].update(device=[])), "non-empty 'device'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_table_is_one_clear_error(tmp_path, case):
    data, phrase = BAD[case]
    with pytest.raises(AtcError) as e:
        parse_rank_table(write(tmp_path, data), A2)
    assert e.value.code == "E10001" and "--rank-table" in str(e.value) and phrase in str(e.value), str(e.value)


def test_more_devices_than_a_server_has(tmp_path):
    data = table(servers=1, per=8)
    data["server_count"] = "1"
    extra = copy.deepcopy(data["server_list"][0]["device"][0])
    extra.update(device_id="0", rank_id="8", device_ip="10.0.0.1")
    data["server_list"][0]["device"].append(extra)
    with pytest.raises(AtcError, match="lists 9 devices"):
        parse_rank_table(write(tmp_path, data), A2)


def test_inference_cards_take_one_server(tmp_path):
    with pytest.raises(AtcError, match="at most 1"):
        parse_rank_table(write(tmp_path, table()), DUO)


def test_a_missing_file_and_a_directory(tmp_path):
    for path in (str(tmp_path / "nope.json"), str(tmp_path)):
        with pytest.raises(AtcError) as e:
            parse_rank_table(path, A2)
        assert e.value.code == "E10001"
