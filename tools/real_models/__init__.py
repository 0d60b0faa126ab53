"""Dev-only generators of tests/data/real_models/: small random-weight copies of torchvision, Hugging Face and
Keras models, exported the way users export them, with the inputs and the framework's own outputs.

Needs PyTorch, torchvision, transformers, onnxscript, onnxruntime and TensorFlow/Keras — none of them a
dependency of atc-py or of `make test`; install them in a venv outside the repo (see docs/real-models.md):

    python -m tools.real_models.torch_models   # torchvision + Hugging Face -> ONNX (opset 17 and dynamo 18)
    python -m tools.real_models.keras_models   # Keras 3 and tf-keras -> frozen GraphDef .pb

Each fixture NAME is NAME.onnx or NAME.pb plus NAME.npz holding in_K (inputs), out_K (the framework's
outputs) and emu16_K (what fp16 itself costs: the same model with every weight and every float activation
rounded to fp16, computed by onnxruntime resp. TensorFlow); manifest.json describes each one (framework,
source model, exporter, input/output names, input format).
"""
