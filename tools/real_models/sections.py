"""The report's tables, one per fixture directory of tests/data: which directories hold model fixtures, how each
kind is judged (the same measures the tests assert), and a row per fixture. The fixtures of a directory are its
model files (*.onnx, *.pb) as they are on disk; a directory that holds something else is named in NOT_MODELS."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from .checks import against_autocast, output_steps, rel_err, scale_tensors

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
NOT_MODELS = {"atc_replay": "ATC command lines replayed against CANN's recorded messages, not models",
              "hccl": "hccl_test outputs for om-run's link calibration, not models",
              "serve": "Hugging Face folders (config.json + safetensors) om-run serve loads, with transformers' greedy "
                       "tokens; checked by tests/om_run/serve/test_serve_numerics.py"}
SOC = {"ge.socVersion": "Ascend910B1"}
MODES = {"fp32": "must_keep_origin_dtype", "default": "force_fp16"}


def build_and_run(model: Path, inputs: list, options: dict):
    """(outputs, the .om's model) of a build with `options`, run once in om-run."""
    import atc_py
    from om_run.load.loader import load_model
    from om_run.sim.host import Simulation
    result = atc_py.build(str(model), {**SOC, **options})
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.om"
        path.write_bytes(result.om)
        loaded = load_model(str(path))
        with np.errstate(all="ignore"):
            outs, _ = Simulation(loaded).run(inputs)
    return outs, loaded


def shapes(names, arrays) -> dict:
    return {"input_shape": ";".join(f"{n}:{','.join(map(str, x.shape))}" for n, x in zip(names, arrays))}


class Section:
    """One directory's table. `row` raises AtcError when the fixture does not compile (the report says so)."""
    directory = ""
    title = ""
    columns: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return DATA / self.directory

    def fixtures(self) -> list[str]:
        return sorted(p.stem for p in list(self.path.glob("*.onnx")) + list(self.path.glob("*.pb")))

    def manifest(self) -> dict:
        f = self.path / "manifest.json"
        return json.loads(f.read_text()) if f.exists() else {}

    def row(self, name: str) -> list[str]:
        raise NotImplementedError


class RealModels(Section):
    directory, title = "real_models", "torchvision, Hugging Face and Keras exports"
    columns = ("source", "exporter", "max error fp32", "max error fp16 (tolerance)")

    def row(self, name):
        from .report import compile_and_run, fp16_tolerance, load
        entry = self.manifest()[name]
        _, ref, emu = load(name, entry)
        cells = [entry["source"].split(" (")[0], entry["exporter"]]
        for precision in ("fp32", "fp16"):
            outs, _, _ = compile_and_run(name, entry, precision)
            err = max(rel_err(g, r) for g, r in zip(outs, ref))
            cells.append(f"{err:.1e}" if precision == "fp32" else f"{err:.1e} ({fp16_tolerance(emu, ref):.1e})")
        return cells


class Quantized(Section):
    directory, title = "quantized", "onnxruntime-quantized models (QOperator, QDQ, dynamic)"
    columns = ("source", "format (contrib ops)", "fp32: max error in steps, elements off", "default: the same")

    def row(self, name):
        import onnx
        from onnx.reference import ReferenceEvaluator
        entry = self.manifest()[name]
        z = np.load(self.path / f"{name}.npz")
        inputs = [z[f"in_{k}"] for k in range(len(entry["inputs"]))]
        want = [z[f"out_{k}"] for k in range(len(entry["outputs"]))]
        model = onnx.load(str(self.path / entry["file"]))
        values = {}
        if scale_tensors(model):      # a dynamically quantized model's steps are run-time scales
            exposed = onnx.ModelProto()
            exposed.CopyFrom(model)
            exposed.graph.output.extend(onnx.ValueInfoProto(name=t) for t in scale_tensors(model))
            names = [o.name for o in exposed.graph.output]
            values = dict(zip(names, ReferenceEvaluator(exposed).run(None, dict(zip(entry["inputs"], inputs)))))
        steps = output_steps(model, values)
        ops = ", ".join(entry["contrib_ops"])
        cells = [entry["source"].split(" (")[0], entry["format"] + (f" ({ops})" if ops else "")]
        for mode in MODES.values():
            outs, _ = build_and_run(self.path / entry["file"], inputs,
                                    {"ge.exec.precision_mode": mode, **shapes(entry["inputs"], inputs)})
            diffs = [np.abs(g.astype(np.float64) - w) / s for g, w, s in zip(outs, want, steps)]
            off = sum(int((d > 0.5).sum()) for d in diffs)
            cells.append(f"{max(float(d.max()) for d in diffs):.2f}, {off} of {sum(w.size for w in want)}")
        return cells


class Detection(Section):
    directory, title = "detection", "torchvision detectors with their post-processing"
    columns = ("fp32: box px / score", "default: box px / score", "torch autocast: box px / score")

    def row(self, name):
        ref = np.load(self.path / f"{name}.npz")
        cells = []
        for mode in MODES.values():
            outs, model = build_and_run(self.path / f"{name}.onnx", [ref["images"]],
                                        {"ge.exec.precision_mode": mode, "input_shape": "images:3,64,64"})
            got = dict(zip([io.name for io in model.outputs], outs))
            e, torch16 = against_autocast(got["boxes"], got["scores"], got["labels"], ref, image_size=64)
            cells.append(f"{e.box:.3f} / {e.score:.1e}")
        return cells + [f"{torch16.box:.3f} / {torch16.score:.1e}"]


class Flow(Section):
    directory, title = "flow", "an iterative model: RAFT optical flow"
    columns = ("max error fp32", "max error default", "torch autocast")

    def row(self, name):
        z = np.load(self.path / f"{name}.npz")
        cells = []
        for mode in MODES.values():
            outs, _ = build_and_run(self.path / f"{name}.onnx", [z["image1"], z["image2"]],
                                    {"ge.exec.precision_mode": mode})
            cells.append(f"{rel_err(outs[0], z['flow']):.1e}")
        return cells + [f"{rel_err(z['flow_autocast'], z['flow']):.1e}"]


class Decoders(Section):
    directory, title = "llm", "decoders with a KV cache (optimum text-generation-with-past)"
    columns = ("greedy tokens (fp32 build, `om-run --generate`)", "transformers' tokens")

    def row(self, name):
        import onnx

        import atc_py
        from om_run.generate.decode import Decoder, decoder_io, generate
        from om_run.load.loader import load_model
        from om_run.sim.host import Simulation
        ref = np.load(self.path / f"{name}.npz")
        parts = []
        for i in onnx.load(str(self.path / f"{name}.onnx"), load_external_data=False).graph.input:
            dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
            parts.append(f"{i.name}:[1,{dims[1]},0~32,{dims[3]}]" if i.name.startswith("past_key_values.")
                         else f"{i.name}:[1,1~32]")
        result = atc_py.build(str(self.path / f"{name}.onnx"), {**SOC, "ge.exec.precision_mode": MODES["fp32"],
                                                                "input_shape_range": ";".join(parts)})
        with tempfile.TemporaryDirectory() as d:
            om = Path(d) / "m.om"
            om.write_bytes(result.om)
            model = load_model(str(om))
            with np.errstate(all="ignore"):
                got = generate(Decoder(model, decoder_io(model, str(om))), [int(t) for t in ref["prompt"][0]],
                               ref["tokens"].shape[1], Simulation(model).run).tokens
        want = [int(t) for t in ref["tokens"][0]]
        return [" ".join(map(str, got)) + (" (equal)" if got == want else " (differ)"), " ".join(map(str, want))]


class TfOps(Section):
    directory, title = "tf_ops", "TensorFlow op cases (frozen by TensorFlow 2.21)"
    columns = ("ops", "max abs error fp32")

    def row(self, name):
        entry = self.manifest()[name]
        z = np.load(self.path / f"{name}.npz")
        exp = [z[k] for k in sorted((k for k in z.files if k.startswith("out_")), key=lambda k: int(k[4:]))]
        outs, _ = build_and_run(self.path / f"{name}.pb", [z[f"in_{k}"] for k in range(len(entry["inputs"]))],
                                {"ge.frameworkType": "3", "ge.exec.precision_mode": MODES["fp32"]})
        err = max((float(np.abs(g.astype(np.float64) - w).max()) if w.size else 0.0) for g, w in zip(outs, exp))
        return [", ".join(entry["ops"]), f"{err:.1e}"]


class TfTestdata(Section):
    directory, title = "tf", "TensorFlow test data (TF 2.21 frozen graphs)"
    columns = ("outputs", "max abs error fp32")

    def row(self, name):
        ins, exp = np.load(self.path / f"{name}.inputs.npz"), np.load(self.path / f"{name}.expected.npz")
        outs, _ = build_and_run(self.path / f"{name}.pb", [ins[k] for k in ins.files],
                                {"ge.frameworkType": "3", "ge.exec.precision_mode": MODES["fp32"]})
        err = max(float(np.abs(g.astype(np.float64) - exp[k]).max()) for g, k in zip(outs, exp.files))
        return [(self.path / f"{name}.outputs.txt").read_text().strip().replace("\n", ", "), f"{err:.1e}"]


SECTIONS = {s.directory: s for s in (RealModels(), Quantized(), Detection(), Flow(), Decoders(), TfOps(),
                                     TfTestdata())}


def uncovered() -> list[str]:
    """Directories of tests/data that neither have a table nor are named as holding no models."""
    return sorted(p.name for p in DATA.iterdir() if p.is_dir() and p.name not in SECTIONS and p.name not in NOT_MODELS)
