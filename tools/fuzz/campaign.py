"""A fuzz campaign: seed .om files compiled from the samples, then mutated .om files (om-run, atc-py --mode=1/6),
malformed models (atc-py), bad flag values (both tools), models asking for far more work than they hold and the
`python -m` entries beside planted modules, each case in a forked child with a memory limit and a timeout. Counts every outcome; what must never happen: a traceback, a hang, a memory blow-up, a crash,
an error without an E-code, E19999 for a bad file, a file written outside the folder the user named, a
special file (FIFO, symlink, /dev/null) replaced, a half-written output left behind, an input that must be
refused accepted."""
from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

from . import entry_cases, flag_cases, model_mutants, om_mutants, sandbox, sweep_cases, work_models

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN = str(ROOT / "plugins" / "example_custom_ops.py")
SEEDS = [  # (name, model, options, om-run extra args)
    ("cnn_910b1", "models/small_cnn.onnx", {"ge.socVersion": "Ascend910B1"}, []),
    ("cnn_310p3_fp32", "models/small_cnn.onnx", {"ge.socVersion": "Ascend310P3",
                                                 "ge.exec.precision_mode": "must_keep_origin_dtype"}, []),
    ("transformer", "models/small_transformer.onnx", {"ge.socVersion": "Ascend910B1"}, []),
    # FRACTAL_NZ matmuls and TransData on the 310P
    ("transformer_310p", "models/small_transformer.onnx", {"ge.socVersion": "Ascend310P3"}, []),
    ("inception", "models/inception_block.onnx", {"ge.socVersion": "Ascend910B1"}, []),
    # AIPP fused into the first convolution (its attributes on the Conv2D) on the 310P
    ("vision_aipp_310p", "models/gears/vision_net.onnx", {
        "ge.socVersion": "Ascend310P3", "input_shape": "image:1,3,224,224", "ge.enableSmallChannel": "1",
        "insert_op_conf": str(ROOT / "models" / "gears" / "vision_aipp.cfg")}, []),
    ("decoder_sink0", "models/decoder_step.onnx", {"ge.socVersion": "Ascend910B1",
                                                   "ge.exec.precision_mode": "must_keep_origin_dtype"}, []),
    ("decoder_sink1", "models/decoder_step.onnx", {"ge.socVersion": "Ascend910B1", "ge.tiling_schedule_optimize": "1",
                                                   "ge.exec.precision_mode": "must_keep_origin_dtype"}, []),
    ("decoder_sink1_310p", "models/decoder_step.onnx", {"ge.socVersion": "Ascend310P3",
                                                        "ge.tiling_schedule_optimize": "1"}, []),
    ("superkernel", "models/superkernel.onnx", {"ge.socVersion": "Ascend910B1", "ge.tiling_schedule_optimize": "1"},
     []),
    ("custom_op", "models/custom_op.onnx", {"ge.socVersion": "Ascend910B1", "ge.tiling_schedule_optimize": "1",
                                            "op_plugin": PLUGIN}, ["--op_plugin", PLUGIN]),
    ("tf_lenet", "models/tf_lenet.pb", {"ge.socVersion": "Ascend910B1", "ge.frameworkType": "3"}, []),
]


@dataclass
class Case:
    category: str     # om | onnx | tf | flags
    index: int
    what: str
    tool: str
    args: list[str]
    kind: str = ""
    code: str = ""
    problems: list[str] = field(default_factory=list)
    output: str = ""
    seconds: float = 0.0


def _atc(args):
    from atc_py.cli.main import run
    return run(list(args))


def _om_run(args):
    from om_run.cli.main import main
    main.main(args=list(args), prog_name="om-run", standalone_mode=True)
    return 0


def _om_sweep(args):
    from om_sweep.cli import main
    main(args=list(args), prog_name="om-sweep")    # its group makes every error one line and an exit status
    return 0


def _python_m(args):
    """`python -m <entry> ...` in a fresh interpreter (what sys.path holds is the point of these cases)."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", *args], env=env, capture_output=True, text=True, timeout=120)
    sys.stdout.write(proc.stdout[-3000:])
    sys.stdout.write(proc.stderr[-3000:])
    return proc.returncode


TOOLS = {"atc-py": _atc, "om-run": _om_run, "om-sweep": _om_sweep, "python -m": _python_m}


def warm_up() -> None:
    """Import (and register) everything once in the parent, so that each forked case starts warm."""
    import atc_py.cli.main  # noqa: F401
    import atc_py.pipeline  # noqa: F401
    import om_run.cli.main  # noqa: F401
    import om_run.sim.host  # noqa: F401
    import om_sweep.cli  # noqa: F401
    import om_sweep.sweep  # noqa: F401
    from atc_py.ops import get_op
    get_op("Add")


def _compile_seed(path: pathlib.Path, model, options: dict) -> int:
    """`model`: a file of the repository, or a ModelProto."""
    import atc_py
    opts = {"om_name": path.stem, **options}
    atc_py.build(str(ROOT / model) if isinstance(model, str) else model, opts).save(path)
    return 0


def _edit_model_def(om: bytes, change) -> bytes:
    from atc_py.om import partitions as pt
    from atc_py.proto import ge_ir_pb2
    doc = om_mutants.OmDoc(om)
    md = ge_ir_pb2.ModelDef.FromString(doc.get(0, pt.MODEL_DEF))
    change(md)
    doc.put(0, pt.MODEL_DEF, md.SerializeToString())
    return doc.pack(True)


def compile_seeds(work: pathlib.Path) -> dict[str, tuple[bytes, list[str]]]:
    seeds = {}
    d = work / "seeds"
    d.mkdir(parents=True, exist_ok=True)
    for name, model, options, extra in SEEDS:
        path = d / f"{name}.om"
        out = sandbox.run(lambda _a, p=path, m=model, o=options: _compile_seed(p, m, o), [], str(d), timeout=300)
        if out.kind != "ok" or not path.is_file():
            raise RuntimeError(f"seed {name} did not compile: {out.output[-2000:]}")
        seeds[name] = (path.read_bytes(), extra)
    return seeds


def _listing(d: pathlib.Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")} if d.exists() else set()


class Campaign:
    def __init__(self, work: pathlib.Path, seed: int = 0, timeout: float = 30.0, mem_budget: int = 3 << 30,
                 keep: int = 30):
        self.work = work
        self.seed = seed
        self.timeout = timeout
        self.mem_budget = mem_budget
        self.keep = keep
        self.cases: list[Case] = []
        self.canary = work / "canary"
        for sub in ("cases", "canary", "failures"):
            (work / sub).mkdir(parents=True, exist_ok=True)
        self.top: set[str] | None = None   # the campaign folder's entries, taken at the first case

    # -- running one case ---------------------------------------------------------------------------
    def _run(self, case: Case, case_dir: pathlib.Path, files: dict[str, bytes], check_out=None,
             own_output_rule: bool = True) -> None:
        """own_output_rule: nothing may appear in the case folder outside out/ (files and models name their
        outputs; flag cases name theirs themselves, so only the campaign folder and canary rules apply)."""
        before = _listing(case_dir)
        if self.top is None:
            self.top = _listing_top(self.work)
        out = sandbox.run(TOOLS[case.tool], case.args, str(case_dir), self.timeout, self.mem_budget)
        case.kind, case.code, case.output, case.seconds = out.kind, out.code, out.output, out.seconds
        after = _listing(case_dir)
        new = sorted(p for p in after - before if not p.startswith("out") and p != ".fuzz_output")
        if new and own_output_rule:
            case.problems.append(f"wrote outside --output: {new[:5]}")
        if _listing_top(self.work) != self.top:
            case.problems.append(f"wrote into the campaign folder: {sorted(_listing_top(self.work) - self.top)}")
            self.top = _listing_top(self.work)
        if any(self.canary.iterdir()):
            case.problems.append(f"wrote at an absolute path: {sorted(os.listdir(self.canary))}")
            shutil.rmtree(self.canary)
            self.canary.mkdir()
        if check_out is not None:
            case.problems += check_out(case, case_dir)
        self.cases.append(case)
        if (case.kind in sandbox.BAD or case.problems) and self.keep > 0:
            self.keep -= 1
            keep_dir = self.work / "failures" / f"{case.category}_{case.index}"
            keep_dir.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (keep_dir / name).write_bytes(data)
            (keep_dir / "case.json").write_text(json.dumps(asdict(case), indent=1))
        shutil.rmtree(case_dir, ignore_errors=True)

    def _case_dir(self, tag: str) -> pathlib.Path:
        d = self.work / "cases" / tag
        shutil.rmtree(d, ignore_errors=True)
        (d / "out").mkdir(parents=True)
        return d

    # -- the categories ---------------------------------------------------------------------------------
    def om_cases(self, n: int, seeds: dict[str, tuple[bytes, list[str]]]) -> None:
        names = sorted(seeds)
        for i in range(n):
            rng = random.Random(self.seed * 1_000_003 + i)
            name = names[i % len(names)]
            data, extra = seeds[name]
            mutant, what = om_mutants.mutate(data, rng, str(self.canary))
            d = self._case_dir(f"om{i}")
            (d / "m.om").write_bytes(mutant)
            r = rng.random()
            if r < 0.6:
                tool, args = "om-run", ["--model", "m.om", "--output", "out", "--outfmt",
                                        rng.choice(["NPY", "BIN", "TXT"])] + extra
                if rng.random() < 0.3:
                    args += ["--summary-json", "out/s.json", "--profile", "out/prof"]
            elif r < 0.75:
                tool, args = "om-run", ["--model", "m.om", "--no-compute", "--output", "out"] + extra
            elif r < 0.9:
                tool, args = "atc-py", ["--mode=1", "--om=m.om", "--json=out/m.json"]
            else:
                tool, args = "atc-py", ["--mode=6", "--om=m.om"]
            self._run(Case("om", i, f"{name}: {what}", tool, args), d, {"m.om": mutant})

    def model_cases(self, n: int) -> None:
        onnx_bases = model_mutants.base_onnx_models()
        tf_bases = model_mutants.base_tf_models()
        for i in range(n):
            rng = random.Random(self.seed * 2_000_003 + i)
            is_tf = rng.random() < 0.2 and tf_bases
            if is_tf:
                data, what = model_mutants.tf_mutant(tf_bases, rng)
                fname, fw = "m.pb", "3"
            else:
                data, what = model_mutants.onnx_mutant(onnx_bases, rng)
                fname, fw = "m.onnx", "5"
            d = self._case_dir(f"model{i}")
            (d / fname).write_bytes(data)
            args = [f"--model={fname}", f"--framework={fw}", "--output=out/m",
                    f"--soc_version={rng.choice(['Ascend910B1', 'Ascend310P3'])}"]
            self._run(Case("tf" if is_tf else "onnx", i, what, "atc-py", args), d, {fname: data}, _check_build_output)

    def flag_cases(self, seeds: dict[str, tuple[bytes, list[str]]], limit: int | None = None) -> None:
        om = seeds["cnn_910b1"][0]
        model_bytes = (ROOT / "models" / "small_cnn.onnx").read_bytes()
        cases = [("atc-py", a, False) for a in flag_cases.atc_cases("m.onnx", "m.om")] + \
                [("om-run", a, False) for a in flag_cases.om_run_cases("m.om")] + \
                [(tool, a, True) for tool, a in flag_cases.refused_cases("m.onnx", "m.om")]
        if limit is not None:
            cases = cases[:limit]
        for i, (tool, args, refuse) in enumerate(cases):
            d = self._case_dir(f"flags{i}")
            flag_cases.prepare(d)
            (d / "m.onnx").write_bytes(model_bytes)
            (d / "m.om").write_bytes(om)
            self._run(Case("flags", i, " ".join(args)[:200], tool, args), d, {},
                      lambda c, dd, refuse=refuse: flag_cases.special_files_intact(dd) + _refused(c, refuse),
                      own_output_rule=False)

    def work_cases(self) -> None:
        """Models and .om files asking for far more work than they hold (work_models.py), each to be refused in
        moments; and the `python -m` entries run beside modules planted in the working folder (entry_cases.py)."""
        tree = self._if_om()             # before the first case: the campaign folder is listed then
        # (file, bytes, framework, must be refused): beyond the limits, or within them and built in seconds
        models = [(f"tree{depth}.onnx", work_models.onnx_if_tree(depth), "5", depth > 11) for depth in (12, 14, 18)]
        models += [(f"loop{trip}x{per}.onnx", work_models.onnx_unrolled_loop(trip, per), "5", trip * per > 1 << 15)
                   for trip, per in ((3000, 20), (4096, 20), (2000, 40), (100, 20))]
        models += [(f"tf{depth}{'call' if call else 'if'}.pb", work_models.tf_function_tree(depth, call), "3",
                    depth > 10) for depth, call in ((10, True), (12, False), (18, False), (18, True), (40, False),
                                                    (40, True))]
        for i, (name, data, fw, refuse) in enumerate(models):
            d = self._case_dir(f"work{i}")
            (d / name).write_bytes(data)
            args = [f"--model={name}", f"--framework={fw}", "--output=out/m", "--soc_version=Ascend910B1"]
            self._run(Case("work", i, f"atc-py: {name}", "atc-py", args), d, {},
                      lambda c, dd, refuse=refuse: _refused(c, refuse) + _check_build_output(c, dd))
        for k, depth in enumerate((12, 13)):
            i = len(models) + k
            d = self._case_dir(f"work{i}")
            data = _edit_model_def(tree, lambda md, n=depth: work_models.om_if_tree(md, n))
            (d / "m.om").write_bytes(data)
            self._run(Case("work", i, f"om-run: If tree {depth} deep", "om-run", ["--model", "m.om", "--output", "out"]),
                      d, {"m.om": data}, lambda c, dd: _refused(c, True))
        model_bytes = (ROOT / "models" / "small_cnn.onnx").read_bytes()
        for k, args in enumerate(entry_cases.ENTRIES):
            i = len(models) + 2 + k
            d = self._case_dir(f"work{i}")
            (d / "m.om").write_bytes(tree)
            (d / "m.onnx").write_bytes(model_bytes)
            entry_cases.prepare(d)
            self._run(Case("work", i, f"python -m {' '.join(args)} beside planted modules", "python -m", args), d, {},
                      entry_cases.check, own_output_rule=False)

    def _if_om(self) -> bytes:
        """A compiled one-If model (both branches Relu), built in a child like the seeds."""
        import onnx
        path = self.work / "seeds" / "one_if.om"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file():
            model = onnx.ModelProto.FromString(work_models.onnx_if_tree(1))
            out = sandbox.run(lambda _a: _compile_seed(path, model, {"ge.socVersion": "Ascend910B1"}), [],
                              str(path.parent), timeout=300)
            if out.kind != "ok":
                raise RuntimeError(f"the If seed did not compile: {out.output[-2000:]}")
        return path.read_bytes()

    def sweep_cases(self, seeds: dict[str, tuple[bytes, list[str]]]) -> None:
        """Hostile sweep files and planted output folders (sweep_cases.py), om-sweep and om-run."""
        om = seeds["cnn_910b1"][0]
        model_bytes = (ROOT / "models" / "small_cnn.onnx").read_bytes()
        for i, c in enumerate(sweep_cases.cases(_output_names(om, self.work))):
            d = self._case_dir(f"sweep{i}")
            (d / "m.onnx").write_bytes(model_bytes)
            (d / "m.om").write_bytes(om)
            (d / "target.txt").write_text("keep\n")
            ctx = {"canary": str(self.canary)}
            c.prepare(d, ctx)
            self._run(Case("sweep", i, c.what, c.tool, c.args), d, {},
                      lambda case, dd, c=c, ctx=ctx: c.check(dd, ctx) + _refused(case, c.refuse))

    # -- results --------------------------------------------------------------------------------------
    def summary(self) -> dict:
        by_cat: dict[str, Counter] = defaultdict(Counter)
        codes: dict[str, Counter] = defaultdict(Counter)
        for c in self.cases:
            by_cat[c.category][c.kind] += 1
            if c.code:
                codes[c.category][c.code] += 1
            if c.problems:
                by_cat[c.category]["problems"] += 1
        bad = [c for c in self.cases if c.kind in sandbox.BAD or c.problems]
        return {"cases": len(self.cases), "by_category": {k: dict(v) for k, v in sorted(by_cat.items())},
                "codes": {k: dict(v.most_common()) for k, v in sorted(codes.items())},
                "bad": len(bad),
                "failures": [{"category": c.category, "index": c.index, "kind": c.kind, "code": c.code,
                              "what": c.what, "args": c.args, "problems": c.problems,
                              "output": c.output[-1500:]} for c in bad[:200]],
                "slowest_s": round(max([c.seconds for c in self.cases] or [0]), 2)}


def _output_names(om: bytes, work: pathlib.Path) -> list[str]:
    """The names om-run gives the outputs of this .om in its --output folder (NPY)."""
    from atc_py.common.atomic_write import safe_stem
    from om_run.load.loader import load_model
    path = work / "seeds" / "outputs_probe.om"
    path.write_bytes(om)
    model = load_model(str(path))
    return [f"{safe_stem(model.name)}_output_{i}.npy" for i in range(len(model.outputs))]


def _refused(case: Case, refuse: bool) -> list[str]:
    """A case the tool must refuse that ran to the end is a wrong acceptance."""
    return ["accepted an input it must refuse"] if refuse and case.kind == "ok" else []


def _listing_top(work: pathlib.Path) -> set[str]:
    return set(os.listdir(work))


def _check_build_output(case: Case, d: pathlib.Path) -> list[str]:
    """A failed build leaves nothing; a successful one leaves exactly the .om (no temp files either way)."""
    out = sorted(os.listdir(d / "out"))
    if case.kind == "ok":
        return [] if out == ["m.om"] else [f"after success out/ holds {out}"]
    return [] if not out else [f"after a failure out/ holds {out}"]
