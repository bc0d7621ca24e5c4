#!/usr/bin/env python3
"""A Llama-style decoder with a KV cache, written with TVM's `tvm.relax.frontend.nn` and
exported with `export_tvm(spec, debug=False)`, plus TVM's own greedy generation as reference.

Model: embedding, RMSNorm, rotary embedding (a TE kernel with a position offset), grouped-query
causal attention over the cache (`nn.KVCache` per layer for keys and values), SiLU-gated MLP,
lm head. Functions (as `export_tvm` writes them; weights and caches are plain parameters):

  _initialize_effect()                              -> (caches...)
  prefill(ids: (1, seq_len) int32, caches..., weights...)            -> ((1, 1, vocab) f32, (caches...))
  decode(ids: (1, 1) int32, total_seq_len: R.Shape([total]), caches..., weights...) -> ((1, 1, vocab) f32, (caches...))

`prefill` returns the logits of the last prompt position; `decode` takes the total length after
appending its token. With --forward, also

  forward(ids: (1, seq_len) int32, caches..., weights...)            -> ((1, 1, vocab) f32, (caches...))

prefill's computation without the caches (attention over the sequence's own keys and values; the
caches pass through untouched), to time prefill against the bare full-sequence forward pass.

Usage (venv with apache-tvm==0.27.0.post1, numpy):
  python gen_decoder.py OUT_DIR [--preset tiny|100m] [--dtype float32|float16]
                        [--prompt 1,2,3,4] [--new-tokens 17] [--seed 0] [--no-reference] [--forward]

Writes OUT_DIR/prog.py (TVMScript), params.npz (keyed by the functions' weight parameter names),
and, unless --no-reference, reference.json:
  {"prompt": [...], "tokens": [new ids...], "logits": [[vocab floats] per step (prefill first)],
   "prefill_ms": .., "decode_ms_per_token": .., "config": {...}}
"""
import argparse, json, os, time

import numpy as np
import tvm
from tvm import relax, te, tirx
from tvm.relax.frontend import nn
from tvm.relax.frontend.nn import op, spec

from decoder_weights import seeded_weights

PRESETS = {
    # ~31k parameters: small enough to check into the tests.
    "tiny": dict(vocab=128, hidden=32, layers=2, heads=4, kv_heads=2, inter=88, cache=8),
    # ~100M parameters (88M; f32: 352 MB) for the benchmark.
    "100m": dict(vocab=16384, hidden=768, layers=10, heads=12, kv_heads=4, inter=2048, cache=256),
}


def rotary(x: nn.Tensor, total, theta: float = 10000.0) -> nn.Tensor:
    """Rotate-half RoPE over [b, s, h, d] at positions total - s + i (computed in float32)."""
    D = int(x.shape[-1])
    dtype = x.dtype

    def te_rope(x: te.Tensor, total):
        half = D // 2
        offset = total - x.shape[1]

        def f(b, s, h, d):
            pos = (s + offset).astype("float32")
            expo = (tirx.floormod(d, half) * 2).astype("float32") / tirx.const(float(D), "float32")
            freq = pos / tirx.power(tirx.const(theta, "float32"), expo)
            xv = x[b, s, h, d].astype("float32")
            rot = tirx.if_then_else(d < half, -x[b, s, h, d + half], x[b, s, h, d - half]).astype("float32")
            return (tirx.cos(freq) * xv + tirx.sin(freq) * rot).astype(dtype)

        return te.compute(x.shape, f, name="rotary")

    return op.tensor_expr_op(te_rope, "rotary_embedding", args=[x, total])


def causal_mask(w: nn.Tensor) -> nn.Tensor:
    """Scores [b, h, s, total]: query i sees keys j <= total - s + i; the rest get float32's minimum."""

    def te_mask(w: te.Tensor):
        _, _, s, total = w.shape
        return te.compute(
            w.shape,
            lambda b, h, i, j: tirx.if_then_else(j > total - s + i, tirx.min_value("float32"), w[b, h, i, j]),
            name="causal_mask",
        )

    return op.tensor_expr_op(te_mask, "causal_mask", args=[w])


def last_position(x: nn.Tensor) -> nn.Tensor:
    """[b, s, d] -> [b, 1, d]: the last position."""

    def te_last(x: te.Tensor):
        b, s, d = x.shape
        return te.compute((b, 1, d), lambda i, j, k: x[i, s - 1 + j, k], name="last_position")

    return op.tensor_expr_op(te_last, "last_position", args=[x])


class Attention(nn.Module):
    def __init__(self, c):
        self.c = c
        self.hd = c["hidden"] // c["heads"]
        self.qkv_proj = nn.Linear(c["hidden"], (c["heads"] + 2 * c["kv_heads"]) * self.hd, bias=False)
        self.o_proj = nn.Linear(c["heads"] * self.hd, c["hidden"], bias=False)
        self.k_cache = nn.KVCache(c["cache"], [c["kv_heads"], self.hd])
        self.v_cache = nn.KVCache(c["cache"], [c["kv_heads"], self.hd])

    def forward(self, x, total, use_cache=True):
        c, hd = self.c, self.hd
        h, kvh = c["heads"], c["kv_heads"]
        b, s, _ = x.shape
        qkv = op.reshape(self.qkv_proj(x), (b, s, h + 2 * kvh, hd))
        q, k, v = op.split(qkv, [h, h + kvh], axis=2)
        q, k = rotary(q, total), rotary(k, total)
        if use_cache:
            self.k_cache.append(op.squeeze(k, axis=0))
            self.v_cache.append(op.squeeze(v, axis=0))
            kf = op.reshape(self.k_cache.view(total), (b, total, kvh, hd))
            vf = op.reshape(self.v_cache.view(total), (b, total, kvh, hd))
        else:
            # The whole sequence at once, without the caches (total == s).
            kf, vf = k, v
        if kvh != h:
            kf = op.repeat(kf, h // kvh, axis=2)
            vf = op.repeat(vf, h // kvh, axis=2)
        q = op.permute_dims(q, [0, 2, 1, 3])  # b h s d
        kf = op.permute_dims(kf, [0, 2, 3, 1])  # b h d t
        vf = op.permute_dims(vf, [0, 2, 1, 3])  # b h t d
        w = op.matmul(q, kf) / float(np.sqrt(hd))
        if x.dtype != "float32":
            w = op.astype(w, "float32")
        w = op.softmax(causal_mask(w), axis=-1)
        if x.dtype != "float32":
            w = op.astype(w, x.dtype)
        o = op.permute_dims(op.matmul(w, vf), [0, 2, 1, 3])
        return self.o_proj(op.reshape(o, (b, s, h * hd)))


class MLP(nn.Module):
    def __init__(self, c):
        self.gate_up_proj = nn.Linear(c["hidden"], 2 * c["inter"], bias=False)
        self.down_proj = nn.Linear(c["inter"], c["hidden"], bias=False)

    def forward(self, x):
        gate, up = op.split(self.gate_up_proj(x), 2, axis=-1)
        return self.down_proj(op.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, c):
        self.input_layernorm = nn.RMSNorm(c["hidden"], -1, 1e-5, bias=False)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = nn.RMSNorm(c["hidden"], -1, 1e-5, bias=False)
        self.mlp = MLP(c)

    def forward(self, x, total, use_cache=True):
        x = x + self.self_attn(self.input_layernorm(x), total, use_cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, c):
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["layers"])])
        self.norm = nn.RMSNorm(c["hidden"], -1, 1e-5, bias=False)
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)

    def _forward(self, ids, total, use_cache=True):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, total, use_cache)
        # Only the last position's logits are needed for generation.
        x = last_position(x)
        logits = self.lm_head(self.norm(x))
        if logits.dtype != "float32":
            logits = logits.astype("float32")
        return logits

    def prefill(self, ids: nn.Tensor):
        _, s = ids.shape
        return self._forward(ids, s)

    def decode(self, ids: nn.Tensor, total_seq_len):
        return self._forward(ids, total_seq_len)

    def forward(self, ids: nn.Tensor):
        """`prefill` without the caches: the cost of the bare forward pass (--forward)."""
        _, s = ids.shape
        return self._forward(ids, s, use_cache=False)


def export(c, dtype, with_forward=False):
    model = Decoder(c)
    model.to(dtype)
    methods = {
            "prefill": {"ids": spec.Tensor([1, "seq_len"], "int32"), "$": {"param_mode": "plain", "effect_mode": "plain"}},
            "decode": {
                "ids": spec.Tensor([1, 1], "int32"),
                "total_seq_len": int,
                "$": {"param_mode": "plain", "effect_mode": "plain"},
            },
    }
    if with_forward:
        methods["forward"] = {"ids": spec.Tensor([1, "seq_len"], "int32"), "$": {"param_mode": "plain", "effect_mode": "plain"}}
    mod, named_params = model.export_tvm(spec=methods, debug=False)
    return mod, named_params


def random_params(named_params, seed):
    return seeded_weights([(name, p.shape, p.dtype) for name, p in named_params], seed)


def reference(mod, params, names, prompt, steps):
    ex = tvm.compile(mod, target="llvm")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    ws = [tvm.runtime.tensor(params[n], dev) for n in names]
    caches = vm["_initialize_effect"]()
    ids = tvm.runtime.tensor(np.array([prompt], dtype="int32"), dev)
    t0 = time.perf_counter()
    logits, caches = vm["prefill"](ids, *caches, *ws)
    prefill_ms = (time.perf_counter() - t0) * 1e3
    all_logits = [logits.numpy().reshape(-1)]
    tokens = []
    total = len(prompt)
    decode_s = 0.0
    for step in range(steps):
        tok = int(np.argmax(all_logits[-1]))
        tokens.append(tok)
        if step == steps - 1:
            break
        total += 1
        ids = tvm.runtime.tensor(np.array([[tok]], dtype="int32"), dev)
        t0 = time.perf_counter()
        logits, caches = vm["decode"](ids, tvm.runtime.ShapeTuple([total]), *caches, *ws)
        decode_s += time.perf_counter() - t0
        all_logits.append(logits.numpy().reshape(-1))
    return tokens, all_logits, prefill_ms, decode_s * 1e3 / max(1, steps - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    ap.add_argument("--prompt", default="1,2,3,4")
    ap.add_argument("--new-tokens", type=int, default=17, help="prefill gives the first, each decode step one more")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument(
        "--forward",
        action="store_true",
        help="also export `forward(ids, caches..., weights...)`: prefill's computation without the caches",
    )
    a = ap.parse_args()
    c = PRESETS[a.preset]
    os.makedirs(a.out, exist_ok=True)
    mod, named_params = export(c, a.dtype, a.forward)
    with open(os.path.join(a.out, "prog.py"), "w") as f:
        f.write(mod.script())
    params = random_params(named_params, a.seed)
    names = [n for n, _ in named_params]
    np.savez(os.path.join(a.out, "params.npz"), **params)
    nparams = sum(int(np.prod(v.shape)) for v in params.values())
    print(f"{a.preset} {a.dtype}: {nparams} parameters, {sum(v.nbytes for v in params.values())} bytes")
    if a.no_reference:
        return
    prompt = [int(t) for t in a.prompt.split(",")]
    tokens, logits, prefill_ms, decode_ms = reference(mod, params, names, prompt, a.new_tokens)
    ref = {
        "prompt": prompt,
        "tokens": tokens,
        "logits": [[float(f"{x:.7g}") for x in l] for l in logits],
        "prefill_ms": prefill_ms,
        "decode_ms_per_token": decode_ms,
        "config": dict(c, dtype=a.dtype, parameters=nparams),
    }
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump(ref, f)
    print("tokens", tokens, f"prefill {prefill_ms:.2f} ms, decode {decode_ms:.3f} ms/token")


if __name__ == "__main__":
    main()
