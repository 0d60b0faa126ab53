"""A collective's cost: each of HCCL's cost formulas on a hand-worked case (the figures come from the preset, the
formula from HCCL's tables), the algorithm HCCL picks for the topology, HCCL_ALGO between servers, op names."""
from __future__ import annotations

import pytest

from atc_py.common.errors import AtcError
from atc_py.platform import load_topology
from om_run.hccl.algorithms import collective_cost
from om_run.hccl.rank_table import dense_placement

A2, DUO, PRO = (load_topology(n) for n in ("atlas-800-a2", "atlas-300i-duo", "atlas-300i-pro"))
N = 3 << 20


def figures(link):
    return link.latency_ns.value, 1 / link.bandwidth_gbps.value, 1 / link.reduce_gbps.value


def test_ring_all_reduce_is_2_p_minus_1_steps_of_n_over_p():
    a, b, g = figures(PRO.intra_link)
    for p in (2, 3, 8):
        c = collective_cost("all_reduce", N, range(p), PRO)
        assert c.algorithm == "ring" and c.steps == 2 * (p - 1)
        assert c.bytes_on_busiest_link == pytest.approx(2 * (p - 1) * N / p)
        assert c.ns == pytest.approx(2 * (p - 1) * a + 2 * (p - 1) / p * N * b + (p - 1) / p * N * g)


def test_ring_all_gather_reduce_scatter_broadcast_and_pairwise_all_to_all():
    a, b, g = figures(DUO.intra_link)
    p = 4
    assert collective_cost("all_gather", N, range(p), DUO).ns == pytest.approx((p - 1) * (a + N / p * b))
    assert collective_cost("reduce_scatter", N, range(p), DUO).ns == pytest.approx((p - 1) * (a + N / p * (b + g)))
    assert collective_cost("broadcast", N, range(p), DUO).ns == pytest.approx((p - 1) * (a + N * b))
    c = collective_cost("all_to_all", N, range(p), DUO)
    assert c.algorithm == "pairwise" and c.ns == pytest.approx((p - 1) * (a + N / p * b))


def test_mesh_formulas_on_the_hccs_server():
    a, b, g = figures(A2.intra_link)
    p = 8
    ar = collective_cost("all_reduce", N, range(p), A2)
    assert ar.algorithm == "mesh" and ar.steps == 2
    assert ar.ns == pytest.approx(2 * a + 2 / p * N * b + (p - 1) / p * N * g)
    assert collective_cost("reduce_scatter", N, range(p), A2).ns == pytest.approx(a + N / p * b + (p - 1) / p * N * g)
    assert collective_cost("all_gather", N, range(p), A2).ns == pytest.approx(a + N / p * b)
    assert collective_cost("broadcast", N, range(p), A2).ns == pytest.approx(2 * a + 2 / p * N * b)
    assert collective_cost("all_to_all", N, range(p), A2).ns == pytest.approx(a + N / p * b)


def test_mesh_on_a_full_mesh_ring_on_pcie_and_overrides():
    assert collective_cost("all_reduce", N, range(8), A2).algorithm == "mesh"
    assert collective_cost("all_reduce", N, range(8), DUO).algorithm == "ring"
    ring_on_a2 = collective_cost("all_reduce", N, range(8), A2, algo="ring")
    assert ring_on_a2.algorithm == "ring" and ring_on_a2.ns > collective_cost("all_reduce", N, range(8), A2).ns
    with pytest.raises(AtcError, match="Mesh needs every pair"):
        collective_cost("all_reduce", N, range(2), DUO, algo="mesh")
    with pytest.raises(AtcError, match="rooted"):
        collective_cost("all_reduce", N, range(2), DUO, algo="star")


def test_star_broadcast_shares_the_roots_pcie_link():
    a, b, _ = figures(PRO.intra_link)
    assert collective_cost("broadcast", N, range(4), PRO, algo="star").ns == pytest.approx(a + 3 * N * b)
    a, b, _ = figures(A2.intra_link)
    assert collective_cost("broadcast", N, range(4), A2, algo="star").ns == pytest.approx(a + N * b)


def test_send_uses_the_link_between_the_two_chips():
    inside = collective_cost("HcomSend", N, [0, 5], A2)
    across = collective_cost("HcomSend", N, [0, 9], A2)
    assert inside.phases[0].link == "hccs-910b" and across.phases[0].link == "roce-910b"
    a, b, _ = figures(A2.inter_link)
    assert across.ns == pytest.approx(a + N * b)
    with pytest.raises(AtcError, match="two ranks"):
        collective_cost("send", N, [0, 1, 2], A2)


def test_one_rank_or_no_data_costs_nothing():
    assert collective_cost("all_reduce", N, [3], A2).ns == 0
    assert collective_cost("all_gather", 0, range(8), A2).ns == 0


def test_op_names_from_ge_hccl_test_and_hccl_price_alike():
    costs = {collective_cost(name, N, range(8), A2).ns for name in ("HcomAllReduce", "all_reduce_test", "all_reduce",
                                                                   "HcclAllReduce")}
    assert len(costs) == 1
    assert collective_cost("alltoall_test", N, range(8), A2).op == "all_to_all"
    with pytest.raises(AtcError) as e:
        collective_cost("HcomReduce", N, range(8), A2)
    assert e.value.code == "E10001"


def test_across_servers_hccl_goes_by_its_hierarchy_and_picks_rhd_for_two_servers():
    c = collective_cost("all_reduce", N, range(16), A2, environ={})
    assert [p.name for p in c.phases] == ["intra reduce-scatter", "inter all-reduce", "intra all-gather"]
    assert c.phases[1].algorithm == "rhd" and c.phases[1].link == "roce-910b"
    a, b, g = figures(A2.inter_link)
    m = N / 8          # each rank's share after the intra reduce-scatter; 2 servers: log2(2) = 1
    assert c.phases[1].ns == pytest.approx(2 * a + 2 * (1 / 2) * m * b + (1 / 2) * m * g)
    three = collective_cost("all_reduce", N, range(24), A2, environ={})
    assert three.phases[1].algorithm == "ring"        # 3 servers: not a power of two


def test_rhd_on_a_non_power_of_two_adds_the_fold_steps():
    c = collective_cost("all_reduce", N, range(24), A2, environ={"HCCL_ALGO": "level0:NA;level1:H-D_R"})
    k, qp = 1, 2          # 3 servers: k = floor(log2 3), p' = 2**k
    assert c.phases[1].algorithm == "rhd" and c.phases[1].steps == 2 * k + 2
    assert c.phases[1].link_bytes == pytest.approx((2 * (qp - 1) / qp + 2) * N / 8)


def test_hccl_algo_chooses_level1_only():
    ring = collective_cost("all_reduce", N, range(16), A2, environ={"HCCL_ALGO": "level0:NA;level1:ring"})
    nhr = collective_cost("all_reduce", N, range(16), A2, environ={"HCCL_ALGO": "level0:NA;level1:NHR"})
    assert ring.phases[1].algorithm == "ring" and nhr.phases[1].algorithm == "nhr"
    assert ring.phases[0].algorithm == nhr.phases[0].algorithm == "mesh"
    one_server = collective_cost("all_reduce", N, range(8), A2, environ={"HCCL_ALGO": "level0:NA;level1:ring"})
    assert one_server.algorithm == "mesh"


def test_hccl_algo_per_operator_form():
    env = {"HCCL_ALGO": "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:NHR"}
    assert collective_cost("all_reduce", N, range(16), A2, environ=env).phases[1].algorithm == "ring"
    assert collective_cost("all_gather", N, range(16), A2, environ=env).phases[1].algorithm == "nhr"
    assert collective_cost("reduce_scatter", N, range(16), A2, environ=env).phases[0].algorithm == "rhd"


def test_hccl_algo_not_priced_falls_back_with_a_note():
    c = collective_cost("all_reduce", N, range(16), A2, environ={"HCCL_ALGO": "level0:NA;level1:pipeline"})
    assert c.phases[1].algorithm == "rhd" and "pipeline" in c.notes[0]


@pytest.mark.parametrize("value", ["level0:ring;level1:ring", "level1:fast", "level1", "allreduce=level1:ring/x=y",
                                   "level3:ring"])
def test_a_malformed_hccl_algo_is_one_error(value):
    with pytest.raises(AtcError) as e:
        collective_cost("all_reduce", N, range(16), A2, environ={"HCCL_ALGO": value})
    assert e.value.code == "E10001" and "HCCL_ALGO" in str(e.value)


def test_hccl_algo_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("HCCL_ALGO", "level0:NA;level1:ring")
    assert collective_cost("all_reduce", N, range(16), A2).phases[1].algorithm == "ring"


def test_inference_cards_have_no_inter_server_path():
    with pytest.raises(AtcError, match="no inter-server"):
        collective_cost("all_reduce", N, range(16), DUO, placement=dense_placement(16, DUO))


@pytest.mark.parametrize("group", [[], [1, 1], [-1, 0]])
def test_a_bad_group_is_refused(group):
    with pytest.raises(AtcError) as e:
        collective_cost("all_reduce", N, group, A2)
    assert e.value.code == "E10001"


def test_a_310p3_all_reduce_the_sdma_engine_reduces_is_log2_p_steps_of_the_whole_buffer():
    # hicann/hccl: Doubling for <= 256 KB over a power-of-two group of <= 8 (and always for two ranks on a Duo card),
    # each step reading the partner's whole buffer with the SDMA engine reducing inline
    a, b, _ = figures(DUO.intra_link)
    small = 64 << 10
    for p, topo in ((2, DUO), (4, DUO), (8, PRO), (2, PRO)):
        c = collective_cost("all_reduce", small, range(p), topo)
        k = {2: 1, 4: 2, 8: 3}[p]
        assert c.algorithm == "doubling" and c.steps == k and c.reduce_bytes == 0
        assert c.ns == pytest.approx(k * (a + small * b))
    assert collective_cost("all_reduce", N, range(2), DUO).algorithm == "doubling"      # any size: 2 on a Duo
    assert collective_cost("all_reduce", N, range(2), PRO).algorithm == "ring"          # a Pro card: <= 256 KB
    assert collective_cost("all_reduce", small, range(3), PRO).algorithm == "ring"      # not a power of two
    assert collective_cost("all_reduce", small, range(2), DUO, reduction="max").algorithm == "ring"
    assert collective_cost("all_reduce", small, range(2), DUO, dtype="int32").algorithm == "ring"
    assert collective_cost("all_reduce", small, range(8), A2).algorithm == "mesh"       # a 910B: Mesh
    with pytest.raises(AtcError, match="Doubling"):
        collective_cost("all_gather", small, range(2), DUO, algo="doubling")
