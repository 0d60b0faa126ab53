"""The topology presets are platform data: every preset loads, every link figure has a label and a source, a SoC
finds its machine, and a bad name or a figure without its source is one E10001."""
from __future__ import annotations

import pytest

from atc_py.common.errors import AtcError
from atc_py.platform import Figure, load_topology, preset_names, supported_socs, topology_for_soc
from atc_py.platform import topology as topo_mod


def test_the_three_presets_load_with_their_machines():
    assert preset_names() == ["atlas-300i-duo", "atlas-300i-pro", "atlas-800-a2"]
    a2, duo, pro = (load_topology(n) for n in ("atlas-800-a2", "atlas-300i-duo", "atlas-300i-pro"))
    assert (a2.chips_per_server, a2.interconnect, a2.soc_version) == (8, "full-mesh", "Ascend910B1")
    assert a2.inter_link is not None and a2.inter_link.kind == "RoCE"
    assert (duo.chips_per_card, duo.cards_per_server, duo.interconnect, duo.max_servers) == (2, 4, "pcie", 1)
    assert (pro.chips_per_card, pro.interconnect, pro.inter_link) == (1, "pcie", None)
    for t in (a2, duo, pro):
        assert t.soc_version in supported_socs()


@pytest.mark.parametrize("name", ["atlas-800-a2", "atlas-300i-duo", "atlas-300i-pro"])
def test_every_figure_has_a_label_and_a_source(name):
    t = load_topology(name)
    links = [t.intra_link] + ([t.inter_link] if t.inter_link else [])
    figures = [f for link in links for f in link.figures().values()] + list(t.figures.values())
    for f in figures:
        assert f.label in topo_mod.LABELS and len(f.source) > 20, f


def test_the_hccs_and_pcie_figures_and_their_labels():
    hccs = load_topology("atlas-800-a2").intra_link
    assert (hccs.bandwidth_gbps.value, hccs.bandwidth_gbps.label) == (28, "published")
    assert "HCCS_BANDWIDTH_V4_1_0" in hccs.bandwidth_gbps.source
    assert hccs.latency_ns.label == "assumed"
    pcie = load_topology("atlas-300i-duo").intra_link
    assert (pcie.bandwidth_gbps.value, pcie.bandwidth_gbps.label) == (20, "derived")


def test_a_soc_finds_its_machine():
    assert topology_for_soc("Ascend910B3").name == "atlas-800-a2"
    assert topology_for_soc("Ascend910B3").soc_version == "Ascend910B3"
    assert topology_for_soc("Ascend310P3").name == "atlas-300i-duo"
    with pytest.raises(AtcError) as e:
        topology_for_soc("Ascend310")
    assert e.value.code == "E10001" and "--topology" in str(e.value)


def test_an_unknown_preset_lists_the_presets():
    with pytest.raises(AtcError) as e:
        load_topology("dgx-h100")
    assert e.value.code == "E10001" and "atlas-800-a2" in str(e.value)


def test_the_presets_file_is_not_read_as_a_soc():
    assert "presets" not in supported_socs() and "topologies" not in supported_socs()


def test_calibrated_link_params_replace_the_intra_link():
    t = load_topology("atlas-800-a2")
    fitted = t.intra_link.replace(latency_ns=Figure(1234.0, "calibrated", "fitted to a file"))
    t2 = t.with_link_params(fitted)
    assert t2.intra_link.latency_ns.value == 1234.0 and t.intra_link.latency_ns.value != 1234.0
    assert t2.inter_link == t.inter_link


def test_a_figure_without_its_source_is_refused(tmp_path, monkeypatch):
    text = topo_mod.PRESETS_FILE.read_text().replace("bandwidth_gbps.source = msprof's standard HCCS",
                                                       "bandwidth_gbps.nosource = msprof's standard HCCS")
    bad = tmp_path / "presets.ini"
    bad.write_text(text)
    monkeypatch.setattr(topo_mod, "PRESETS_FILE", bad)
    topo_mod._presets.cache_clear()
    try:
        with pytest.raises(AtcError) as e:
            load_topology("atlas-800-a2")
        assert e.value.code == "E10001" and "bandwidth_gbps.source" in str(e.value)
    finally:
        monkeypatch.undo()
        topo_mod._presets.cache_clear()
