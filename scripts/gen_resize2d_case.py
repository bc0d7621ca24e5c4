#!/usr/bin/env python3
"""Write crates/engine/tests/data/resize2d_tvm.json: one program of
`R.image.resize2d` calls (nearest_neighbor with every rounding method, linear,
cubic with and without `cubic_exclude`; every coordinate transformation mode,
`tf_crop_and_resize` with a region reaching outside the image; NCHW and NHWC;
up- and down-sampling, an extent of 1; a symbolic size; int32 and float16 data),
its inputs and Apache TVM 0.27's outputs (`tvm.compile(mod, "llvm")` and its
VM). Not used by the build or CI.

Usage (a venv with apache-tvm==0.27.0.post1 and numpy):
  python scripts/gen_resize2d_case.py
"""
import json
import os

import numpy as np
import tvm
from tvm import relax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "engine", "tests", "data", "resize2d_tvm.json")

# (data, size, keyword arguments); data: "x" (1, 2, 5, 6) float32 NCHW, "xh" the
# same values NHWC, "xi" int32 NCHW, "xf" float16 NCHW; size "hw" is the shape
# (h, w) of the input `y`.
ROI = (0.1, -0.2, 0.8, 1.3)
CASES = [
    ("x", (7, 7), dict()),  # BEiT's call
    ("x", (3, 4), dict()),
    ("x", (7, 9), dict(coordinate_transformation_mode="align_corners")),
    ("xh", (8, 3), dict(layout="NHWC", coordinate_transformation_mode="asymmetric")),
    ("x", (1, 9), dict(coordinate_transformation_mode="pytorch_half_pixel")),
    ("xh", (4, 8), dict(layout="NHWC", coordinate_transformation_mode="tf_half_pixel_for_nn")),
    ("x", (4, 7), dict(coordinate_transformation_mode="tf_crop_and_resize", roi=ROI, extrapolation_value=-1.5)),
    ("x", (10, 12), dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric")),
    ("x", (10, 12), dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")),
    ("x", (7, 9), dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")),
    ("xh", (7, 9), dict(layout="NHWC", method="nearest_neighbor", coordinate_transformation_mode="align_corners", rounding_method="round_prefer_ceil")),
    ("x", (9, 11), dict(method="nearest_neighbor", coordinate_transformation_mode="align_corners", rounding_method="round_prefer_floor")),
    ("x", (3, 4), dict(method="nearest_neighbor", rounding_method="round_prefer_floor")),
    ("x", (4, 8), dict(method="nearest_neighbor", coordinate_transformation_mode="tf_half_pixel_for_nn", rounding_method="ceil")),
    ("xh", (3, 4), dict(layout="NHWC", method="nearest_neighbor", coordinate_transformation_mode="pytorch_half_pixel", rounding_method="floor")),
    ("x", (4, 5), dict(method="nearest_neighbor", coordinate_transformation_mode="tf_crop_and_resize", roi=(-0.2, 0.1, 0.9, 1.1), extrapolation_value=0.5)),
    ("x", (7, 9), dict(method="cubic")),
    ("xh", (4, 8), dict(layout="NHWC", method="cubic", coordinate_transformation_mode="align_corners", cubic_alpha=-0.5)),
    ("x", (3, 4), dict(method="cubic", coordinate_transformation_mode="asymmetric", cubic_exclude=1)),
    ("x", (8, 10), dict(method="cubic", coordinate_transformation_mode="pytorch_half_pixel", cubic_exclude=1)),
    ("x", (4, 6), dict(method="cubic", coordinate_transformation_mode="tf_crop_and_resize", roi=ROI, cubic_exclude=1, extrapolation_value=2.0)),
    ("xh", (3, 7), dict(layout="NHWC", method="cubic", coordinate_transformation_mode="tf_half_pixel_for_nn")),
    ("x", "hw", dict()),
    ("x", "hw", dict(method="nearest_neighbor", coordinate_transformation_mode="asymmetric", rounding_method="floor")),
    ("xi", (7, 9), dict()),
    ("xi", (3, 4), dict(method="cubic")),
    ("xf", (7, 9), dict()),
]


def short(values):
    """float32 values with 9 significant digits (enough to read them back exactly)."""
    return [float(f"{v:.9g}") for v in np.asarray(values, dtype="float64").reshape(-1)]


def main():
    rng = np.random.default_rng(20261201)
    x = np.round(rng.standard_normal((1, 2, 5, 6)), 2).astype("float32")
    xi = rng.integers(-50, 50, (1, 2, 5, 6)).astype("int32")
    h = tvm.tirx.Var("h", "int64")
    w = tvm.tirx.Var("w", "int64")
    inputs = {
        "x": relax.Var("x", relax.TensorType((1, 2, 5, 6), "float32")),
        "xh": relax.Var("xh", relax.TensorType((1, 5, 6, 2), "float32")),
        "xi": relax.Var("xi", relax.TensorType((1, 2, 5, 6), "int32")),
        "xf": relax.Var("xf", relax.TensorType((1, 2, 5, 6), "float16")),
        "y": relax.Var("y", relax.TensorType((h, w), "float32")),
    }
    bb = relax.BlockBuilder()
    with bb.function("main", list(inputs.values())):
        with bb.dataflow():
            outs = []
            for data, size, kw in CASES:
                size = (h, w) if size == "hw" else size
                outs.append(bb.emit(relax.op.image.resize2d(inputs[data], size, **kw)))
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    mod = bb.get()
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    y = np.zeros((4, 7), "float32")
    args = [x, x.transpose(0, 2, 3, 1).copy(), xi, x.astype("float16"), y]
    res = vm["main"](*[tvm.runtime.tensor(a) for a in args])
    case = {
        "note": "made by scripts/gen_resize2d_case.py with apache-tvm 0.27.0.post1",
        "program": mod.script(),
        "x": short(x),
        "xi": xi.reshape(-1).tolist(),
        "y_shape": list(y.shape),
        "out": [
            r.numpy().reshape(-1).tolist() if r.numpy().dtype.kind == "i" else short(r.numpy())
            for r in res
        ],
        "dtypes": [str(r.numpy().dtype) for r in res],
        "shapes": [list(r.numpy().shape) for r in res],
    }
    with open(OUT, "w") as f:
        json.dump(case, f, separators=(",", ":"))
    print(f"wrote {OUT}: {len(CASES)} outputs, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
