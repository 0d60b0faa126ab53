"""Whose output folder a run writes into: om-run's (--output itself), ais_bench's (a new
--output/<YYYY_MM_DD-hh_mm_ss>, or --output/<--output_dirname> with a relative path joined as os.path.join does)
or msame's (--output/<YYYYMD_h_m_s_us>, nothing zero-padded); what would leave --output is refused; ais_bench's
device list puts each device's outputs in device<id>_<k>; the file names of each tool."""
import datetime

import pytest

from atc_py.common.errors import AtcError
from om_run.run.conventions import AIS_BENCH, MSAME, OM_RUN, check_output_dirname, device_folder
from om_run.run.output_files import ais_bench_stem, msame_stem

NOW = datetime.datetime(2024, 3, 5, 7, 8, 9, 41)


def test_each_tool_names_its_folder_from_the_clock():
    assert OM_RUN.folder("out", None, NOW) == "out"
    assert AIS_BENCH.folder("out", None, NOW) == "out/2024_03_05-07_08_09"
    assert MSAME.folder("out", None, NOW) == "out/202435_7_8_9_41"
    assert AIS_BENCH.folder(None, None, NOW) is None
    assert (OM_RUN.outfmt, AIS_BENCH.outfmt, MSAME.outfmt) == ("NPY", "BIN", "BIN")


@pytest.mark.parametrize("name,folder", [("r1", "out/r1"), ("./result/", "out/./result/"), ("bs1_out/", "out/bs1_out/"),
                                         ("data/bin_out", "out/data/bin_out"), (".", "out/.")])
def test_a_relative_output_dirname_is_joined_under_output(name, folder):
    for conv in (OM_RUN, AIS_BENCH):
        assert conv.folder("out", check_output_dirname(name, "out"), NOW) == folder


@pytest.mark.parametrize("name,message", [("../up", "must stay under --output"), ("/abs/r", "must stay under --output"),
                                          ("a/../../b", "must stay under --output"), ("..", "must stay under --output"),
                                          ("r 1", "ais_bench's path characters"), ("a\\b", "ais_bench's path characters")])
def test_an_output_dirname_that_leaves_output_is_refused(name, message):
    with pytest.raises(AtcError) as e:
        check_output_dirname(name, "out")
    assert e.value.code == "E30002" and message in str(e.value)
    with pytest.raises(AtcError, match="give --output too"):
        check_output_dirname("r1", None)


def test_a_device_list_gives_each_device_a_folder():
    assert device_folder("out/r", (0,), 0) == "out/r"
    assert [device_folder("out/r", (4, 1), k) for k in (0, 1)] == ["out/r/device4_0", "out/r/device1_1"]


def test_file_stems_follow_each_tool():
    assert ais_bench_stem("data/img.0001.bin") == "img"          # up to the first dot
    assert ais_bench_stem(None) == "pure_infer_data"
    assert msame_stem("models/resnet.v1.om") == "resnet.v1"       # up to the last dot
