"""torchvision and Hugging Face models (random weights, tiny configs) exported to ONNX two ways: the
TorchScript exporter at opset 17 and the dynamo exporter (torch.export + onnxscript) at opset 18.
`python -m tools.real_models.torch_models [NAME ...]` (dev venv: torch, torchvision, transformers, onnxscript,
onnxruntime) rewrites the named fixtures (all by default)."""
from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from torch import nn

from .common import fp16_rounded_onnx, rel_err, run_onnx, save_fixture

EXPORTS = (("opset17", 17, False), ("dynamo18", 18, True))


@contextlib.contextmanager
def narrow_nn(module, div: int):
    """torchvision ResNet has fixed widths (64..512): inside this context the module's nn.Conv2d/BatchNorm2d/
    Linear take channels // div (the image's 3 channels and the classes stay), so ResNet(BasicBlock, ...)
    builds a thin copy with the same structure."""
    real = module.nn
    s = lambda c: c if c <= 3 else max(4, c // div)  # noqa: E731

    class Conv2d(real.Conv2d):
        def __init__(self, i, o, *a, **k):
            super().__init__(s(i), s(o), *a, **k)

    class BatchNorm2d(real.BatchNorm2d):
        def __init__(self, c, *a, **k):
            super().__init__(s(c), *a, **k)

    class Linear(real.Linear):
        def __init__(self, i, o, *a, **k):
            super().__init__(s(i), o, *a, **k)

    shim = type("nn", (), {k: getattr(real, k) for k in dir(real) if not k.startswith("__")})
    shim.Conv2d, shim.BatchNorm2d, shim.Linear = Conv2d, BatchNorm2d, Linear
    module.nn = shim
    try:
        yield
    finally:
        module.nn = real


def _randomize_bn(model: nn.Module, seed: int) -> None:
    """Random running statistics and affine parameters, so BatchNorm is not an identity in eval mode."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
            if m.weight is not None:
                m.weight.data.copy_(torch.rand(m.weight.shape, generator=g) * 0.5 + 0.75)
                m.bias.data.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)


def _randomize_zeros(model: nn.Module, seed: int) -> None:
    """Parameters a model initialises to zero (torchvision ViT's head and class token, biases) get small random
    values: with random weights an all-zero head would make every output 0 and test nothing."""
    g = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        if p.numel() and not p.detach().abs().sum():
            p.data.copy_(torch.randn(p.shape, generator=g) * 0.05)


def image(n: int, c: int = 3, seed: int = 0) -> torch.Tensor:
    """A batch of 2 (a batch of 1 would be specialised by torch.export, not kept dynamic)."""
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((2, c, n, n)).astype(np.float32))


# ---- torchvision ---------------------------------------------------------------------------------------
def tv_resnet():
    from torchvision.models import resnet
    with narrow_nn(resnet, 8):
        return resnet.ResNet(resnet.BasicBlock, [1, 1, 1, 1], num_classes=10), (image(64),)


def tv_mobilenet_v3():
    from torchvision.models import mobilenet_v3_small
    return mobilenet_v3_small(num_classes=10, width_mult=0.25), (image(64),)


def tv_efficientnet():
    from torchvision.models import efficientnet as ef
    setting, last = ef._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return ef.EfficientNet(setting, 0.2, num_classes=10, last_channel=last), (image(64),)


def tv_regnet():
    from torchvision.models import regnet
    params = regnet.BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8)
    return regnet.RegNet(params, num_classes=10, stem_width=8), (image(64),)


def tv_shufflenet_v2():
    from torchvision.models import ShuffleNetV2
    return ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), (image(64),)


def tv_convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    cfg = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
    return ConvNeXt(cfg, stochastic_depth_prob=0.0, num_classes=10), (image(64),)


def tv_vit():
    from torchvision.models import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                             num_classes=10), (image(32),)


def tv_swin():
    from torchvision.models import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                           stochastic_depth_prob=0.0, num_classes=10), (image(64),)


class _DictOut(nn.Module):
    """A model whose forward returns a dict (or an output object): its tensors in a fixed order."""

    def __init__(self, model: nn.Module, keys: list[str], call=None):
        super().__init__()
        self.model, self.keys, self.call = model, keys, call

    def forward(self, *args):
        out = self.call(self.model, *args) if self.call else self.model(*args)
        return tuple(out[k] for k in self.keys)


def tv_deeplabv3():
    from torchvision.models import mobilenet_v3_small
    from torchvision.models.segmentation import deeplabv3 as dl
    backbone = mobilenet_v3_small(width_mult=0.25, reduced_tail=True, dilated=True)
    model = dl._deeplabv3_mobilenetv3(backbone, num_classes=4, aux=False)
    c = model.classifier[0].convs[0][0].in_channels     # the ASPP, 16 channels instead of 256
    model.classifier = nn.Sequential(dl.ASPP(c, [12, 24, 36], 16), nn.Conv2d(16, 16, 3, padding=1, bias=False),
                                     nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 4, 1))
    return _DictOut(model, ["out"]), (image(64),)


class _TwoScales(nn.Module):
    """A thin MobileNetV3 cut at stride 16 and 32: the two feature maps an SSDlite head reads."""

    def __init__(self, features: nn.Sequential, cut: int):
        super().__init__()
        self.low, self.high = features[:cut], features[cut:]

    def forward(self, x):
        a = self.low(x)
        return [a, self.high(a)]


def tv_ssdlite_head():
    from functools import partial

    from torchvision.models import mobilenet_v3_small
    from torchvision.models.detection import ssdlite
    feats = mobilenet_v3_small(width_mult=0.25, reduced_tail=True).features
    cut = 9                                             # after the last stride-16 block
    body = _TwoScales(feats, cut)
    chans = [feats[cut - 1].out_channels, feats[-1].out_channels]
    head = ssdlite.SSDLiteHead(chans, [6, 6], 5, partial(nn.BatchNorm2d, eps=0.001, momentum=0.03))
    model = nn.ModuleDict({"backbone": body, "head": head})
    return _DictOut(model, ["bbox_regression", "cls_logits"], lambda m, x: m["head"](m["backbone"](x))), \
        (image(64),)


# ---- Hugging Face --------------------------------------------------------------------------------------
def _tokens(n: int, vocab: int = 100, seed: int = 1):
    ids = torch.from_numpy(np.random.default_rng(seed).integers(1, vocab, (2, n)).astype(np.int64))
    mask = torch.ones((2, n), dtype=torch.int64)
    mask[1, -3:] = 0          # the second sequence has a padded tail
    return ids, mask


def _hf(cls, config, attn: str):
    config._attn_implementation = attn
    torch.manual_seed(0)
    return cls(config)


def hf_bert(attn):
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    m = _hf(BertModel, cfg, attn)
    return _DictOut(m, ["last_hidden_state", "pooler_output"],
                    lambda m, i, a: m(input_ids=i, attention_mask=a)), _tokens(16)


def hf_gpt2(attn):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64, use_cache=False)
    m = _hf(GPT2LMHeadModel, cfg, attn)
    return _DictOut(m, ["logits"], lambda m, i, a: m(input_ids=i, attention_mask=a, use_cache=False)), _tokens(16)


def hf_llama(attn):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    m = _hf(LlamaForCausalLM, cfg, attn)
    return _DictOut(m, ["logits"], lambda m, i, a: m(input_ids=i, attention_mask=a, use_cache=False)), _tokens(16)


def hf_t5_encoder(attn):
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2)
    m = _hf(T5EncoderModel, cfg, attn)
    return _DictOut(m, ["last_hidden_state"], lambda m, i, a: m(input_ids=i, attention_mask=a)), _tokens(16)


def hf_vit(attn):
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64)
    m = _hf(ViTModel, cfg, attn)
    return _DictOut(m, ["last_hidden_state", "pooler_output"]), (image(32),)


def hf_whisper_encoder(attn):
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    cfg = WhisperConfig(vocab_size=100, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                        encoder_ffn_dim=64, decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=64,
                        num_mel_bins=16, max_source_positions=32, max_target_positions=32)
    m = _hf(WhisperEncoder, cfg, attn)
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((2, 16, 64)).astype(np.float32))
    return _DictOut(m, ["last_hidden_state"]), (x,)


def hf_wav2vec2(attn):
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    cfg = Wav2Vec2Config(vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, conv_dim=(16, 16, 16), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, do_stable_layer_norm=False)
    m = _hf(Wav2Vec2Model, cfg, attn)
    x = torch.from_numpy(np.random.default_rng(3).standard_normal((2, 1600)).astype(np.float32))
    return _DictOut(m, ["last_hidden_state"]), (x,)


TORCHVISION = {"tv_resnet": tv_resnet, "tv_mobilenet_v3": tv_mobilenet_v3, "tv_efficientnet": tv_efficientnet,
               "tv_regnet": tv_regnet, "tv_shufflenet_v2": tv_shufflenet_v2, "tv_convnext": tv_convnext,
               "tv_vit": tv_vit, "tv_swin": tv_swin, "tv_deeplabv3": tv_deeplabv3, "tv_ssdlite_head": tv_ssdlite_head}
HF = {"hf_bert": hf_bert, "hf_gpt2": hf_gpt2, "hf_llama": hf_llama, "hf_t5_encoder": hf_t5_encoder,
      "hf_vit": hf_vit, "hf_whisper_encoder": hf_whisper_encoder, "hf_wav2vec2": hf_wav2vec2}
INPUT_NAMES = {"hf_bert": ["input_ids", "attention_mask"], "hf_gpt2": ["input_ids", "attention_mask"],
               "hf_llama": ["input_ids", "attention_mask"], "hf_t5_encoder": ["input_ids", "attention_mask"],
               "hf_whisper_encoder": ["input_features"], "hf_wav2vec2": ["input_values"]}
# the axes exported as symbolic dims, as users export them (atc-py then needs --input_shape); others: batch
TEXT = [{0: "batch", 1: "sequence"}, {0: "batch", 1: "sequence"}]
DYNAMIC = {"hf_bert": TEXT, "hf_gpt2": TEXT, "hf_llama": TEXT, "hf_t5_encoder": TEXT,
           "hf_wav2vec2": [{0: "batch", 1: "samples"}]}
OUTPUT_NAMES = {"hf_bert": ["last_hidden_state", "pooler_output"], "hf_vit": ["last_hidden_state", "pooler_output"],
                "tv_deeplabv3": ["out"], "tv_ssdlite_head": ["bbox_regression", "cls_logits"],
                "hf_gpt2": ["logits"], "hf_llama": ["logits"]}


def export(model, args, opset: int, dynamo: bool, in_names, out_names, axes) -> onnx.ModelProto:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if dynamo:
            shapes = tuple({a: torch.export.Dim.AUTO for a in ax} for ax in axes)
            if isinstance(model, _DictOut):          # forward(*args): the args are one tuple
                shapes = (shapes,)
            prog = torch.onnx.export(model, args, dynamo=True, opset_version=opset, input_names=in_names,
                                     output_names=out_names, verbose=False, dynamic_shapes=shapes)
            with tempfile.TemporaryDirectory() as d:
                prog.save(f"{d}/m.onnx", external_data=False)
                return onnx.load(f"{d}/m.onnx")
        buf = io.BytesIO()
        torch.onnx.export(model, args, buf, opset_version=opset, dynamo=False, input_names=in_names,
                          output_names=out_names, do_constant_folding=True,
                          dynamic_axes=dict(zip(in_names, axes)))
        return onnx.load_from_string(buf.getvalue())


def strip(m: onnx.ModelProto) -> onnx.ModelProto:
    """Doc strings and metadata (the exporters' stack traces) out: they are most of a tiny model's bytes."""
    m.graph.doc_string = ""
    for n in m.graph.node:
        n.doc_string = ""
        del n.metadata_props[:]
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        del v.metadata_props[:]
    for f in m.functions:
        for n in f.node:
            n.doc_string = ""
            del n.metadata_props[:]
    del m.metadata_props[:]
    return m


def make(base: str, variant: str, build) -> None:
    torch.manual_seed(0)
    model, args = build()
    model.eval()
    _randomize_bn(model, 0)
    _randomize_zeros(model, 1)
    with torch.no_grad():
        ref = model(*args)
    ref = [ref] if isinstance(ref, torch.Tensor) else list(ref)
    ref = [r.numpy() for r in ref]
    ins = [a.numpy() for a in args]
    in_names = INPUT_NAMES.get(base, ["x"])
    out_names = OUTPUT_NAMES.get(base, ["last_hidden_state"] if base.startswith("hf_") else ["logits"])
    axes = DYNAMIC.get(base, [{0: "batch"}] * len(args))
    for tag, opset, dynamo in EXPORTS:
        name = f"{base}{variant}.{tag}"
        try:
            m = strip(export(model, args, opset, dynamo, in_names, out_names, axes))
        except Exception as e:  # noqa: BLE001 -- the dynamo exporter cannot take the model: TorchScript at that opset instead
            print(f"{name}: export failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            if not dynamo:
                continue
            name, dynamo = f"{base}{variant}.opset{opset}", False
            m = strip(export(model, args, opset, False, in_names, out_names, axes))
        names = [i.name for i in m.graph.input if i.name not in {t.name for t in m.graph.initializer}]
        feeds = dict(zip(names, ins))
        got = run_onnx(m, feeds)
        errs = [rel_err(g, r) for g, r in zip(got, ref)]
        if max(errs) > 1e-4:
            print(f"{name}: onnxruntime differs from PyTorch by {max(errs):.2e}; not written", flush=True)
            continue
        emu = run_onnx(fp16_rounded_onnx(m), feeds)
        save_fixture(name, m.SerializeToString(), "onnx", ins, ref, emu, {
            "framework": "onnx", "source": f"{'torchvision' if base.startswith('tv_') else 'transformers'} "
                                           f"{base[3:]}{variant.replace('.', ' ')} (random weights, tiny config)",
            "exporter": f"torch.onnx.export {'dynamo=True' if dynamo else 'TorchScript'}, opset {opset}",
            "inputs": names, "outputs": [o.name for o in m.graph.output],
            "symbolic_dims": sorted({d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim
                                     if d.dim_param}),
            "emu16_err": [rel_err(e, r) for e, r in zip(emu, ref)]})


def main(argv: list[str]) -> None:
    todo = []
    for base, fn in TORCHVISION.items():
        todo.append((base, "", fn))
    for base, fn in HF.items():
        for attn in ("sdpa", "eager"):
            todo.append((base, f".{attn}", lambda fn=fn, attn=attn: fn(attn)))
    for base, variant, fn in todo:
        if argv and base not in argv and f"{base}{variant}" not in argv:
            continue
        make(base, variant, fn)


if __name__ == "__main__":
    main(sys.argv[1:])
