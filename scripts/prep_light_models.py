#!/usr/bin/env python3
"""Prepare the nine ImageNet CNNs that the `onnx` package ships as light models
(AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
ZFNet-512) for `tests/onnx_import.rs`'s `real_onnx_models_from_dir`: for each,
`DIR/<name>/model.onnx` with seeded random weights (the filler of
`../shared/realmodels/prep.py`), `in0000.npy`, ONNX Runtime's `expected.npy` and
`meta.json` with its median latency. Not used by the build or CI.

Usage (a venv with onnx, onnxruntime, numpy):
  python scripts/prep_light_models.py DIR [--prep ../shared/realmodels/prep.py] [--only NAME,...]
"""
import argparse
import importlib.util
import json
import os
import time

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--prep", default=os.path.join(ROOT, "..", "shared", "realmodels", "prep.py"))
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("prep", a.prep)
    prep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prep)
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    only = [s for s in a.only.split(",") if s]
    for name in NAMES:
        if only and name not in only:
            continue
        out = os.path.join(a.out, name)
        os.makedirs(out, exist_ok=True)
        m = onnx.load(os.path.join(light, f"light_{name}.onnx"))
        rng = np.random.default_rng(a.seed)
        data = prep.real_weights(m, rng)
        path = os.path.join(out, "model.onnx")
        onnx.save(m, path)
        feeds = {
            i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in data
        }
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        ref = sess.run(None, feeds)[0]
        times = []
        for _ in range(10):
            t = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - t) * 1000)
        np.save(os.path.join(out, "in0000.npy"), next(iter(feeds.values())))
        np.save(os.path.join(out, "expected.npy"), ref)
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump({"ort_ms": float(np.median(times))}, f)
        print(f"{name}: output {tuple(ref.shape)}, ONNX Runtime {np.median(times):.1f} ms")


if __name__ == "__main__":
    main()
