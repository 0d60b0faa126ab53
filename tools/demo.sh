#!/usr/bin/env bash
# make demo: compile the samples in models/ with atc-py and run them with om-run.
set -euo pipefail
BIN=${BIN:-.venv/bin}
SOC=${SOC:-Ascend910B1}
PLUGIN=plugins/example_custom_ops.py
mkdir -p out

step() { printf '\n== %s\n' "$*"; }

for m in small_cnn small_transformer; do
  step "$m: compile for $SOC, then run on random inputs"
  "$BIN/atc-py" --model "models/$m.onnx" --framework=5 --output="out/$m" --soc_version="$SOC"
  "$BIN/om-run" "out/$m.om"
done

for sink in 0 1; do
  step "decoder_step with --tiling_schedule_optimize=$sink (IncreFlashAttention + GroupedMatmul MoE)"
  "$BIN/atc-py" --model models/decoder_step.onnx --framework=5 --output="out/decoder_sink$sink" \
    --soc_version="$SOC" --tiling_schedule_optimize=$sink
  "$BIN/om-run" --model "out/decoder_sink$sink.om" --input models/decoder_step.inputs.npz --output "out/decoder_sink$sink"
done
step "decoder_step: the two variants give the same outputs"
"$BIN/python" - <<'PY'
import numpy as np
a = np.load("out/decoder_sink0/decoder_sink0_output_0.npy")
b = np.load("out/decoder_sink1/decoder_sink1_output_0.npy")
print(f"max |sink0 - sink1| = {np.abs(a - b).max():.3g}")
PY

step "superkernel: projection + IncreFlashAttention + residual fused into one SUPER_KERNEL task"
"$BIN/atc-py" --model models/superkernel.onnx --framework=5 --output=out/superkernel --soc_version="$SOC" \
  --tiling_schedule_optimize=1
"$BIN/om-run" --model out/superkernel.om --input models/superkernel.inputs.npz

step "custom_op: a custom operator package ($PLUGIN) whose tiling sinks to the AICPU"
"$BIN/atc-py" --model models/custom_op.onnx --framework=5 --output=out/custom_op --soc_version="$SOC" \
  --tiling_schedule_optimize=1 --op_plugin="$PLUGIN"
"$BIN/om-run" --model out/custom_op.om --input models/custom_op.inputs.npz --op_plugin "$PLUGIN"
