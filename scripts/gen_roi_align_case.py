#!/usr/bin/env python3
"""Write crates/engine/tests/data/roi_align_tvm.json: one program of
`R.vision.roi_align` calls (average and max, aligned or not, fixed and adaptive
sampling, NCHW and NHWC, a symbolic number of regions), its inputs and Apache
TVM 0.27's outputs (`tvm.compile(mod, "llvm")`). Not used by the build or CI.

Usage (a venv with apache-tvm==0.27.0.post1 and numpy):
  python scripts/gen_roi_align_case.py
"""
import json
import os

import numpy as np
import tvm
from tvm import relax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "engine", "tests", "data", "roi_align_tvm.json")

# (mode, aligned, sample_ratio, layout, pooled_size, spatial_scale)
CASES = [
    ("avg", False, 0, "NCHW", (2, 3), 0.5),
    ("avg", True, 0, "NCHW", (2, 3), 0.5),
    ("avg", False, 2, "NCHW", (3, 2), 1.0),
    ("max", False, 0, "NCHW", (2, 2), 0.5),
    ("max", True, 3, "NCHW", (1, 3), 0.25),
    ("avg", False, -1, "NHWC", (2, 3), 0.5),
    ("max", True, 2, "NHWC", (2, 2), 1.0),
]


def main():
    rng = np.random.default_rng(20261128)
    x = rng.standard_normal((2, 3, 6, 7)).astype("float32")
    # batch, x1, y1, x2, y2: inside, partly outside, tiny, reversed, far outside
    rois = np.array(
        [
            [0, 0.3, 1.2, 7.5, 8.1],
            [1, -3.0, -2.0, 2.0, 1.0],
            [0, 5.0, 4.0, 30.0, 20.0],
            [1, 2.0, 2.0, 2.4, 2.2],
            [0, 6.0, 5.0, 1.0, 1.0],
            [1, 40.0, 40.0, 50.0, 60.0],
        ],
        "float32",
    )
    n = tvm.tirx.Var("n", "int64")
    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorType(x.shape, "float32"))
    xh = relax.Var("xh", relax.TensorType((2, 6, 7, 3), "float32"))
    rv = relax.Var("rois", relax.TensorType((n, 5), "float32"))
    with bb.function("main", [xv, xh, rv]):
        with bb.dataflow():
            outs = []
            for mode, aligned, sr, layout, ps, scale in CASES:
                data = xv if layout == "NCHW" else xh
                outs.append(bb.emit(relax.op.vision.roi_align(data, rv, ps, scale, sr, aligned, layout, mode)))
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    mod = bb.get()
    vm = relax.VirtualMachine(tvm.compile(mod, "llvm"), tvm.cpu())
    xn = x.transpose(0, 2, 3, 1).copy()
    res = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(xn), tvm.runtime.tensor(rois))
    case = {
        "note": "made by scripts/gen_roi_align_case.py with apache-tvm 0.27.0.post1",
        "program": mod.script(),
        "x": x.reshape(-1).tolist(),
        "rois": rois.reshape(-1).tolist(),
        "out": [r.numpy().reshape(-1).tolist() for r in res],
        "shapes": [list(r.numpy().shape) for r in res],
    }
    with open(OUT, "w") as f:
        json.dump(case, f)
    print(f"wrote {OUT}: {len(CASES)} outputs")


if __name__ == "__main__":
    main()
