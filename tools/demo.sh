#!/usr/bin/env bash
# make demo: compile the samples in models/ with atc-py and run them with om-run.
set -euo pipefail
BIN=${BIN:-.venv/bin}
SOC=${SOC:-Ascend910B1}
PLUGIN=plugins/example_custom_ops.py
mkdir -p out

step() { printf '\n== %s\n' "$*"; }

for m in small_cnn small_transformer inception_block; do
  step "$m: compile for $SOC, then run on random inputs"
  "$BIN/atc-py" --model "models/$m.onnx" --framework=5 --output="out/$m" --soc_version="$SOC"
  "$BIN/om-run" "out/$m.om"
done

step "tf_lenet (TensorFlow frozen graph, NHWC): compile with --framework=3, run on its inputs"
"$BIN/atc-py" --model models/tf_lenet.pb --framework=3 --output=out/tf_lenet --soc_version="$SOC"
"$BIN/om-run" --model out/tf_lenet.om --input models/tf_lenet.inputs.npz --output out/tf_lenet

for soc in Ascend910B1 Ascend310P3; do
  for sink in 0 1; do
    step "decoder_step on $soc with --tiling_schedule_optimize=$sink (IncreFlashAttention + GroupedMatmul MoE)"
    "$BIN/atc-py" --model models/decoder_step.onnx --framework=5 --output="out/decoder_${soc}_sink$sink" \
      --soc_version="$soc" --tiling_schedule_optimize=$sink --precision_mode=must_keep_origin_dtype
    "$BIN/om-run" --model "out/decoder_${soc}_sink$sink.om" --input models/decoder_step.inputs.npz \
      --output "out/decoder_${soc}_sink$sink" --summary-json "out/decoder_${soc}_sink$sink.summary.json"
  done
done
step "decoder_step: the two variants give the same outputs"
"$BIN/python" - <<'PY'
import numpy as np
for soc in ("Ascend910B1", "Ascend310P3"):
    a = np.load(f"out/decoder_{soc}_sink0/decoder_{soc}_sink0_output_0.npy")
    b = np.load(f"out/decoder_{soc}_sink1/decoder_{soc}_sink1_output_0.npy")
    print(f"{soc}: max |sink0 - sink1| = {np.abs(a - b).max():.3g}")
PY

step "prefetch hazard: the same decoder with the NOPs cut (--debug_sink_nops=0), run with --allow-hazards"
"$BIN/atc-py" --model models/decoder_step.onnx --framework=5 --output=out/decoder_no_nops --soc_version="$SOC" \
  --tiling_schedule_optimize=1 --debug_sink_nops=0 --precision_mode=must_keep_origin_dtype
"$BIN/om-run" --model out/decoder_no_nops.om --input models/decoder_step.inputs.npz --allow-hazards \
  --profile out/decoder_no_nops.profile | grep -E "HAZARD|loop 1" || true

step "superkernel: projection + IncreFlashAttention + residual fused into one SUPER_KERNEL task"
"$BIN/atc-py" --model models/superkernel.onnx --framework=5 --output=out/superkernel --soc_version="$SOC" \
  --tiling_schedule_optimize=1
"$BIN/om-run" --model out/superkernel.om --input models/superkernel.inputs.npz

step "custom_op: a custom operator package ($PLUGIN) whose tiling sinks to the AICPU"
"$BIN/atc-py" --model models/custom_op.onnx --framework=5 --output=out/custom_op --soc_version="$SOC" \
  --tiling_schedule_optimize=1 --op_plugin="$PLUGIN"
"$BIN/om-run" --model out/custom_op.om --input models/custom_op.inputs.npz --op_plugin "$PLUGIN"

step "om-sweep: every sample x 2 SoCs x tiling sink x precision (sweep.yaml) -> table + report"
"$BIN/om-sweep" run sweep.yaml -o out/sweep
