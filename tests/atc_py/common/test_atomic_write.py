"""Outputs are written where asked and only there: regular files atomically with the
umask's mode, a symlink's target, a character device through; a FIFO, socket or folder refused, never
replaced."""
from __future__ import annotations

import os
import socket
import stat

import pytest

from atc_py.common.atomic_write import make_output_dir, write_atomic
from atc_py.common.errors import AtcError


def test_new_files_get_the_umask_mode_and_existing_ones_keep_theirs(tmp_path):
    old = os.umask(0o027)
    try:
        import importlib

        import atc_py.common.atomic_write as aw
        importlib.reload(aw)   # the module reads the umask once
        aw.write_atomic(tmp_path / "new.bin", b"x")
        assert stat.S_IMODE(os.stat(tmp_path / "new.bin").st_mode) == 0o640
        keep = tmp_path / "keep.bin"
        keep.write_bytes(b"old")
        os.chmod(keep, 0o604)
        aw.write_atomic(keep, b"new")
        assert keep.read_bytes() == b"new" and stat.S_IMODE(os.stat(keep).st_mode) == 0o604
    finally:
        os.umask(old)
        importlib.reload(aw)


def test_a_symlink_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "target.json").write_text("old")
    os.symlink("target.json", tmp_path / "link.json")
    os.symlink("later.json", tmp_path / "dangling.json")
    write_atomic(tmp_path / "link.json", b"new")
    write_atomic(tmp_path / "dangling.json", b"made")
    assert os.path.islink(tmp_path / "link.json") and (tmp_path / "target.json").read_bytes() == b"new"
    assert os.path.islink(tmp_path / "dangling.json") and (tmp_path / "later.json").read_bytes() == b"made"


def test_a_character_device_is_written_through(tmp_path):
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))   # our own /dev/null, never the machine's
    except (PermissionError, OSError):
        dev = "/dev/null"   # without CAP_MKNOD: the real one (a broken writer would have failed the run above)
    write_atomic(dev, b"discarded")
    assert stat.S_ISCHR(os.stat(dev).st_mode)


@pytest.mark.parametrize("kind", ["fifo", "socket", "dir"])
def test_fifos_sockets_and_folders_are_refused_and_left_alone(tmp_path, kind):
    p = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
    else:
        p.mkdir()
    with pytest.raises(AtcError, match="E13004"):
        write_atomic(p, b"x")
    mode = os.lstat(p).st_mode
    assert {"fifo": stat.S_ISFIFO, "socket": stat.S_ISSOCK, "dir": stat.S_ISDIR}[kind](mode)
    assert [q.name for q in tmp_path.iterdir()] == [kind]   # no temp file left behind


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = tmp_path / "out.om"
    target.write_bytes(b"previous")

    def boom(f):
        f.write(b"partial")
        raise RuntimeError("the build failed while writing")
    with pytest.raises(RuntimeError):
        write_atomic(target, boom)
    assert target.read_bytes() == b"previous" and sorted(p.name for p in tmp_path.iterdir()) == ["out.om"]


def test_output_folders(tmp_path):
    (tmp_path / "f").write_text("x")
    assert make_output_dir(tmp_path / "a" / "b").is_dir()
    for bad in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(AtcError, match="E13004"):
            make_output_dir(bad)


def test_atc_json_to_dev_null_and_fifo(atc, tmp_path):
    from tests.helpers import MODELS
    om = tmp_path / "m"
    assert atc("--model", str(MODELS / "small_cnn.onnx"), "--framework=5", f"--output={om}",
               "--soc_version=Ascend910B1")[0] == 0
    fifo = tmp_path / "dump.json"
    os.mkfifo(fifo)
    code, out, _ = atc("--mode=1", f"--om={om}.om", f"--json={fifo}")
    assert code == 255 and "E13004" in out and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_in_its_own_folder_a_planted_symlink_is_replaced_not_followed(tmp_path):
    """write_in_folder: the files a tool names inside its output folder (om-run's outputs and profile, om-sweep's
    records and tables): a symlink planted there is replaced by the file; its target stays as it was."""
    from atc_py.common.atomic_write import write_in_folder
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside / "victim.txt", out / "a.npy")
    os.symlink(outside / "later.txt", out / "b.npy")          # dangling: would create a file outside
    os.symlink(outside, out / "c.npy")                          # to a folder
    for name in ("a.npy", "b.npy", "c.npy"):
        write_in_folder(out / name, b"mine")
        assert not os.path.islink(out / name) and (out / name).read_bytes() == b"mine"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"] and (outside / "victim.txt").read_text() == "keep"
    assert sorted(p.name for p in out.iterdir()) == ["a.npy", "b.npy", "c.npy"]      # no temp file left


def test_in_its_own_folder_special_files_are_still_refused(tmp_path):
    from atc_py.common.atomic_write import write_in_folder
    os.mkfifo(tmp_path / "fifo.npy")
    (tmp_path / "dir.npy").mkdir()
    for name in ("fifo.npy", "dir.npy"):
        with pytest.raises(AtcError, match="E13004"):
            write_in_folder(tmp_path / name, b"x")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo.npy").st_mode) and (tmp_path / "dir.npy").is_dir()
