#!/usr/bin/env python3
"""Write ONNX RoiAlign max-mode cases in ONNX's node-test layout under
tests/onnx/node/ (model.onnx, test_data_set_0/{input,output}_N.pb), with ONNX
Runtime's outputs, checked against ONNX's reference evaluator (the two agree on
max mode: the largest weighted corner value of each sample, then the largest
over the bin's samples). `checked_in_node_tests_pass` (tests/onnx_import.rs)
runs them through our importer on the host and the GPU. Not used by the build.

Usage (numpy, onnx, onnxruntime): python scripts/gen_roialign_max_cases.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "onnx", "node")
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def case(name, x, rois, batch, **attrs):
    ph, pw = attrs["output_height"], attrs["output_width"]
    t = NP2ONNX[x.dtype.type]
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], mode="max", **attrs)
    graph = helper.make_graph(
        [node],
        name,
        [
            helper.make_tensor_value_info("X", t, list(x.shape)),
            helper.make_tensor_value_info("rois", t, list(rois.shape)),
            helper.make_tensor_value_info("batch_indices", TensorProto.INT64, list(batch.shape)),
        ],
        [helper.make_tensor_value_info("Y", t, [rois.shape[0], x.shape[1], ph, pw])],
    )
    # ONNX Runtime implements RoiAlign up to opset 16
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    feeds = {"X": x, "rois": rois, "batch_indices": batch}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, feeds)
    (ref,) = ReferenceEvaluator(model).run(None, feeds)
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(d, "test_data_set_0", f"input_{i}.pb"))
    onnx.save_tensor(numpy_helper.from_array(y, "Y"), os.path.join(d, "test_data_set_0", "output_0.pb"))
    print(name, y.shape, float(np.abs(y).max()))


def main():
    rng = np.random.default_rng(20261128)
    # half_pixel, spatial scale 0.5, 3x3 samples per bin, two images, negative data,
    # regions inside, partly outside, past the image and below one pixel
    x = rng.standard_normal((2, 3, 8, 9)).astype(np.float32)
    rois = np.array(
        [
            [0.5, 1.0, 14.0, 12.0],
            [-6.0, -4.0, 5.0, 7.0],
            [10.0, 8.0, 30.0, 24.0],
            [3.2, 3.7, 3.9, 4.1],
        ],
        np.float32,
    )
    batch = np.array([0, 1, 1, 0], np.int64)
    case(
        "test_roialign_max_half_pixel_scaled_ort",
        x,
        rois,
        batch,
        coordinate_transformation_mode="half_pixel",
        output_height=3,
        output_width=2,
        sampling_ratio=3,
        spatial_scale=0.5,
    )
    # output_half_pixel (regions clamped to one pixel), one sample per bin, double
    x = rng.standard_normal((1, 2, 6, 5))
    rois = np.array([[0.0, 0.0, 4.0, 5.0], [3.0, 4.0, 1.0, 2.0], [1.5, 0.25, 4.75, 5.5]])
    batch = np.array([0, 0, 0], np.int64)
    case(
        "test_roialign_max_output_half_pixel_f64_ort",
        x,
        rois,
        batch,
        coordinate_transformation_mode="output_half_pixel",
        output_height=2,
        output_width=3,
        sampling_ratio=1,
        spatial_scale=1.0,
    )


if __name__ == "__main__":
    main()
