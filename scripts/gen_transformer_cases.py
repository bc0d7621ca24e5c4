#!/usr/bin/env python3
"""Make the micro transformer cases of `tests/transformers/` (run by `tests/transformers.rs`).

Three routes into Relax, as Apache TVM 0.27 prints them (`mod.script()`):
  nn      models written with `tvm.relax.frontend.nn` (Llama with grouped-query attention and a
          TE rotary kernel; GPT-2), `export_tvm` with a symbolic `seq_len`, weights as parameters
          (entry `forward`). Reference: `tvm.compile(target="llvm")`.
  export  Hugging Face `transformers` models (random init from a config, fixed seed, nothing
          downloaded) through `torch.export` + `from_exported_program(keep_params_as_input=True)`,
          static and symbolic sequence length. Reference: torch.
  onnx    the same models through `torch.onnx.export` + `from_onnx(keep_params_in_input=True)`,
          static and (where the importer can) symbolic. Reference: ONNX Runtime.
Tensor constants are lifted to extra trailing parameters `lifted_const<k>` (TVM 0.27 cannot
print a module holding tensor constants).

Usage (a venv with apache-tvm==0.27.0.post1, numpy, torch, transformers, onnx, onnxscript,
onnxruntime; the project's build and tests never need Python):
  python scripts/gen_transformer_cases.py tests/transformers [--only NAME,...]

Each case directory NAME/ holds `prog_<kind>.py` (kind: static or dyn), `data.bin` (every array,
raw little-endian, back to back) and `case.json`:
  {"route": ..., "model": ..., "dtype": ..., "entry": ..., "lenient": bool,
   "arrays": {"<name>": {"dtype": ..., "shape": [...], "offset": bytes, "nbytes": ...}},
   "progs": [{"prog": "prog_dyn.py", "symbolic": true, "weights": [array names],
              "runs": [{"seq_len": L, "inputs": [array names], "expected": array name}]}]}
Arguments are positional: the inputs then the weights.
"""
import argparse, json, math, os, shutil, sys, traceback

import numpy as np
import torch
import tvm
from tvm import relax, te, tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

SEQS = [3, 6]  # the two lengths run for a symbolic program
STATIC_SEQ = 6


class Case:
    """The arrays and manifest of one case directory."""

    def __init__(self, name, **meta):
        self.name, self.meta, self.arrays, self.blob = name, dict(meta), {}, bytearray()
        self.meta.setdefault("lenient", False)
        self.meta["progs"] = []

    def add(self, name, arr):
        arr = np.require(np.asarray(arr), requirements="C")  # keeps 0-d arrays 0-d
        if name in self.arrays:
            raise ValueError(name)
        dt = {np.dtype("float32"): "float32", np.dtype("float16"): "float16",
              np.dtype("int64"): "int64", np.dtype("int32"): "int32", np.dtype("bool"): "bool"}[arr.dtype]
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        self.arrays[name] = {"dtype": dt, "shape": list(arr.shape), "offset": len(self.blob),
                             "nbytes": len(data)}
        self.blob += data
        return name

    def write(self, root, progs):
        d = os.path.join(root, self.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for fname, text in progs.items():
            with open(os.path.join(d, fname), "w") as f:
                f.write(text)
        with open(os.path.join(d, "data.bin"), "wb") as f:
            f.write(self.blob)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({**self.meta, "arrays": self.arrays}, f, indent=1)
        print(f"{d}: {len(self.blob) / 1024:.1f} KiB of data, {len(self.meta['progs'])} program(s)")


def rotary(x: nn.Tensor, theta: float = 500000.0) -> nn.Tensor:
    """Rotate-half RoPE over [b, s, h, d] as a TE kernel (computed in float32)."""
    D = int(x.shape[-1])
    dtype = x.dtype

    def te_rope(x: te.Tensor):
        half = D // 2

        def f(b, s, h, d):
            pos = s.astype("float32")
            expo = (tirx.floormod(d, half) * 2).astype("float32") / tirx.const(float(D), "float32")
            freq = pos / tirx.power(tirx.const(theta, "float32"), expo)
            xv = x[b, s, h, d].astype("float32")
            rot = tirx.if_then_else(d < half, -x[b, s, h, d + half], x[b, s, h, d - half]).astype("float32")
            return (tirx.cos(freq) * xv + tirx.sin(freq) * rot).astype(dtype)

        return te.compute(x.shape, f, name="rotary")

    return op.tensor_expr_op(te_rope, "rotary_embedding", args=[x])


def attention(q, k, v, heads, kv_heads, head_dim, impl, dtype):
    """q: [b, s, heads, d]; k, v: [b, s, kv_heads, d] -> [b, s, heads * d]."""
    b, s, _, _ = q.shape
    if impl == "sdpa":
        if kv_heads != heads:
            k = op.repeat(k, heads // kv_heads, axis=2)
            v = op.repeat(v, heads // kv_heads, axis=2)
        o = op.scaled_dot_product_attention(q, k, v, is_causal=True)
        return op.reshape(o, (b, s, heads * head_dim))
    if kv_heads != heads:
        k = op.repeat(k, heads // kv_heads, axis=2)
        v = op.repeat(v, heads // kv_heads, axis=2)
    q = op.permute_dims(q, [0, 2, 1, 3])
    k = op.permute_dims(k, [0, 2, 3, 1])
    v = op.permute_dims(v, [0, 2, 1, 3])
    w = op.matmul(q, k) / math.sqrt(head_dim)
    if dtype != "float32":
        w = op.astype(w, "float32")
    mask = op.triu(op.full([s, s], tirx.min_value("float32"), "float32"), 1)
    w = op.softmax(w + mask, axis=-1)
    if dtype != "float32":
        w = op.astype(w, dtype)
    o = op.matmul(w, v)
    o = op.permute_dims(o, [0, 2, 1, 3])
    return op.reshape(o, (b, s, heads * head_dim))


class LlamaAttention(nn.Module):
    def __init__(self, c, impl):
        self.c, self.impl = c, impl
        self.hd = c["hidden"] // c["heads"]
        self.qkv_proj = nn.Linear(c["hidden"], (c["heads"] + 2 * c["kv_heads"]) * self.hd, bias=False)
        self.o_proj = nn.Linear(c["heads"] * self.hd, c["hidden"], bias=False)

    def forward(self, x):
        c = self.c
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x), (b, s, c["heads"] + 2 * c["kv_heads"], self.hd))
        q, k, v = op.split(qkv, [c["heads"], c["heads"] + c["kv_heads"]], axis=2)
        q, k = rotary(q), rotary(k)
        return self.o_proj(attention(q, k, v, c["heads"], c["kv_heads"], self.hd, self.impl, x.dtype))


class LlamaMLP(nn.Module):
    def __init__(self, c):
        self.gate_up_proj = nn.Linear(c["hidden"], 2 * c["inter"], bias=False)
        self.down_proj = nn.Linear(c["inter"], c["hidden"], bias=False)

    def forward(self, x):
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class LlamaLayer(nn.Module):
    def __init__(self, c, impl):
        self.input_layernorm = nn.RMSNorm(c["hidden"], -1, 1e-5, bias=False)
        self.self_attn = LlamaAttention(c, impl)
        self.post_attention_layernorm = nn.RMSNorm(c["hidden"], -1, 1e-5, bias=False)
        self.mlp = LlamaMLP(c)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, c, impl):
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList([LlamaLayer(c, impl) for _ in range(c["layers"])])
        self.norm = nn.RMSNorm(c["hidden"], -1, 1e-5, bias=False)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, input_ids):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        if logits.dtype != "float32":
            logits = logits.astype("float32")
        return logits


class GPT2Attention(nn.Module):
    def __init__(self, c, impl):
        self.c, self.impl = c, impl
        self.hd = c["hidden"] // c["heads"]
        self.c_attn = nn.Linear(c["hidden"], 3 * c["hidden"], bias=True)
        self.c_proj = nn.Linear(c["hidden"], c["hidden"], bias=True)

    def forward(self, x):
        b, s, _ = x.shape
        qkv = op.reshape(self.c_attn(x), (b, s, 3 * self.c["heads"], self.hd))
        q, k, v = op.split(qkv, 3, axis=2)
        h = self.c["heads"]
        return self.c_proj(attention(q, k, v, h, h, self.hd, self.impl, x.dtype))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        self.c_fc = nn.Linear(c["hidden"], 4 * c["hidden"], bias=True)
        self.c_proj = nn.Linear(4 * c["hidden"], c["hidden"], bias=True)

    def forward(self, x):
        return self.c_proj(op.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    def __init__(self, c, impl):
        self.ln_1 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.attn = GPT2Attention(c, impl)
        self.ln_2 = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, c, impl):
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Embedding(c["positions"], c["hidden"])
        self.h = nn.ModuleList([GPT2Block(c, impl) for _ in range(c["layers"])])
        self.ln_f = nn.LayerNorm(c["hidden"], eps=1e-5)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, input_ids):
        _, s = input_ids.shape
        pos = op.arange(0, s, dtype="int32")
        x = self.wte(input_ids) + self.wpe(op.reshape(pos, (1, s)))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if logits.dtype != "float32":
            logits = logits.astype("float32")
        return logits


def init_weight(name, shape, rng):
    if name.endswith("norm.weight") or name.split(".")[-2].startswith("ln") and name.endswith("weight"):
        return 1.0 + 0.1 * rng.standard_normal(shape)
    if name.endswith("bias"):
        return 0.02 * rng.standard_normal(shape)
    if len(shape) == 2 and ("embed" in name or name.startswith("wte") or name.startswith("wpe")):
        return rng.standard_normal(shape)
    fan_in = shape[-1]
    return rng.standard_normal(shape) / math.sqrt(fan_in)


def lift_constants(mod):
    """Tensor constants (not scalars) of main become extra parameters after the weights.

    TVM 0.27 (tvm-ffi 0.1.15) segfaults in tvm::ffi::ToJSONGraph when it prints a module with a
    tensor constant (`mod.script(show_meta=True)`, `tvm.ir.save_json`), so such a module cannot
    be handed over as text; lifting them is the only change made to what the importer produced.
    Returns (mod, [arrays], [names])."""
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator
    vars_, vals = [], []

    @mutator
    class Lift(PyExprMutator):
        def visit_generic_const_(self, c):
            data = c.value
            if not hasattr(data, "shape") or len(data.shape) == 0:
                return c
            v = relax.Var(f"lifted_const{len(vars_)}", relax.TensorType(list(data.shape), data.dtype))
            vars_.append(v)
            vals.append(data.numpy())
            return v

    f = mod["main"]
    body = Lift().visit_expr(f.body)
    if not vars_:
        return mod, [], []
    nf = relax.Function(list(f.params) + vars_, body, f.ret_ty, f.is_pure, f.attrs)
    mod = mod.clone() if hasattr(mod, "clone") else mod
    mod["main"] = nf
    return mod, vals, [v.name_hint if hasattr(v, "name_hint") else v.name for v in vars_]


def script_of(mod):
    """mod.script() (no metadata: constants were lifted to parameters)."""
    s = mod.script(show_meta=False)
    if "metadata[" in s:
        raise RuntimeError("the module still has metadata constants")
    return s


def dynamic_shapes(spec, dmax):
    """torch.export's dynamic_shapes: the symbolic dimension (spec.dim, spec.dmin..dmax, a multiple
    of spec.step) on each input's symbolic axis (spec.dyn), else None."""
    if spec.step > 1:
        dim = spec.step * torch.export.Dim(f"{spec.dim}_div{spec.step}", min=spec.dmin // spec.step,
                                           max=dmax // spec.step)
    else:
        dim = torch.export.Dim(spec.dim, min=spec.dmin, max=dmax)
    return {n: ({spec.dyn[n]: dim} if n in spec.dyn else None) for n in spec.names}


def import_export(spec, example, dynamic):
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.torch import from_exported_program
    ds = None
    if dynamic:
        ds = dynamic_shapes(spec, spec.dmax)
    with torch.no_grad():
        ep = torch.export.export(spec.w, tuple(torch.from_numpy(x) for x in example), dynamic_shapes=ds)
    mod = from_exported_program(ep, keep_params_as_input=True)
    mod, params = detach_params(mod)
    mod, consts, cnames = lift_constants(mod)
    return mod, [p.numpy() for p in params.get("main", [])] + consts, cnames


def export_onnx(spec, example, dynamic, path, dynamo):
    args = tuple(torch.from_numpy(x) for x in example)
    kw = dict(input_names=spec.names, output_names=["out"])
    errors = []
    for dynamo in (dynamo,):
        try:
            if dynamic:
                if dynamo:
                    kw2 = dict(dynamic_shapes=dynamic_shapes(spec, max(spec.dmax, 4096)))
                else:
                    kw2 = dict(dynamic_axes={**{n: {a: spec.dim} for n, a in spec.dyn.items()},
                                             "out": {spec.out_axis: spec.dim}})
            else:
                kw2 = {}
            with torch.no_grad():
                torch.onnx.export(spec.w, args, path, dynamo=dynamo, **kw, **kw2)
            return "dynamo" if dynamo else "torchscript", errors
        except Exception as e:  # record and try the other exporter
            errors.append(f"torch.onnx.export(dynamo={dynamo}): {type(e).__name__}: {str(e)[:2000]}")
    raise RuntimeError("\n".join(errors))


def import_onnx(path):
    import onnx
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.onnx import from_onnx
    m = onnx.load(path)
    mod = from_onnx(m, keep_params_in_input=True)
    mod, params = detach_params(mod)
    mod, consts, cnames = lift_constants(mod)
    return mod, [p.numpy() for p in params.get("main", [])] + consts, cnames



NN_CONFIGS = {
    "llama": dict(vocab=32, hidden=16, layers=2, heads=2, kv_heads=1, inter=32),
    "gpt2": dict(vocab=32, hidden=16, layers=2, heads=2, positions=16),
}


def nn_case(root, model, dtype):
    c = NN_CONFIGS[model]
    m = (Llama if model == "llama" else GPT2)(c, "explicit")
    if dtype != "float32":
        m.to(dtype)
    mod, named = m.export_tvm(spec={"forward": {"input_ids": spec.Tensor([1, "seq_len"], "int32")}})
    case = Case(f"nn_{model}_{'f16' if dtype == 'float16' else 'f32'}", route="nn", model=model,
                dtype=dtype, entry="forward", config=c,
                reference="tvm.compile(target=llvm) + relax.VirtualMachine")
    rng = np.random.default_rng(0)
    weights, wnames = [], []
    for k, (name, p) in enumerate(named):
        arr = init_weight(name, [int(d) for d in p.shape], rng).astype(p.dtype)
        weights.append(arr)
        wnames.append(case.add(f"w{k:03d}", arr))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    runs = []
    for L in SEQS:
        ids = rng.integers(0, c["vocab"], size=(1, L)).astype("int32")
        out = vm["forward"](*[tvm.runtime.tensor(x) for x in [ids] + weights]).numpy()
        runs.append({"seq_len": L, "inputs": [case.add(f"ids_{L}", ids)],
                     "expected": case.add(f"expected_{L}", out)})
    case.meta["progs"].append({"prog": "prog_dyn.py", "symbolic": True, "weights": wnames, "runs": runs})
    case.write(root, {"prog_dyn.py": mod.script()})


class HFSpec:
    """A wrapped Hugging Face model and how to feed it.

    w: the torch module (positional inputs `names`, one float32 output); make(n, rng): the inputs
    for size n of the symbolic dimension; dyn: {input name: axis} that dimension's axis in each
    input it appears in (named `dim`, range dmin..dmax for torch.export); sizes: the sizes run
    for the symbolic program; static: the size of the static program; out_axis: the axis of the
    output that follows it; no_dyn: why there is no symbolic program (None: there is one); step:
    the symbolic dimension is `step` times a symbol (a derived torch.export.Dim)."""

    def __init__(self, w, names, make, dyn, dim="seq_len", sizes=None, static=STATIC_SEQ,
                 dmin=2, dmax=16, out_axis=1, no_dyn=None, step=1):
        self.w, self.names, self.make, self.dyn, self.dim, self.step = w, names, make, dyn, dim, step
        self.sizes, self.static = list(sizes or SEQS), static
        self.dmin, self.dmax, self.out_axis, self.no_dyn = dmin, dmax, out_axis, no_dyn


def wrap(m, names, pick, **fixed):
    """A module whose forward takes `names` positionally (the argument names that torch.export
    and the ONNX exporter print) and returns pick(m(**inputs, **fixed))."""
    src = (f"def forward(self, {', '.join(names)}):\n"
           f"    return self.pick(self.m({', '.join(f'{n}={n}' for n in names)}, **self.fixed))\n")
    ns = {}
    exec(src, ns)

    def init(self, m):
        torch.nn.Module.__init__(self)
        self.m, self.pick, self.fixed = m, pick, fixed

    return type("Wrap", (torch.nn.Module,), {"__init__": init, "forward": ns["forward"]})(m).eval()


def logits(o):
    return o.logits


def last_hidden(o):
    return o.last_hidden_state


# Models added for "a transformer we have not tried must work the first time": vision
# (pixel_values [batch, 3, H, W] float32; the symbolic dimension is the batch), speech (Whisper's
# encoder on input_features [batch, 32 mel bins, 20 frames]: the model fixes the frame count, so
# again the batch; wav2vec2 on raw input_values [1, samples], symbolic sample count),
# encoder-decoder and other text. Sizes keep each data.bin near 64 KiB or less.
VISION = ("vit", "deit", "beit", "swin", "convnext", "clip_vision", "segformer")
SPEECH = ("whisper_encoder", "wav2vec2")
TEXT_ENC = ("t5_encoder", "roberta", "distilbert", "electra", "mpnet")  # with attention_mask
TEXT_DEC = ("bloom", "falcon", "gpt_neox", "gemma", "opt")  # causal LM logits
NEW_MODELS = VISION + SPEECH + TEXT_ENC + ("bart",) + TEXT_DEC


def hf_new_model(model):
    """The config and module of a model in NEW_MODELS (random init, seed 0)."""
    import transformers as tf
    enc = dict(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=32, max_position_embeddings=16, initializer_range=0.2)
    vit = dict(image_size=16, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=2,
               num_attention_heads=2, intermediate_size=32, initializer_range=0.2)
    dec = dict(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
               max_position_embeddings=16, initializer_range=0.2, bos_token_id=0, eos_token_id=0)
    if model == "vit":
        return tf.ViTModel(tf.ViTConfig(**vit), add_pooling_layer=False)
    if model == "deit":  # class and distillation tokens
        return tf.DeiTModel(tf.DeiTConfig(**vit), add_pooling_layer=False)
    if model == "beit":  # relative position bias table per layer, layer scale
        return tf.BeitModel(tf.BeitConfig(**vit, use_relative_position_bias=True,
                                          use_absolute_position_embeddings=False,
                                          use_mean_pooling=False), add_pooling_layer=False)
    if model == "swin":
        # 16x16 / patch 2 = 8x8 tokens, window 3: padded to 9x9, shifted windows (roll) in the
        # second block; patch merging into a second stage of 4x4 tokens (padded to 6x6, shifted).
        return tf.SwinModel(tf.SwinConfig(image_size=16, patch_size=2, num_channels=3, embed_dim=8,
                                          depths=[2, 2], num_heads=[2, 2], window_size=3,
                                          mlp_ratio=2.0, initializer_range=0.2), add_pooling_layer=False)
    if model == "convnext":  # depthwise 7x7 convolutions, channels-first layer norm, layer scale
        return tf.ConvNextModel(tf.ConvNextConfig(num_channels=3, patch_size=4, num_stages=2,
                                                  hidden_sizes=[8, 16], depths=[1, 1], image_size=16,
                                                  initializer_range=0.2))
    if model == "clip_vision":  # pre-layernorm, quick_gelu, class embedding
        return tf.CLIPVisionModel(tf.CLIPVisionConfig(**vit, projection_dim=16))
    if model == "segformer":  # overlapping patch embeddings, spatial-reduction attention, Mix-FFN
        return tf.SegformerModel(tf.SegformerConfig(
            num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
            patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
            decoder_hidden_size=16, initializer_range=0.2))
    if model == "whisper_encoder":  # conv1d front end, sinusoidal positions
        cfg = tf.WhisperConfig(vocab_size=32, num_mel_bins=32, encoder_layers=1, decoder_layers=1,
                               d_model=16, encoder_attention_heads=2, decoder_attention_heads=2,
                               encoder_ffn_dim=32, decoder_ffn_dim=32, max_source_positions=10,
                               max_target_positions=16, init_std=0.2, pad_token_id=0, bos_token_id=0,
                               eos_token_id=0, decoder_start_token_id=0)
        return tf.WhisperModel(cfg).get_encoder()
    if model == "wav2vec2":  # conv feature extractor with group norm, grouped positional conv
        cfg = tf.Wav2Vec2Config(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32, conv_dim=(8, 8), conv_stride=(5, 2),
                                conv_kernel=(10, 3), num_conv_pos_embeddings=8,
                                num_conv_pos_embedding_groups=2, feat_extract_norm="group",
                                do_stable_layer_norm=False, initializer_range=0.2)
        return tf.Wav2Vec2Model(cfg)
    if model == "t5_encoder":  # relative position buckets, RMS layer norm without mean
        return tf.T5EncoderModel(tf.T5Config(vocab_size=32, d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                             num_heads=2, relative_attention_num_buckets=8,
                                             relative_attention_max_distance=16, initializer_factor=1.0))
    if model == "roberta":  # positions from the non-padding tokens (cumsum), offset by padding_idx
        return tf.RobertaModel(tf.RobertaConfig(**{**enc, "max_position_embeddings": 20}, pad_token_id=1),
                               add_pooling_layer=False)
    if model == "distilbert":
        return tf.DistilBertModel(tf.DistilBertConfig(vocab_size=32, dim=16, n_layers=2, n_heads=2,
                                                      hidden_dim=32, max_position_embeddings=16,
                                                      initializer_range=0.2))
    if model == "electra":  # embedding_size != hidden_size: an embeddings projection
        return tf.ElectraModel(tf.ElectraConfig(**enc, embedding_size=8))
    if model == "mpnet":  # relative position buckets (32: the model hard-codes it) on absolute positions
        return tf.MPNetModel(tf.MPNetConfig(**{**enc, "max_position_embeddings": 20},
                                            relative_attention_num_buckets=32), add_pooling_layer=False)
    if model == "bart":  # encoder-decoder, learned positions offset by 2, cross attention
        return tf.BartModel(tf.BartConfig(vocab_size=32, d_model=16, encoder_layers=1, decoder_layers=1,
                                          encoder_attention_heads=2, decoder_attention_heads=2,
                                          encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=16,
                                          init_std=0.2, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                          decoder_start_token_id=2))
    if model == "bloom":  # ALiBi, layer norm after the embeddings
        return tf.BloomForCausalLM(tf.BloomConfig(vocab_size=32, hidden_size=16, n_layer=2, n_head=4,
                                                  initializer_range=0.2, bos_token_id=0, eos_token_id=0))
    if model == "falcon":  # multi-query attention, parallel attention and MLP, rotary
        return tf.FalconForCausalLM(tf.FalconConfig(**{k: v for k, v in dec.items()}))
    if model == "gpt_neox":  # partial rotary, parallel residual
        return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(
            **{**dec, "num_attention_heads": 2}, intermediate_size=32,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}))
    if model == "gemma":  # (1 + w) RMS norm, scaled embeddings, tied lm_head, gelu-tanh gate
        return tf.GemmaForCausalLM(tf.GemmaConfig(**dec, intermediate_size=32, num_key_value_heads=1,
                                                  head_dim=4, pad_token_id=0))
    if model == "opt":  # learned positions from the attention mask (cumsum), offset 2
        return tf.OPTForCausalLM(tf.OPTConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2,
                                              ffn_dim=32, num_attention_heads=4, max_position_embeddings=16,
                                              word_embed_proj_dim=16, init_std=0.2, pad_token_id=1,
                                              bos_token_id=2, eos_token_id=2))
    raise ValueError(model)


def hf_model(model):
    """The HFSpec of a model: what is traced, its inputs and its symbolic dimension."""
    import transformers as tf
    torch.manual_seed(0)
    if model in NEW_MODELS:
        m = hf_new_model(model).eval()
        f32 = lambda shape, rng: rng.standard_normal(shape).astype(np.float32)
        if model in VISION:
            size = getattr(m.config, "image_size", 16)  # SegFormer's config has none
            names = ["pixel_values"]
            return HFSpec(wrap(m, names, last_hidden), names,
                          lambda n, rng: [f32((n, 3, size, size), rng)], {"pixel_values": 0},
                          dim="batch", sizes=[1, 2], static=1, dmin=1, dmax=8, out_axis=0)
        if model == "whisper_encoder":
            names = ["input_features"]  # the encoder requires 2 * max_source_positions frames
            return HFSpec(wrap(m, names, last_hidden), names,
                          lambda n, rng: [f32((n, 32, 20), rng)], {"input_features": 0},
                          dim="batch", sizes=[1, 2], static=1, dmin=1, dmax=8, out_axis=0)
        if model == "wav2vec2":
            # The sample count is 10 * a symbol: torch.export's guards on the strided convolutions'
            # output lengths (kernels 10, 3, strides 5, 2) hold for no other range.
            names = ["input_values"]
            return HFSpec(wrap(m, names, last_hidden), names,
                          lambda n, rng: [f32((1, n), rng)], {"input_values": 1},
                          dim="samples", sizes=[300, 400], static=400, dmin=100, dmax=4090, out_axis=1,
                          step=10)
        if model == "bart":
            names = ["input_ids", "decoder_input_ids"]
            return HFSpec(wrap(m, names, last_hidden, use_cache=False), names,
                          lambda L, rng: [rng.integers(0, 32, size=(1, L)).astype(np.int64)
                                          for _ in names], {n: 1 for n in names})
        if model in TEXT_ENC:
            names = ["input_ids", "attention_mask"]
            return HFSpec(wrap(m, names, last_hidden), names,
                          lambda L, rng: hf_inputs(L, 32, names, rng), {n: 1 for n in names})
        names = ["input_ids"]  # TEXT_DEC
        return HFSpec(wrap(m, names, logits, use_cache=False), names,
                      lambda L, rng: hf_inputs(L, 32, names, rng), {"input_ids": 1})
    if model == "gpt2":
        cfg = tf.GPT2Config(vocab_size=32, n_positions=16, n_embd=16, n_layer=2, n_head=2,
                            initializer_range=0.2, bos_token_id=0, eos_token_id=0)
        m = tf.GPT2LMHeadModel(cfg)
    elif model == "bert":
        cfg = tf.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=16, initializer_range=0.2)
        m = tf.BertModel(cfg, add_pooling_layer=False)
    elif model == "llama":
        cfg = tf.LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
                             initializer_range=0.2, bos_token_id=0, eos_token_id=0, pad_token_id=0)
        m = tf.LlamaForCausalLM(cfg)
    else:
        # Decoders not tried when the engine was written: Qwen2 (biased q/k/v, grouped-query
        # attention), Mistral (sliding-window mask, narrower than the sequence), Phi (partial
        # rotary embedding, parallel attention and MLP).
        dec = dict(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=16, initializer_range=0.2,
                   bos_token_id=0, eos_token_id=0)
        if model == "qwen2":
            cfg = tf.Qwen2Config(**dec, num_key_value_heads=2)
            m = tf.Qwen2ForCausalLM(cfg)
        elif model == "mistral":
            cfg = tf.MistralConfig(**dec, num_key_value_heads=2, sliding_window=4)
            m = tf.MistralForCausalLM(cfg)
        elif model == "phi":
            cfg = tf.PhiConfig(**dec, partial_rotary_factor=0.5)
            m = tf.PhiForCausalLM(cfg)
        else:
            raise ValueError(model)
    m = m.eval()
    if model == "bert":
        names = ["input_ids", "attention_mask"]
        w = wrap(m, names, last_hidden)
    else:
        names = ["input_ids"]
        w = wrap(m, names, logits, use_cache=False)
    vocab = cfg.vocab_size
    return HFSpec(w, names, lambda L, rng: hf_inputs(L, vocab, names, rng), {n: 1 for n in names})


def hf_inputs(L, vocab, names, rng):
    ids = rng.integers(0, vocab, size=(1, L)).astype(np.int64)
    if len(names) == 1:
        return [ids]
    mask = np.ones((1, L), np.int64)
    mask[0, L - max(1, L // 3):] = 0  # right padding
    return [ids, mask]


def hf_case(root, model, route, tmp):
    spec = hf_model(model)
    names = spec.names
    rng = np.random.default_rng(0)
    inputs = {n: spec.make(n, rng) for n in sorted(set(spec.sizes + [spec.static]))}
    case = Case(f"hf_{model}_{route}", route=route, model=model, dtype="float32", entry="main",
                reference="torch" if route == "export" else "ONNX Runtime", failed_imports={})
    if spec.dim != "seq_len":  # `seq_len` of each run is the size of this dimension
        case.meta["symbolic_dim"] = {"name": spec.dim, "axes": spec.dyn}
    progs = {}
    for kind in ("static", "dyn"):
        dynamic = kind == "dyn"
        if dynamic and spec.no_dyn:
            case.meta["failed_imports"][kind] = f"not made: {spec.no_dyn}"
            continue
        seqs = spec.sizes if dynamic else [spec.static]
        try:
            if route == "export":
                mod, params, _ = import_export(spec, inputs[max(seqs)], dynamic)
            else:
                path = os.path.join(tmp, f"{model}_{kind}.onnx")
                export_onnx(spec, inputs[max(seqs)], dynamic, path, True)
                mod, params, _ = import_onnx(path)
            text = script_of(mod)
        except Exception as e:
            msg = traceback.format_exc().strip().splitlines()[-1][:300]
            case.meta["failed_imports"][kind] = msg
            print(f"{case.name} {kind}: import failed: {msg}")
            continue
        try:
            sess = None
            if route != "export":
                import onnxruntime as ort
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            refs = []
            for L in seqs:
                xs = inputs[L]
                if sess is None:
                    with torch.no_grad():
                        ref = spec.w(*[torch.from_numpy(x) for x in xs]).numpy()
                else:
                    ref = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs)})[0]
                refs.append(ref)
        except Exception as e:
            msg = traceback.format_exc().strip().splitlines()[-1][:300]
            case.meta["failed_imports"][kind] = f"reference failed: {msg}"
            print(f"{case.name} {kind}: reference failed: {msg}")
            continue
        if "call_packed" in text:
            case.meta["lenient"] = True
        wn = [case.add(f"{kind}_w{k:03d}", p) for k, p in enumerate(params)]
        runs = []
        for L, ref in zip(seqs, refs):
            ins = [case.add(f"{kind}_{n}_{L}", x) for n, x in zip(names, inputs[L])]
            runs.append({"seq_len": L, "inputs": ins, "expected": case.add(f"{kind}_expected_{L}", ref)})
        progs[f"prog_{kind}.py"] = text
        # TVM's own verdict on what its importer produced (False also for the lenient programs'
        # R.call_packed inside dataflow blocks).
        try:  # raises on the first violation
            relax.analysis.well_formed(mod)
            wf = True
        except Exception as e:
            wf = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"
        case.meta["progs"].append({"prog": f"prog_{kind}.py", "symbolic": dynamic, "weights": wn, "runs": runs,
                                   "tvm_well_formed": wf})
    case.write(root, progs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_root")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--tmp", default="/tmp/gen_transformer_cases")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    os.makedirs(a.tmp, exist_ok=True)
    jobs = [(f"nn_{m}_{t}", lambda m=m, d=d: nn_case(a.out_root, m, d))
            for m, d, t in [("llama", "float32", "f32"), ("gpt2", "float32", "f32"), ("llama", "float16", "f16")]]
    jobs += [(f"hf_{m}_{r}", lambda m=m, r=r: hf_case(a.out_root, m, r, a.tmp))
             for m in ("gpt2", "bert", "llama") for r in ("export", "onnx")]
    jobs += [(f"hf_{m}_export", lambda m=m: hf_case(a.out_root, m, "export", a.tmp)) for m in ("qwen2", "mistral", "phi")]
    # Architectures not tried when the engine was written, both routes: vision (pixel_values),
    # speech (input_features, input_values), encoder-decoder and other text models.
    jobs += [(f"hf_{m}_{r}", lambda m=m, r=r: hf_case(a.out_root, m, r, a.tmp))
             for m in NEW_MODELS for r in ("export", "onnx")]
    for name, job in jobs:
        if not only or name in only:
            job()


if __name__ == "__main__":
    main()
