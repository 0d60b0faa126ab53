"""HCCL's rank table (RANK_TABLE_FILE): which rank is which device of which server, every field checked.

The documented format (hicann/hccl docs/en/user_guide/cluster_info_config/rank_table_config_a2.md and
rank_table_config_300i_duo.md): {"status": "completed", "version": "1.0", "server_count": "2", "server_list":
[{"server_id": "node_0", "device": [{"device_id": "0", "device_ip": "192.168.1.8", "rank_id": "0"}, ...]}, ...]}.
Version "1.2" (A3 SuperPoDs) has the same server_list; its super_pod_list is not needed here and not read. Numbers
may be JSON strings (as documented) or integers. A table is checked against the topology it runs on: device ids the
machine has, no more devices per server than its chips, no more servers than HCCL reaches.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from atc_py.common.errors import AtcError
from atc_py.common.userfiles import read_json
from atc_py.platform.topology import Topology

PARAMETER = "--rank-table"
VERSIONS = ("1.0", "1.2")
MAX_BYTES = 16 << 20


@dataclass(frozen=True)
class Rank:
    rank_id: int
    server_index: int        # position of its server in server_list
    server_id: str
    device_id: int
    device_ip: str


@dataclass(frozen=True)
class RankTable:
    version: str
    server_ids: tuple[str, ...]
    ranks: tuple[Rank, ...]  # by rank id

    @property
    def size(self) -> int:
        return len(self.ranks)

    def devices_per_server(self) -> int:
        return max(sum(1 for r in self.ranks if r.server_index == s) for s in range(len(self.server_ids)))


def dense_placement(n_ranks: int, topology: Topology) -> RankTable:
    """Ranks 0..n-1 filling servers in order, devices 0..chips-1 (what hccl_test's -p gives on one server)."""
    per = topology.chips_per_server
    servers = -(-n_ranks // per)
    ranks = tuple(Rank(r, r // per, f"server{r // per}", r % per, "") for r in range(n_ranks))
    return RankTable("1.0", tuple(f"server{s}" for s in range(servers)), ranks)


def _int(value, what: str, fail) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise fail(f"{what} must be an integer (or a string of digits), not {value!r}")
    text = str(value).strip()
    if not text.isdigit() or len(text) > 9:
        raise fail(f"{what} must be a non-negative integer, not {value!r}")
    return int(text)


def parse_rank_table(path: str, topology: Topology) -> RankTable:
    """The checked rank table in `path`; one E10001 naming the first problem otherwise."""
    def fail(reason: str) -> AtcError:
        return AtcError("E10001", value=path, parameter=PARAMETER, reason=reason)

    data = read_json(path, fail, MAX_BYTES)
    return rank_table_from_json(data, topology, fail)


def rank_table_from_json(data, topology: Topology, fail) -> RankTable:
    if not isinstance(data, dict):
        raise fail("the rank table must be a JSON object")
    for key in ("status", "version", "server_count", "server_list"):
        if key not in data:
            raise fail(f"'{key}' is missing (status, version, server_count and server_list are mandatory)")
    if data["status"] != "completed":
        raise fail(f"status is {data['status']!r}: HCCL uses a rank table only once its status is \"completed\"")
    version = str(data["version"])
    if version not in VERSIONS:
        raise fail(f"version {data['version']!r} is not one of {', '.join(VERSIONS)}")
    servers = data["server_list"]
    if not isinstance(servers, list) or not servers:
        raise fail("server_list must be a non-empty list of servers")
    count = _int(data["server_count"], "server_count", fail)
    if count != len(servers):
        raise fail(f"server_count is {count} but server_list has {len(servers)} server(s)")
    if topology.max_servers and count > topology.max_servers:
        raise fail(f"{count} servers, but on {topology.name} HCCL reaches at most {topology.max_servers} "
                   f"({topology.figures['max_servers'].source})")
    ranks: list[Rank] = []
    server_ids: list[str] = []
    ips: set[str] = set()
    for s, server in enumerate(servers):
        where = f"server_list[{s}]"
        if not isinstance(server, dict):
            raise fail(f"{where} must be an object")
        sid = server.get("server_id")
        if not isinstance(sid, str) or not sid or len(sid) > 64:
            raise fail(f"{where}.server_id must be a string of 1 to 64 characters")
        if sid in server_ids:
            raise fail(f"server_id {sid!r} is named twice")
        server_ids.append(sid)
        devices = server.get("device")
        if not isinstance(devices, list) or not devices:
            raise fail(f"{where} ({sid}) needs a non-empty 'device' list")
        if len(devices) > topology.chips_per_server:
            raise fail(f"server {sid} lists {len(devices)} devices, but one {topology.name} server has "
                       f"{topology.chips_per_server} chips")
        seen_devices: set[int] = set()
        for d, dev in enumerate(devices):
            at = f"{where}.device[{d}]"
            if not isinstance(dev, dict):
                raise fail(f"{at} must be an object")
            for key in ("device_id", "rank_id"):
                if key not in dev:
                    raise fail(f"{at}: '{key}' is missing")
            device_id = _int(dev["device_id"], f"{at}.device_id", fail)
            if device_id >= topology.chips_per_server:
                raise fail(f"{at}: device_id {device_id} is not a chip of one {topology.name} server "
                           f"(0..{topology.chips_per_server - 1})")
            if device_id in seen_devices:
                raise fail(f"device {device_id} of server {sid} is named twice")
            seen_devices.add(device_id)
            ip = dev.get("device_ip", "")
            if ip != "":
                try:
                    ip = str(ipaddress.ip_address(ip))
                except ValueError:
                    raise fail(f"{at}: device_ip {ip!r} is not an IPv4 or IPv6 address") from None
                if ip in ips:
                    raise fail(f"device_ip {ip} is given to two devices")
                ips.add(ip)
            elif len(servers) > 1:
                raise fail(f"{at}: device_ip is mandatory when the table has several servers")
            ranks.append(Rank(_int(dev["rank_id"], f"{at}.rank_id", fail), s, sid, device_id, ip))
    ids = sorted(r.rank_id for r in ranks)
    if len(set(ids)) != len(ids):
        dup = next(a for a, b in zip(ids, ids[1:]) if a == b)
        raise fail(f"rank_id {dup} is given to two devices")
    if ids != list(range(len(ids))):
        raise fail(f"rank ids must be 0..{len(ids) - 1}, each once; missing: "
                   f"{sorted(set(range(len(ids))) - set(ids))[:5]}")
    for s, sid in enumerate(server_ids):
        own = sorted(r.rank_id for r in ranks if r.server_index == s)
        if own != list(range(own[0], own[0] + len(own))):
            raise fail(f"the ranks of server {sid} ({own[:8]}) are not consecutive: HCCL does not support rank ids "
                       "interleaved across servers")
    return RankTable(version, tuple(server_ids), tuple(sorted(ranks, key=lambda r: r.rank_id)))
