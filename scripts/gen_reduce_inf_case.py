#!/usr/bin/env python3
"""Write tests/onnx/node/test_reduce_max_min_infinite_rows_ort in ONNX's node-test
layout: ReduceMax and ReduceMin (opset 18, constant axes) of float32 and float16
rows that hold only -inf, only +inf, a mix, or ordinary values, with ONNX
Runtime's outputs (checked against ONNX's reference evaluator). ONNX's max of a
row of -inf is -inf; Relax's `max` starts from the lowest finite value, so the
importer maps that value back to -inf (and likewise for min). Not used by the build.

Usage (numpy, onnx, onnxruntime): python scripts/gen_reduce_inf_case.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "test_reduce_max_min_infinite_rows_ort"
OUT = os.path.join(ROOT, "tests", "onnx", "node", NAME)


def main():
    inf = np.inf
    rows = [[-inf, -inf, -inf], [inf, inf, inf], [-inf, 2.5, inf], [1.0, -3.0, 0.5], [-inf, -7.0, -inf]]
    x = np.array(rows, np.float32)
    h = np.array(rows, np.float16)
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [
        helper.make_node("ReduceMax", ["x", "axes"], ["max_x"], keepdims=0),
        helper.make_node("ReduceMin", ["x", "axes"], ["min_x"], keepdims=1),
        helper.make_node("ReduceMax", ["h", "axes"], ["max_h"], keepdims=0),
        helper.make_node("ReduceMin", ["h", "axes"], ["min_h"], keepdims=0),
    ]
    f, f16 = TensorProto.FLOAT, TensorProto.FLOAT16
    graph = helper.make_graph(
        nodes,
        NAME,
        [helper.make_tensor_value_info("x", f, [5, 3]), helper.make_tensor_value_info("h", f16, [5, 3])],
        [
            helper.make_tensor_value_info("max_x", f, [5]),
            helper.make_tensor_value_info("min_x", f, [5, 1]),
            helper.make_tensor_value_info("max_h", f16, [5]),
            helper.make_tensor_value_info("min_h", f16, [5]),
        ],
        initializer=[axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    feeds = {"x": x, "h": h}
    outs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    refs = ReferenceEvaluator(model).run(None, feeds)
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r)
    os.makedirs(os.path.join(OUT, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(OUT, "model.onnx"))
    for i, (k, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(OUT, "test_data_set_0", f"input_{i}.pb"))
    for i, (o, g) in enumerate(zip(outs, graph.output)):
        onnx.save_tensor(numpy_helper.from_array(o, g.name), os.path.join(OUT, "test_data_set_0", f"output_{i}.pb"))
    print(NAME, [o.ravel().tolist() for o in outs])


if __name__ == "__main__":
    main()
