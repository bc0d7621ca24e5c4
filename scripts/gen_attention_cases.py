#!/usr/bin/env python3
"""Expected outputs of the fused-attention test programs (tests/attention_fused/cases.json).

Usage: python scripts/gen_attention_cases.py   (needs TVM 0.27 and numpy)

Each program is TVMScript with symbolic sequence lengths; it is compiled once with
`tvm.compile(mod, target="llvm")` and run on `relax.VirtualMachine` for every listed
shape binding with seeded random inputs. The JSON keeps the program text, the inputs
and TVM's outputs; the Rust test (tests/attention_fused.rs) runs the programs with the
fused kernel and with the unfused legalization, on the host and the GPU, and compares
both with these values. Neither the build nor the tests run this script.
"""
import json
import os
import re

import numpy as np
import tvm
from tvm import relax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "attention_fused", "cases.json")

HEADER = "from tvm.script import ir as I\nfrom tvm.script import relax as R\nfrom tvm.script import tir as T\n\n"

PROGRAMS = {
    # R.nn.attention: causal masks, scale, bias, symbolic query and key lengths.
    "op_f32": ("""@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((2, "n", 3, 16), dtype="float32"), k: R.Tensor((2, "m", 3, 16), dtype="float32"), v: R.Tensor((2, "m", 3, 12), dtype="float32"), b: R.Tensor((2, 1, "n", "m"), dtype="float32")):
        n = T.int64()
        m = T.int64()
        with R.dataflow():
            a0 = R.nn.attention(q, k, v)
            a1 = R.nn.attention(q, k, v, causal_mask="TopLeft")
            a2 = R.nn.attention(q, k, v, causal_mask="BottomRight")
            a3 = R.nn.attention(q, k, v, scale=0.2)
            a4 = R.nn.attention(q, k, v, b, causal_mask="TopLeft")
            a5 = R.nn.attention(q, k, v, b)
            R.output(a0, a1, a2, a3, a4, a5)
        return (a0, a1, a2, a3, a4, a5)
""", [{"n": 5, "m": 7}, {"n": 9, "m": 4}, {"n": 16, "m": 16}], "float32", 1e-4),
    # float16 operands (TVM computes in float16, the fused kernel in float32).
    "op_f16": ("""@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, "n", 2, 8), dtype="float16"), k: R.Tensor((1, "n", 2, 8), dtype="float16"), v: R.Tensor((1, "n", 2, 8), dtype="float16")):
        n = T.int64()
        with R.dataflow():
            a0 = R.nn.attention(q, k, v)
            a1 = R.nn.attention(q, k, v, causal_mask="TopLeft")
            R.output(a0, a1)
        return (a0, a1)
""", [{"n": 6}, {"n": 20}], "float16", 1e-2),
    # Head dimensions past one unrolled chunk (80 = 2 x 40, 128 = 2 x 64).
    "op_wide": ("""@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, "n", 2, 80), dtype="float32"), k: R.Tensor((1, "n", 2, 80), dtype="float32"), v: R.Tensor((1, "n", 2, 128), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            a0 = R.nn.attention(q, k, v, causal_mask="TopLeft")
            R.output(a0)
        return a0
""", [{"n": 10}], "float32", 1e-4),
    # The nn module's spelling (GPT-2 / Llama): permuted operands, divide, triu(full(min), 1), softmax, matmul.
    "chain_nn": ("""@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, "n", 2, 8), dtype="float32"), k: R.Tensor((1, "n", 2, 8), dtype="float32"), v: R.Tensor((1, "n", 2, 8), dtype="float32")):
        n = T.int64()
        with R.dataflow():
            qt = R.permute_dims(q, axes=[0, 2, 1, 3])
            kt = R.permute_dims(k, axes=[0, 2, 3, 1])
            vt = R.permute_dims(v, axes=[0, 2, 1, 3])
            s = R.matmul(qt, kt)
            d = R.divide(s, R.const(2.8284270763397217, "float32"))
            f = R.full(R.shape([n, n]), R.const(-3.4028234663852886e38, "float32"), dtype="float32")
            m = R.triu(f, 1)
            a = R.add(d, m)
            p = R.nn.softmax(a, axis=-1)
            o = R.matmul(p, vt)
            r = R.permute_dims(o, axes=[0, 2, 1, 3])
            R.output(r)
        return r
""", [{"n": 7}, {"n": 40}], "float32", 1e-4),
    # The nn module's decoding step with grouped-query heads: one query row, the keys and
    # values of two heads repeated for four, the mask a PrimFunc over the scores.
    "chain_nn_gqa_decode": ("""@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def mask(x: T.handle, y: T.handle):
        m = T.int64()
        A = T.match_buffer(x, (T.int64(1), T.int64(4), T.int64(1), m))
        B = T.match_buffer(y, (T.int64(1), T.int64(4), T.int64(1), m))
        for b, h, i, j in T.grid(T.int64(1), T.int64(4), T.int64(1), m):
            with T.sblock("mask"):
                v_b, v_h, v_i, v_j = T.axis.remap("SSSS", [b, h, i, j])
                B[v_b, v_h, v_i, v_j] = T.if_then_else(m + v_i <= v_j + T.int64(1), T.float32(-3.4028234663852886e38), A[v_b, v_h, v_i, v_j])

    @R.function
    def main(q: R.Tensor((1, 1, 4, 8), dtype="float32"), k: R.Tensor((1, "m", 2, 8), dtype="float32"), v: R.Tensor((1, "m", 2, 8), dtype="float32")):
        m = T.int64()
        cls = Module
        with R.dataflow():
            kr = R.repeat(k, repeats=2, axis=2)
            vr = R.repeat(v, repeats=2, axis=2)
            qt = R.permute_dims(q, axes=[0, 2, 1, 3])
            kt = R.permute_dims(kr, axes=[0, 2, 3, 1])
            vt = R.permute_dims(vr, axes=[0, 2, 1, 3])
            s = R.matmul(qt, kt)
            d = R.divide(s, R.const(2.8284270763397217, "float32"))
            a = R.call_tir(cls.mask, (d,), out_ty=R.Tensor((1, 4, 1, m), dtype="float32"))
            p = R.nn.softmax(a, axis=-1)
            o = R.matmul(p, vt)
            r = R.permute_dims(o, axes=[0, 2, 1, 3])
            R.output(r)
        return r
""", [{"m": 5}, {"m": 37}], "float32", 1e-4),
    # The same in float16 with a prompt of n rows, as a prefill step spells it: scores widened
    # to float32 for the causal mask and the softmax, the weights narrowed back.
    "chain_nn_gqa_f16": ("""@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def causal_mask(x: T.handle, y: T.handle):
        n = T.int64()
        A = T.match_buffer(x, (T.int64(1), T.int64(4), n, n))
        B = T.match_buffer(y, (T.int64(1), T.int64(4), n, n))
        for b, h, i, j in T.grid(T.int64(1), T.int64(4), n, n):
            with T.sblock("causal_mask"):
                v_b, v_h, v_i, v_j = T.axis.remap("SSSS", [b, h, i, j])
                B[v_b, v_h, v_i, v_j] = T.if_then_else(v_i < v_j, T.float32(-3.4028234663852886e38), A[v_b, v_h, v_i, v_j])

    @R.function
    def main(q: R.Tensor((1, "n", 4, 8), dtype="float16"), k: R.Tensor((1, "n", 2, 8), dtype="float16"), v: R.Tensor((1, "n", 2, 8), dtype="float16")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            kr = R.repeat(k, repeats=2, axis=2)
            vr = R.repeat(v, repeats=2, axis=2)
            qt = R.permute_dims(q, axes=[0, 2, 1, 3])
            kt = R.permute_dims(kr, axes=[0, 2, 3, 1])
            vt = R.permute_dims(vr, axes=[0, 2, 1, 3])
            s = R.matmul(qt, kt)
            d = R.divide(s, R.const(2.828125, "float16"))
            w = R.astype(d, dtype="float32")
            a = R.call_tir(cls.causal_mask, (w,), out_ty=R.Tensor((1, 4, n, n), dtype="float32"))
            p = R.nn.softmax(a, axis=-1)
            p16 = R.astype(p, dtype="float16")
            o = R.matmul(p16, vt)
            r = R.permute_dims(o, axes=[0, 2, 1, 3])
            R.output(r)
        return r
""", [{"n": 1}, {"n": 9}], "float16", 1e-2),
    # from_onnx's spelling: additive mask, where(isnan(p), 0, p); a fully masked row gives zeros.
    "chain_onnx": ("""@I.ir_module
class Module:
    @R.function
    def main(q: R.Tensor((1, 2, "n", 8), dtype="float32"), kt: R.Tensor((1, 2, 8, "n"), dtype="float32"), v: R.Tensor((1, 2, "n", 8), dtype="float32"), mask: R.Tensor((1, 1, "n", "n"), dtype="bool")):
        n = T.int64()
        with R.dataflow():
            s = R.matmul(q, kt)
            b = R.where(mask, R.const(0.0, "float32"), R.const(float("-inf"), "float32"))
            a = R.add(s, b)
            p = R.nn.softmax(a, axis=-1)
            nan = R.isnan(p)
            z = R.where(nan, R.const(0.0, "float32"), p)
            o = R.matmul(z, v)
            R.output(o)
        return o
""", [{"n": 6}, {"n": 17}], "float32", 1e-4),
}


def params_of(src):
    """(shape template, dtype) of each parameter of `main`, read from its signature."""
    start = src.index("def main(")
    sig = src[start:src.index("):\n", start)]
    out = []
    for shape, dtype in re.findall(r'R\.Tensor\(\(([^)]*)\), dtype="(\w+)"\)', sig):
        dims = [d.strip().strip('"') for d in shape.split(",") if d.strip()]
        out.append((dims, dtype))
    return out


def make_inputs(src, binding, rng):
    arrs = []
    for dims, dtype in params_of(src):
        shape = [int(d) if d.isdigit() else binding[d] for d in dims]
        if dtype == "bool":
            a = rng.random(shape) < 0.7
            if len(shape) >= 2:
                a[..., 0] = True  # every row keeps a key
                a[..., shape[-2] - 1, :] = False  # but the last row has none
        else:
            a = rng.standard_normal(shape).astype(dtype)
        arrs.append(a)
    return arrs


def main():
    cases = []
    for name, (src, bindings, dtype, tol) in PROGRAMS.items():
        # The stored text spells -inf as TVM prints it (`R.const("-inf", ...)`).
        text = HEADER + src.replace('R.const(float("-inf"), ', 'R.const("-inf", ')
        mod = tvm.script.from_source(src)
        ex = tvm.compile(mod, target="llvm")
        vm = relax.VirtualMachine(ex, tvm.cpu())
        rng = np.random.default_rng(sum(map(ord, name)))
        runs = []
        for b in bindings:
            ins = make_inputs(src, b, rng)
            out = vm["main"](*[tvm.runtime.tensor(a) for a in ins])
            outs = list(out) if not hasattr(out, "numpy") else [out]
            runs.append({
                "binding": b,
                "inputs": [{"dtype": str(a.dtype), "shape": list(a.shape), "data": [float("%.9g" % x) for x in a.astype("float64").ravel()]} for a in ins],
                "outputs": [{"dtype": str(o.numpy().dtype), "shape": list(o.numpy().shape),
                             "data": [None if not np.isfinite(x) else float("%.9g" % x) for x in o.numpy().astype("float64").ravel()]} for o in outs],
            })
        cases.append({"name": name, "program": text, "tol": tol, "runs": runs})
    with open(OUT, "w") as fh:
        json.dump({"generator": "TVM %s, tvm.compile(target=\"llvm\"), relax.VirtualMachine on tvm.cpu()" % tvm.__version__,
                   "cases": cases}, fh)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
