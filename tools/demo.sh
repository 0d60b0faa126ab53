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

step "small_transformer: the .om against onnxruntime, layer by layer (om-run compare, msit debug compare's flags)"
"$BIN/om-run" compare -gm models/small_transformer.onnx -om out/small_transformer.om -o out/compare --rows 5

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

step "gears: a vision model fed uint8 RGB through AIPP, --dynamic_batch_size 1,2,4, every gear against onnxruntime"
"$BIN/python" models/make_gear_models.py out/gears     # inputs + onnxruntime's outputs at every gear
"$BIN/atc-py" --model models/gears/vision_net.onnx --framework=5 --output=out/vision_gears --soc_version="$SOC" \
  --input_shape="image:-1,3,224,224" --dynamic_batch_size="1,2,4" --insert_op_conf=models/gears/vision_aipp.cfg
for b in 1 2 4; do
  "$BIN/om-run" --model out/vision_gears.om --dymBatch $b --input "out/gears/vision_net.b$b.inputs.npz" \
    --expected "out/gears/vision_net.b$b.expected.npz" | grep -E "gear [0-9]|loop 1|compare"
done

step "gears: a BERT encoder (token ids + mask) with --dynamic_dims over (batch, seq), every gear against onnxruntime"
"$BIN/atc-py" --model models/gears/bert_tiny.onnx --framework=5 --output=out/bert_gears --soc_version="$SOC" \
  --input_shape="input_ids:-1,-1;attention_mask:-1,-1" --dynamic_dims="1,16,1,16;2,32,2,32;4,64,4,64"
for g in 1,16 2,32 4,64; do
  b=${g%,*}; s=${g#*,}
  "$BIN/om-run" --model out/bert_gears.om --dymDims "input_ids:$b,$s;attention_mask:$b,$s" \
    --input "out/gears/bert_tiny.b${b}s$s.inputs.npz" --expected "out/gears/bert_tiny.b${b}s$s.expected.npz" \
    | grep -E "gear [0-9]|loop 1|compare"
done
"$BIN/atc-py" --mode=6 --om=out/bert_gears.om | grep -E "^input|^output|gear"

step "LLM decode: a 2-layer decoder with a static KV cache (tools/kv_decoder.py), greedy decoding of 8 tokens"
"$BIN/python" -m tools.kv_decoder out/kv --layout static
KV="input_ids:1,1;position_ids:1,1;cache_position:1"
for k in 0 1; do for io in key value; do KV="$KV;past_key_values.$k.$io:1,4,32,16"; done; done
"$BIN/atc-py" --model out/kv/decoder_static.onnx --framework=5 --output=out/kv/decoder_static --soc_version="$SOC" \
  --input_shape="$KV" --precision_mode=force_fp32
"$BIN/python" -c "import numpy as np; np.savez('out/kv/prompt.npz', input_ids=np.array([[5, 17, 42, 3, 99]]))"
"$BIN/om-run" --model out/kv/decoder_static.om --input out/kv/prompt.npz --generate 8 --output out/kv \
  --summary-json out/kv/generate.json | grep -E "decoder|generated|TTFT"

step "LLM serving: a tiny Qwen2-shaped config (dummy weights), 50 requests through vLLM's scheduler on the simulated NPU"
"$BIN/om-run" serve models/serve/tiny-qwen2 --load-format dummy --soc_version "$SOC" --max-model-len 1024 \
  --max-num-seqs 32 --num-prompts 50 --random-input-len 128 --random-output-len 32 --request-rate 8 --no-progress \
  --save-result --result-filename out/serve/tiny-qwen2.json --report out/serve/tiny-qwen2.html

step "Several NPUs: hccl_test's all-reduce table on an Atlas 800 A2 (8 x 910B, HCCS mesh), simulated"
"$BIN/om-run" hccl-test all_reduce_test -b 8K -e 8M -f 4 -p 8

step "om-sweep: every sample x 2 SoCs x tiling sink x precision (sweep.yaml) -> table + report"
"$BIN/om-sweep" run sweep.yaml -o out/sweep
