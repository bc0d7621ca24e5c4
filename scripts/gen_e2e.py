#!/usr/bin/env python3
"""Generate the expected outputs of the end-to-end programs in tests/e2e/ with Apache TVM.

Usage: python scripts/gen_e2e.py [name ...]   (needs `import tvm`, TVM 0.27)

For every program tests/e2e/<name>.py (TVMScript), this script draws deterministic
random inputs (seeded per program), compiles the module with
`tvm.compile(mod, target="llvm")`, runs `main` on `relax.VirtualMachine(ex, tvm.cpu())`
and writes tests/e2e/<name>.json with the inputs, the flattened outputs, the
nesting structure of the result and notes (tolerance, how the expected values were
obtained). The data files are committed; neither the build nor the tests run this.
"""
import json
import math
import os
import re
import sys
import zlib

import numpy as np
import tvm
from tvm import relax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
E2E = os.path.join(ROOT, "tests", "e2e")

# Input generators: each takes a numpy Generator and returns an array.
def normal(shape, scale=1.0):
    return lambda g: (g.standard_normal(shape) * scale).astype("float32")

def uniform(shape, lo, hi, dtype="float32"):
    return lambda g: g.uniform(lo, hi, shape).astype(dtype)

def ints(shape, lo, hi, dtype="int32", nonzero=False):
    def f(g):
        a = g.integers(lo, hi, shape, endpoint=True).astype(dtype)
        if nonzero:
            a[a == 0] = 1
        return a
    return f

def bools(shape):
    return lambda g: g.integers(0, 1, shape, endpoint=True).astype("bool")

def const(value, dtype):
    return lambda g: np.array(value, dtype=dtype)

def half_ints(shape, lo, hi):
    # floats that include exact halves (.5) to exercise round-half-to-even and ceil/floor.
    def f(g):
        a = g.uniform(lo, hi, shape).astype("float32")
        a.flat[::3] = np.round(a.flat[::3] * 2) / 2
        return a.astype("float32")
    return f

TRANSCENDENTAL = 1e-4
DEFAULT = 1e-5

# name -> (inputs, relative tolerance for float32 outputs, notes)
PROGRAMS = {
    "unary_basic": ([half_ints((4, 5), -3, 3)], DEFAULT, "abs/ceil/floor/negative/round/sign/square/clip; inputs include exact .5 values (round is half-to-even)"),
    "unary_transcendental": ([uniform((3, 8), -3, 3)], TRANSCENDENTAL, "exp/sigmoid/tanh/sinh/cosh/asinh: transcendental"),
    "unary_trig": ([uniform((2, 10), -0.95, 0.95)], TRANSCENDENTAL, "sin/cos/tan/atan/asin/acos/atanh on (-0.95, 0.95): transcendental"),
    "unary_positive": ([uniform((16,), 1.0, 4.0)], TRANSCENDENTAL, "log/sqrt/rsqrt/acosh on [1, 4): transcendental"),
    "binary_float": ([uniform((3, 4), 0.1, 3.0), uniform((4,), 0.5, 2.0)], TRANSCENDENTAL,
                     "add/subtract/multiply/divide/power/atan2/maximum/minimum with broadcasting; positive inputs for power; power and atan2 are transcendental"),
    "binary_int": ([ints((4, 6), -20, 20), ints((4, 6), -5, 5, nonzero=True)], DEFAULT,
                   "int32 floor_divide/mod/floor_mod/divide with negative operands (exact); divide of int32 is truncating in TVM"),
    "compare_where": ([ints((5, 4), -3, 3), ints((5, 4), -3, 3)], DEFAULT, "comparisons to bool and where (exact)"),
    "fma_astype": ([normal((3, 5), 2.0), normal((3, 5), 2.0), normal((3, 5), 2.0), ints((3, 5), -2, 2)], DEFAULT,
                   "ewise_fma, astype float32->int32 (truncation), int32->float32/bool/int64"),
    "matmul": ([normal((2, 3, 4)), normal((4, 5)), normal((4,))], DEFAULT, "batched matmul with broadcasting and a vector operand"),
    "matmul_int": ([ints((3, 4), -5, 5), ints((4, 2), -5, 5)], DEFAULT, "int32 matmul (exact)"),
    "reductions": ([uniform((3, 4, 5), 0.5, 1.5)], DEFAULT, "sum/mean/max/min/prod/variance/std over axes, keepdims"),
    "arg_scan": ([normal((4, 6)), ints((4, 6), -3, 3)], DEFAULT, "argmax/argmin (int64 results), cumsum/cumprod on float32 and int32"),
    "reshape_family": ([normal((2, 3, 4))], DEFAULT, "reshape/permute_dims/expand_dims/squeeze/flatten"),
    "concat_split": ([normal((2, 3)), normal((2, 5)), normal((1, 3))], DEFAULT, "concat, split by sections and by indices, broadcast_to"),
    "index_ops": ([normal((4, 5)), const([3, 0, 2], "int64")], DEFAULT, "take/strided_slice/tile/repeat/flip"),
    "collapse_sum": ([normal((3, 4, 5)), normal((4, 1))], DEFAULT, "collapse_sum_to and collapse_sum_like"),
    "creation": ([normal((2, 3)), ints((4,), -5, 5)], DEFAULT, "zeros/ones/full/zeros_like/ones_like/full_like/arange"),
    "tri_eye": ([normal((4, 5))], DEFAULT, "tril/triu/eye/eye_like with diagonals"),
    "gather_onehot": ([normal((3, 4)), const([[0, 3], [2, 2], [1, 0]], "int64"), const([[2, 1], [0, 3]], "int64"), const([0, 3, 1, 4, 2], "int32"),
                       const([3, 1, 0, 2], "int64"), normal((2, 3, 2, 2))],
                      DEFAULT, "gather_elements/gather_nd/one_hot/meshgrid/reverse_sequence/batch_flatten"),
    "layout_transform": ([normal((2, 7, 6))], DEFAULT, "layout_transform: split with padding, permutation, exact split"),
    "prim_operand": ([normal((2, 3))], DEFAULT, "binary operators and take with an R.Prim-typed variable operand (a scalar PrimFunc parameter)"),
    "pad_modes": ([normal((3, 4)), normal((2, 3, 5))], DEFAULT, "nn.pad reflect (topi reflect_pad) and edge (TVM lowers it as constant padding)"),
    "bitwise_slice": ([ints((3, 4), -100, 100), ints((4,), 0, 31), bools((3, 4)), normal((3, 4)), const([[0, 5, -1], [3, -2, 9]], "int64")],
                      DEFAULT,
                      "bitwise/shift/logical_xor/logical_not/trunc, take clip/wrap with out-of-range indices, negative strides, pad, reshape -1/0, repeat without axis, split"),
    "nn_activations": ([normal((4, 6), 2.0)], TRANSCENDENTAL,
                       "relu/gelu/silu/leakyrelu/softplus/dropout (dropout is the identity at inference, only the first output of its tuple is used); transcendental"),
    "softmax_norm": ([normal((3, 8)), normal((8,)), normal((8,))], TRANSCENDENTAL, "softmax/log_softmax/layer_norm: transcendental"),
    "conv2d": ([normal((1, 2, 6, 6)), normal((3, 2, 3, 3))], DEFAULT, "conv2d NCHW/OIHW, with stride and padding"),
    "pooling": ([normal((1, 2, 6, 6))], DEFAULT, "max_pool2d/avg_pool2d, with padding (avg_pool2d excludes padding by default: count_include_pad=False)"),
    "batch_norm_pad": ([normal((2, 3, 4, 4)), normal((3,)), normal((3,)), normal((3,)), uniform((3,), 0.5, 2.0)], TRANSCENDENTAL,
                       "batch_norm in inference mode (training=False), then constant pad; sqrt/rsqrt inside batch_norm"),
    "if_cond": ([normal((3, 4)), const(True, "bool")], DEFAULT, "If on a bool scalar tensor argument and on a computed bool scalar"),
    "closure": ([normal((2, 3)), normal((2, 3))], DEFAULT, "local functions capturing outer variables, one calling the other"),
    "recursion_local": ([const(5, "int64"), normal((3,))], DEFAULT, "local recursive functions (factorial on int64, repeated halving)"),
    "recursion_mutual": ([const(7, "int32"), const(4, "int32")], DEFAULT, "global mutual recursion is_even/is_odd"),
    "match_cast_symbolic": ([normal((3, 4)), normal((4,))], DEFAULT, "match_cast binding symbolic n, m; shape_of returns a shape (compared as int64)"),
    "tuple_nested": ([normal((2, 2)), ints((3,), -9, 9)], DEFAULT, "nested tuple outputs from a global function call"),
    "call_tir_prim": ([normal((4, 3)), normal((3,))], DEFAULT, "hand-written PrimFuncs called with call_tir"),
    "packed_func": ([normal((2, 3))], DEFAULT, "packed function test.add_one(x) = x + 1 (registered on both sides)"),
    "builtins_misc": ([normal((2, 3)), normal((2, 3))], DEFAULT,
                      "null_value, hint_on_device, call_tir_inplace, call_dps_packed (test.add_one_dps), "
                      "call_inplace_packed (test.double_inplace), print, assert_op; nothing is allocated after the in-place call "
                      "because TVM 0.27's memory planner reuses the storage of its result for later allocations"),
    "int_bool": ([ints((6,), -50, 50, dtype="int64"), ints((6,), -50, 50, dtype="int64"), bools((6,))], DEFAULT,
                 "int64/bool/int8 exact: where, logical ops, abs, sum, floor_mod, astype"),
    "vdevice_two": ([normal((2, 3)), normal((2, 3))], DEFAULT, None),
    "mlp": ([normal((4, 16)), normal((16, 32), 0.3), normal((32,), 0.1), normal((32, 10), 0.3), normal((10,), 0.1)], TRANSCENDENTAL,
            "two-layer MLP with relu, softmax and argmax"),
    "attention": ([normal((1, 6, 8)), normal((8, 8), 0.4), normal((8, 8), 0.4), normal((8, 8), 0.4), normal((8, 8), 0.4), normal((8,)), normal((8,))],
                  TRANSCENDENTAL, "pre-norm causal self-attention, 2 heads of 4, residual"),
    "convnet": ([normal((2, 3, 8, 8)), normal((4, 3, 3, 3), 0.5), normal((1, 4, 1, 1), 0.1), normal((4, 4, 3, 3), 0.5), normal((16, 5), 0.5)],
                DEFAULT, "conv2d + relu + max_pool2d + conv2d + relu + avg_pool2d + dense"),
    "scalar_prim": ([normal((5,)), normal((5,))], TRANSCENDENTAL, "dot product, norm (sqrt), 0-d outputs and a bool scalar"),
    "nn_extra": ([normal((2, 4, 5, 5)), normal((4,)), normal((4,)), normal((4,)), uniform((4,), 0.5, 2.0), normal((5, 5)), normal((5, 5)),
                  normal((3, 7)), ints((3, 7), -2, 2)], TRANSCENDENTAL,
                 "batch_norm (inference, training with momentum, no center/scale), layer_norm over two axes, log_softmax, gelu_tanh, "
                 "softplus on both sides of its threshold, exclusive and typed cumsum/cumprod, argmin/argmax with ties, variance/std"),
    "norm_conv1d_extra": ([normal((2, 6, 5, 7)), normal((6,)), normal((6,)), normal((5, 7)), normal((2, 4, 9)), normal((6, 2, 3)), normal((5, 4, 2))],
                          TRANSCENDENTAL, "group_norm, rms_norm, grouped/strided/dilated conv1d, NWC/WIO conv1d, adaptive_avg_pool2d with even and uneven windows"),
    "losses": ([normal((4, 5)), uniform((4, 5), 0.0, 1.0), ints((4,), 0, 4, dtype="int64"), uniform((5,), 0.5, 2.0), normal((2, 5, 3)),
                ints((2, 3), 0, 4, dtype="int64"), normal((5,))], DEFAULT,
               "cross_entropy_with_logits (batched and 1-d), nll_loss mean/sum/none with weights, ignore_index, N-d predictions, no weights"),
    "conv_pool_extra": ([normal((2, 4, 7, 6)), normal((6, 2, 3, 3)), normal((3, 4, 3, 2)), normal((4, 3, 3, 2)), normal((2, 4, 5)), normal((4, 1, 3))], DEFAULT,
                        "grouped conv2d with stride/dilation/asymmetric padding, NHWC/HWIO conv2d, max_pool2d with dilation and ceil_mode, "
                        "avg_pool2d with ceil_mode, count_include_pad and dilation, grouped conv2d_transpose/conv1d_transpose with stride, padding, output_padding, dilation"),
    "scatter_slice": ([normal((4, 5)), const([[3, 0, 1, 2, 0], [1, 2, 3, 0, 3]], "int64"), normal((2, 5)),
                       const([[0, -1], [4, 4], [-5, 2], [1, 1]], "int64"), normal((4, 2)), normal((3, 4)),
                       const([[2], [0]], "int64"), normal((2, 4)), const([[0, 1], [2, 3], [0, 1]], "int64"), normal((3,)),
                       const([3, 0], "int64"), const([0, 5], "int64"), const([-1, 2], "int64")], DEFAULT,
                      "scatter_elements update/add/max/mean on axis 0, 1 and -1 with negative and repeated indices, "
                      "scatter_nd of rows and of elements (repeated indices, add and min), dynamic_strided_slice with a negative stride"),
    "index_tensor": ([normal((5, 6, 7)), ints((2, 1), 0, 4, dtype="int64"), ints((3,), 0, 5), ints((3,), 0, 6, dtype="int64"), bools((1, 6)),
                      const([[[[0], [0], [0], [0]]]], "int64"), const([[[[5, 0, 3, 1]]]], "int64"), ints((2, 8), -9, 9, dtype="int64")], DEFAULT,
                     "advanced indexing: two broadcast indices (int64 and int32), a single index, three indices, "
                     "4-d broadcast indices into bool and int64 data (the mask pattern of torch.export programs)"),
    "attention_ops": ([normal((2, 4, 2, 8)), normal((2, 6, 2, 8)), normal((2, 6, 2, 5)), normal((2, 6, 2, 8)), normal((2, 4, 2, 8)),
                       normal((2, 4, 2, 5)), normal((2, 2, 4, 6)), normal((1, 1, 1, 6))], TRANSCENDENTAL,
                      "R.nn.attention legalized: no mask, causal TopLeft and BottomRight with fewer and with more keys than queries, "
                      "an explicit scale, a full bias and a broadcast bias (attention_bias), square self-attention"),
    "transformer_ops": ([bools((2, 8)), bools((2, 8)), ints((2, 8), -2, 2, dtype="float32"), ints((2, 8), 0, 9, dtype="int64"), normal((2, 8, 16)),
                         normal((16,)), normal((16,)), const([[1, 3], [0, 0], [1, 7]], "int64"), const([[7, 0, 3, 3], [1, 2, 6, 5]], "int64"),
                         normal((5, 8))], TRANSCENDENTAL,
                        "operators of transformer front ends: cumsum of bool to int64 (TVM cannot compile a bool-typed cumsum), bitwise_and of "
                        "bool and int64, logical_not/and, isnan of 0/0, comparisons, full_like, gather_nd, gather_elements, strided_slice "
                        "with symbolic bounds (from a match_cast), broadcast_to, triu, repeat, split by indices, rms_norm, layer_norm, gelu, "
                        "gelu_tanh, silu, rsqrt, shape_to_tensor"),
}


def add_one(x):
    return tvm.runtime.tensor(x.numpy() + np.float32(1.0))


tvm.register_global_func("test.add_one", add_one, override=True)


def add_one_dps(x, out):
    out.copyfrom(x.numpy() + np.float32(1.0))


def double_inplace(x):
    x.copyfrom(x.numpy() * np.float32(2.0))
    return x


tvm.register_global_func("test.add_one_dps", add_one_dps, override=True)
tvm.register_global_func("test.double_inplace", double_inplace, override=True)


def strip_vdevices(src):
    """The same program without VDevice annotations: to_vdevice becomes the identity."""
    out = []
    for line in src.splitlines():
        if "I.module_global_infos" in line:
            continue
        line = re.sub(r', vdevice="[^"]*"', "", line)
        line = re.sub(r'R\.to_vdevice\((\w+), dst_vdevice="[^"]*"\)', r"\1", line)
        out.append(line)
    return "\n".join(out) + "\n"


def num(v, dtype):
    if dtype == "bool":
        return bool(v)
    if dtype.startswith("int") or dtype.startswith("uint"):
        return int(v)
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor_json(a):
    a = np.asarray(a)
    dtype = str(a.dtype)
    return {"dtype": dtype, "shape": list(a.shape), "data": [num(v, dtype) for v in a.reshape(-1).tolist()]}


def flatten(value, outs):
    """Flatten a VM result into `outs`; return its structure ("tensor", "shape" or a list)."""
    if isinstance(value, tvm.runtime.Tensor):
        outs.append(tensor_json(value.numpy()))
        return "tensor"
    if isinstance(value, tvm.runtime.ShapeTuple) or type(value).__name__ == "Shape":
        outs.append({"dtype": "int64", "shape": [len(value)], "data": [int(v) for v in value], "kind": "shape"})
        return "shape"
    if isinstance(value, (list, tuple)) or hasattr(value, "__len__"):
        return [flatten(v, outs) for v in value]
    raise TypeError(f"unsupported result {type(value)}")


def generate(name):
    inputs_fn, rtol, notes = PROGRAMS[name]
    path = os.path.join(E2E, name + ".py")
    with open(path) as f:
        src = f.read()
    extra = []
    g = np.random.default_rng(zlib.crc32(name.encode()))
    arrays = [fn(g) for fn in inputs_fn]

    def run(text):
        mod = tvm.script.from_source(text)
        if "        @R.function" in text:
            # tvm.compile's pipeline expects local functions to be lifted already.
            mod = relax.transform.LambdaLift()(mod)
        if "R.hint_on_device" in text:
            # tvm.compile's pipeline does not run RealizeVDevice, which removes the hints.
            mod = relax.transform.RealizeVDevice()(mod)
        ex = tvm.compile(mod, target="llvm")
        vm = relax.VirtualMachine(ex, tvm.cpu())
        return vm["main"](*[tvm.runtime.tensor(a) for a in arrays])

    tvm_src = src
    if "R.ewise_fma" in src:
        # TVM has no legalization (nor VM lowering) for R.ewise_fma.
        tvm_src = re.sub(r"R\.ewise_fma\((\w+), (\w+), (\w+)\)", r"R.add(R.multiply(\1, \2), \3)", src)
        extra.append("TVM cannot compile R.ewise_fma (no legalization); the expected values come from the same "
                     "program with R.ewise_fma(a, b, c) written as R.add(R.multiply(a, b), c)")
    try:
        result = run(tvm_src)
    except Exception as e:  # noqa: BLE001
        if "vdevice" not in src:
            raise
        first = str(e).strip().splitlines()
        first = first[-1] if first else type(e).__name__
        extra.append(
            "TVM cannot compile this two-VDevice module for a CPU-only llvm build "
            f"({first[:200]}); the expected output comes from the same program with the "
            "VDevice annotations removed and R.to_vdevice replaced by the identity"
        )
        result = run(strip_vdevices(tvm_src))
    outs = []
    structure = flatten(result, outs)
    all_notes = [n for n in [notes] + extra if n]
    data = {
        "program": name + ".py",
        "entry": "main",
        "generator": f"TVM {tvm.__version__}, tvm.compile(target=\"llvm\"), relax.VirtualMachine on tvm.cpu()",
        "rtol": rtol,
        "atol": 1e-6,
        "transcendental": rtol > DEFAULT,
        "inputs": [tensor_json(a) for a in arrays],
        "outputs": outs,
        "structure": structure,
        "notes": "; ".join(all_notes),
    }
    with open(os.path.join(E2E, name + ".json"), "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print(f"{name}: {len(outs)} outputs, structure {json.dumps(structure)}")


def main():
    names = sys.argv[1:] or sorted(PROGRAMS)
    missing = sorted(set(p[:-3] for p in os.listdir(E2E) if p.endswith(".py")) - set(PROGRAMS))
    if missing:
        sys.exit(f"programs without an input spec: {missing}")
    failed = []
    for name in names:
        try:
            generate(name)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: FAILED {type(e).__name__}: {str(e)[-2000:]}")
            failed.append(name)
    if failed:
        sys.exit(f"failed: {failed}")


if __name__ == "__main__":
    main()
