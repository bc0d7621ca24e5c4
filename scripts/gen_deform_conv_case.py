#!/usr/bin/env python3
"""Write tests/onnx/node/test_deform_conv_groups_strides_dilations_ref in ONNX's
node-test layout: a DeformConv (opset 19) with two batches, two convolution groups,
two offset groups, a 3x2 kernel, strides (2, 1), dilations (1, 2), asymmetric pads,
a mask and a bias, offsets that reach outside the image; the expected output is
ONNX's reference evaluator's (ONNX Runtime's CPU provider, when it has DeformConv,
must agree). ONNX's own node tests cover one group, stride and dilation only. Not
used by the build.

Usage (numpy, onnx; onnxruntime optional): python scripts/gen_deform_conv_case.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "test_deform_conv_groups_strides_dilations_ref"
OUT = os.path.join(ROOT, "tests", "onnx", "node", NAME)


def main():
    rng = np.random.default_rng(20261128)
    x = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    offset = (rng.standard_normal((2, 24, 3, 5)) * 1.5).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    mask = rng.uniform(0, 1, (2, 12, 3, 5)).astype(np.float32)
    node = helper.make_node(
        "DeformConv",
        ["X", "W", "offset", "B", "mask"],
        ["Y"],
        group=2,
        offset_group=2,
        kernel_shape=[3, 2],
        strides=[2, 1],
        dilations=[1, 2],
        pads=[1, 0, 2, 1],
    )
    feeds = {"X": x, "W": w, "offset": offset, "B": b, "mask": mask}
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node],
        NAME,
        [helper.make_tensor_value_info(k, f, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info("Y", f, [2, 6, 3, 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    (y,) = ReferenceEvaluator(model).run(None, feeds)
    try:
        import onnxruntime as ort

        (o,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
        np.testing.assert_allclose(o, y, rtol=1e-5, atol=1e-5)
        print("ONNX Runtime agrees")
    except Exception as e:  # noqa: BLE001 (ONNX Runtime may lack DeformConv)
        print("ONNX Runtime not compared:", str(e).splitlines()[0][:120])
    os.makedirs(os.path.join(OUT, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(OUT, "model.onnx"))
    for i, (k, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(OUT, "test_data_set_0", f"input_{i}.pb"))
    onnx.save_tensor(numpy_helper.from_array(y.astype(np.float32), "Y"), os.path.join(OUT, "test_data_set_0", "output_0.pb"))
    print(NAME, y.shape, float(np.abs(y).max()))


if __name__ == "__main__":
    main()
