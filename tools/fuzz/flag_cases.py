"""Invalid (and hostile-but-valid) flag values for both tools, with the special files they point at: a FIFO,
a folder, a symlink, /dev/null, /dev/zero, unwritable places, broken JSON and plugins that exit."""
from __future__ import annotations

import json
import os
import pathlib
import stat

import numpy as np

ATC_BAD = {
    "model": ["", "nosuch.onnx", "dir", "fifo", "/dev/zero", "chardev", "garbage.bin", "link_dir"],
    "framework": ["", "-1", "2", "4", "99", "x", "5.0", " 5", "99999999999999999999"],
    "output": ["", "dir/", "out/../../esc/m", "/proc/version", "fifo", "a b", "x" * 5000, "file.txt/sub",
               "nosuchdir/m", "out/li\u00f6"],
    "soc_version": ["", "Ascend999", "../x", "ascend910b1", "Ascend910B1\n"],
    "input_shape": ["x:", "x:1,a", "x:-1", ":1", "x:1~8", "x:0", "x:99999999999", "x:1;x:1", "1.5", ";;",
                    "nosuch:1", "x:1,2,3,4,5,6,7,8,9", "input:1,3,99999,99999", "input:1,3,0,32"],
    "out_nodes": ["nosuch:0", "x:99", "a:b:c", ";", ":0", "conv1:99999999999999999999"],
    "tiling_schedule_optimize": ["2", "-1", "yes", ""],
    "log": ["verbose", "", "INFO"],
    "mode": ["2", "-1", "99999999999999999999", "", "1.0"],
    "precision_mode": ["fp8", "", "FORCE_FP16"],
    "output_type": ["FP64", "x:0:FP16", "conv1:99:FP16", ":::", "FP16;FP32"],
    "optimization_switch": ["nosuch:on", "fold:maybe", ";;;", "fold", "fold:on:off"],
    "static_model_ops_lower_limit": ["-2", "abc", "99999999999999999999", "1e3"],
    "debug_sink_nops": ["1e8", "-1", "100000000", "99999999999999999999", "4294967296"],
    "op_plugin": ["nosuch.py", "plugins_bad", "exit0.py", "exit1.py", "raise.py", "/dev/zero", "fifo", "dir",
                  "interrupt.py"],
    "op_attr_config": ["nosuch.json", "bad.json", "deep.json", "/dev/zero", "fifo", "list.json", "wrong.json", "dir"],
    "input_format": ["NHWC", "X", ""],
    "enable_single_stream": ["maybe", "2"],
    "display_model_info": ["2", "yes"],
    "disable_reuse_memory": ["2", "-1"],
}
ATC_JSON_MODE = {"om": ["", "nosuch.om", "dir", "fifo", "/dev/zero", "chardev", "garbage.bin", "link_dir"],
                 "json": ["chardev", "fifo", "link", "dir", "/proc/version", "nosuchdir/x.json", "", "dangling",
                          "file.txt/sub"]}
OM_RUN_BAD = {
    "model": ["", "nosuch.om", "dir", "fifo", "/dev/zero", "chardev", "garbage.bin"],
    "input": ["nosuch.npy", "/dev/zero", "fifo", "dir", "garbage.npy", "obj.npy", "wrong_dtype.npy", "wrong_shape.npy",
              ",", "bad.npz", "obj.npz", "garbage.npy,garbage.npy", "chardev"],
    "output": ["/proc/version", "file.txt", "fifo", "chardev", "file.txt/sub"],
    "outfmt": ["XML", ""],
    "loop": ["0", "-1", "abc", "99999999999999999999999"],
    "seed": ["-1", "1180591620717411303424", "abc", "-99999999999999999999999"],
    "expected": ["nosuch.npz", "garbage.npy", "fifo", "/dev/zero", "obj.npz", "dir"],
    "rtol": ["nan", "-1", "inf", "abc"],
    "atol": ["nan", "-1", "-inf"],
    "sim-config": ["nosuch.json", "/dev/zero", "fifo", "dir", "nan.json", "inf.json", "neg.json", "str.json",
                   "list.json", "deep.json", "zero_rate.json", "huge.json", "bool.json", "dict_bad.json", "bad.json"],
    "summary-json": ["dir", "/proc/version", "fifo", "chardev", "link", "nosuchdir/x.json", "file.txt/sub"],
    "profile": ["file.txt", "/proc/version", "fifo", "chardev", "file.txt/sub"],
    "tiling-cache": ["maybe"],
    "host-threads": ["2", "0"],
    "op_plugin": ["exit0.py", "raise.py", "/dev/zero", "interrupt.py"],
}

SIM_CONFIGS = {"nan.json": '{"nop_ns": NaN}', "inf.json": '{"sqe_dispatch_ns": Infinity}', "neg.json": '{"nop_ns": -5}',
               "str.json": '{"nop_ns": "5"}', "list.json": "[1, 2]", "deep.json": "[" * 100000 + "]" * 100000,
               "zero_rate.json": '{"h2d_gbps": 0}', "huge.json": '{"nop_ns": 1e300}', "bool.json": '{"nop_ns": true}',
               "dict_bad.json": '{"host_tiling_ns_by_op": {"Add": "x"}}', "bad.json": "{"}
PLUGINS = {"exit0.py": "import sys\nsys.exit(0)\n", "exit1.py": "import sys\nsys.exit(3)\n",
           "raise.py": "raise RuntimeError('boom')\n", "interrupt.py": "raise KeyboardInterrupt\n"}


AIPP_CONFIGS = {   # configs ATC refuses (E10052): an input_format outside the enum, a pad value no fp16 holds
    "aipp_enum.cfg": "aipp_op {\n  aipp_mode: static\n  input_format: 99\n}\n",
    "aipp_neg_enum.cfg": "aipp_op {\n  aipp_mode: static\n  input_format: -3\n}\n",
    "aipp_nan.cfg": "aipp_op {\n  aipp_mode: static\n  input_format: RGB888_U8\n  cpadding_value: nan\n}\n",
    "aipp_inf.cfg": "aipp_op {\n  aipp_mode: static\n  input_format: RGB888_U8\n  padding: true\n"
                    "  cpadding_value: -inf\n}\n",
}
# external data locations the file system cannot resolve: a link to itself, two links to each other, through a
# looping link, one name over NAME_MAX, a path over PATH_MAX
EXTERNAL_LOCATIONS = {"ext_loop.onnx": "loop", "ext_cycle.onnx": "cyc_a", "ext_through.onnx": "loop/w.bin",
                      "ext_long.onnx": "x" * 300, "ext_deep.onnx": "/".join(["d"] * 2500)}


def _external_model(location: str) -> bytes:
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    for k, v in (("location", location), ("offset", "0"), ("length", "432")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def prepare(case_dir: pathlib.Path) -> None:
    """The files the flag values name, created in the case's folder (its cwd)."""
    (case_dir / "dir").mkdir()
    (case_dir / "out").mkdir(exist_ok=True)
    os.mkfifo(case_dir / "fifo")
    if make_chardev(case_dir / "chardev"):
        (case_dir / ".chardev_ok").write_text("")
    (case_dir / "file.txt").write_text("x\n")
    (case_dir / "garbage.bin").write_bytes(b"\x00garbage" * 10)
    (case_dir / "garbage.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    np.save(case_dir / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(case_dir / "wrong_dtype.npy", np.zeros((1, 3, 32, 32), np.int8))
    np.save(case_dir / "wrong_shape.npy", np.zeros((2, 2), np.float32))
    (case_dir / "bad.npz").write_bytes(b"PK\x03\x04broken")
    np.savez(case_dir / "obj.npz", a=np.array([None], dtype=object))
    (case_dir / "target.txt").write_text("keep\n")
    os.symlink("target.txt", case_dir / "link")
    os.symlink("nowhere.txt", case_dir / "dangling")
    os.symlink("dir", case_dir / "link_dir")
    for name, text in SIM_CONFIGS.items():
        (case_dir / name).write_text(text)
    for name, text in PLUGINS.items():
        (case_dir / name).write_text(text)
    (case_dir / "plugins_bad").mkdir()
    (case_dir / "plugins_bad" / "p.py").write_text("import sys\nsys.exit(0)\n")
    (case_dir / "bad.json").write_text("{")
    (case_dir / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (case_dir / "list.json").write_text(json.dumps([1, 2]))
    (case_dir / "wrong.json").write_text(json.dumps({"conv1": 5, "nosuch": {"x": [1, {"y": None}]}}))
    for name, text in AIPP_CONFIGS.items():
        (case_dir / name).write_text(text)
    os.symlink("loop", case_dir / "loop")
    os.symlink("cyc_b", case_dir / "cyc_a")
    os.symlink("cyc_a", case_dir / "cyc_b")
    for name, location in EXTERNAL_LOCATIONS.items():
        (case_dir / name).write_bytes(_external_model(location))
    inputs = case_dir / "inputs_dangling"          # a valid input beside a dangling link: refused, not skipped
    inputs.mkdir()
    np.zeros((1, 3, 32, 32), np.float32).tofile(inputs / "a.bin")
    os.symlink("nowhere.bin", inputs / "b.bin")


def make_chardev(path: pathlib.Path) -> bool:
    """A character device of our own standing in for /dev/null (1:3): the campaign never points a tool at the
    machine's real /dev/null, which a broken writer would replace. Needs CAP_MKNOD; without it, a plain file
    (and the check is skipped)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return True
    except OSError:
        path.write_text("")
        return False


def special_files_intact(case_dir: pathlib.Path) -> list[str]:
    """What a run must never replace: the FIFO, the symlinks, the character device."""
    bad = []
    if not stat.S_ISFIFO(os.lstat(case_dir / "fifo").st_mode):
        bad.append("fifo replaced")
    for link in ("link", "dangling", "link_dir"):
        if not os.path.islink(case_dir / link):
            bad.append(f"symlink {link} replaced")
    if (case_dir / ".chardev_ok").exists() and not stat.S_ISCHR(os.lstat(case_dir / "chardev").st_mode):
        bad.append("chardev replaced")
    return bad


def atc_cases(model: str, om: str) -> list[list[str]]:
    base = {"model": model, "framework": "5", "output": "out/m", "soc_version": "Ascend910B1"}
    cases = []
    for flag, values in ATC_BAD.items():
        for v in values:
            args = dict(base)
            args[flag] = v
            if flag == "model" and v.endswith(".onnx") is False and v not in ("",):
                pass
            cases.append([f"--{k}={a}" for k, a in args.items()])
    for flag, values in ATC_JSON_MODE.items():
        for v in values:
            args = {"mode": "1", "om": om, "json": "out/m.json"}
            args[flag] = v
            cases.append([f"--{k}={a}" for k, a in args.items()])
    for v in ATC_JSON_MODE["om"]:
        cases.append(["--mode=6", f"--om={v}"])
    cases += [["--nosuch=1"], ["-x"], ["positional"], ["--model"], ["--mode=6", "--om", om, "--framework=5"], []]
    return cases


def refused_cases(model: str, om: str) -> list[tuple[str, list[str]]]:
    """(tool, args) of inputs each tool must refuse: a run that ends well is a wrong acceptance."""
    base = [f"--model={model}", "--framework=5", "--output=out/m", "--soc_version=Ascend910B1"]
    cases = [("atc-py", base + [f"--insert_op_conf={name}", "--input_shape=input:1,3,32,32"]) for name in AIPP_CONFIGS]
    cases += [("atc-py", [f"--model={name}", "--framework=5", "--output=out/m", "--soc_version=Ascend910B1"])
              for name in EXTERNAL_LOCATIONS]
    gears = [("--input_shape=input:-1,3,32,32", "--dynamic_batch_size=1,,2"),
             ("--input_shape=input:-1,3,32,32", "--dynamic_batch_size=,1,2"),
             ("--input_shape=input:-1,3,-1,-1", "--dynamic_dims=1,32,32;;2,32,32"),
             ("--input_shape=input:-1,3,-1,-1", "--dynamic_dims=;1,32,32;2,32,32"),
             ("--input_shape=input:1,3,-1,-1", "--dynamic_image_size=32,32;;16,16")]
    cases += [("atc-py", base + list(g)) for g in gears]
    cases += [("om-run", ["--model", om, "--input", "inputs_dangling", "--output", "out"])]
    return cases


def om_run_cases(om: str) -> list[list[str]]:
    cases = []
    for flag, values in OM_RUN_BAD.items():
        for v in values:
            args = ["--model", om] if flag != "model" else ["--model", v]
            if flag != "model":
                args += [f"--{flag}", v]
            cases.append(args)
    cases += [["--nosuch"], [om, "--model", "other.om"], ["--model", om, "--loop", "2", "--output", "out",
                                                           "--summary-json", "chardev", "--profile", "out/prof"]]
    return cases
