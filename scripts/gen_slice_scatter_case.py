#!/usr/bin/env python3
"""Make crates/engine/tests/data/slice_scatter_tvm.json: R.slice_scatter calls (a slice along
each axis, a step of 2, the whole axis, int64 data) with inputs and the outputs of TVM 0.27
(`tvm.compile(mod, target="llvm")`). Run with a venv holding apache-tvm==0.27.0.post1 and numpy."""
import json, numpy as np, tvm
from tvm import relax
from tvm.script import relax as R
prog = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((6, 5), dtype="float32"), a: R.Tensor((2, 5), dtype="float32"), b: R.Tensor((6, 3), dtype="float32"), c: R.Tensor((6, 5), dtype="float32"), d: R.Tensor((3, 5), dtype="int64"), xi: R.Tensor((6, 5), dtype="int64")) -> R.Tuple(R.Tensor((6, 5), dtype="float32"), R.Tensor((6, 5), dtype="float32"), R.Tensor((6, 5), dtype="float32"), R.Tensor((6, 5), dtype="int64")):
        with R.dataflow():
            lv: R.Tensor((6, 5), dtype="float32") = R.slice_scatter(x, a, 1, 3, 1, axis=0)
            lv1: R.Tensor((6, 5), dtype="float32") = R.slice_scatter(x, b, 0, 5, 2, axis=1)
            lv2: R.Tensor((6, 5), dtype="float32") = R.slice_scatter(x, c, 0, 6, 1, axis=0)
            lv3: R.Tensor((6, 5), dtype="int64") = R.slice_scatter(xi, d, 1, 6, 2, axis=-2)
            gv: R.Tuple(R.Tensor((6, 5), dtype="float32"), R.Tensor((6, 5), dtype="float32"), R.Tensor((6, 5), dtype="float32"), R.Tensor((6, 5), dtype="int64")) = lv, lv1, lv2, lv3
            R.output(gv)
        return gv
'''
mod = tvm.script.from_source(prog)
rng = np.random.default_rng(0)
ins = [rng.standard_normal(s).astype(np.float32) for s in [(6,5),(2,5),(6,3),(6,5)]]
ins += [rng.integers(-100,100,(3,5)).astype(np.int64), rng.integers(-100,100,(6,5)).astype(np.int64)]
ex = tvm.compile(mod, target="llvm")
vm = relax.VirtualMachine(ex, tvm.cpu())
out = vm["main"](*[tvm.runtime.tensor(a) for a in ins])
outs = [o.numpy() for o in out]
json.dump({"program": prog, "inputs": [a.ravel().tolist() for a in ins], "out": [o.ravel().tolist() for o in outs]}, open("crates/engine/tests/data/slice_scatter_tvm.json", "w"))
print([o.shape for o in outs])
