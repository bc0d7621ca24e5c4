#!/usr/bin/env python3
"""Make the small ONNX models of tests/onnx/ and ONNX Runtime's outputs for them.

Run once with a Python that has numpy, onnx, onnxruntime and torch (CPU); the build and
the tests never need Python. Usage: python scripts/gen_onnx_tests.py tests/onnx
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/onnx"
os.makedirs(OUT, exist_ok=True)
rng = np.random.default_rng(0)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def save(model, name, feeds_list):
    onnx.checker.check_model(model)
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, feeds in enumerate(feeds_list):
        outs = sess.run(None, feeds)
        for i, (n, v) in enumerate(feeds.items()):
            np.save(os.path.join(OUT, f"{name}.case{k}.in{i}.npy"), v)
        for i, o in enumerate(outs):
            np.save(os.path.join(OUT, f"{name}.case{k}.out{i}.npy"), o)
    print(name, os.path.getsize(path), "bytes")


def cnn():
    """A small CNN with the ImageNet networks' operators."""
    inits = [
        numpy_helper.from_array(f32(8, 3, 3, 3, scale=0.3), "conv1.w"),
        numpy_helper.from_array(f32(8, scale=0.1), "conv1.b"),
        numpy_helper.from_array((f32(8, scale=0.1) + 1).astype(np.float32), "bn.scale"),
        numpy_helper.from_array(f32(8, scale=0.1), "bn.bias"),
        numpy_helper.from_array(f32(8, scale=0.1), "bn.mean"),
        numpy_helper.from_array((np.abs(f32(8)) + 0.5).astype(np.float32), "bn.var"),
        numpy_helper.from_array(f32(8, 4, 3, 3, scale=0.3), "conv2.w"),
        numpy_helper.from_array(f32(8, 8, 1, 1, scale=0.3), "conv3.w"),
        numpy_helper.from_array(f32(10, 16, scale=0.3), "fc.w"),
        numpy_helper.from_array(f32(10, scale=0.1), "fc.b"),
        numpy_helper.from_array(np.array([-1, 16], dtype=np.int64), "shape2d"),
        numpy_helper.from_array(np.array(0.0, dtype=np.float32), "clip.min"),
        numpy_helper.from_array(np.array(6.0, dtype=np.float32), "clip.max"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.w", "conv1.b"], ["c1"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"], epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["p1", "conv2.w"], ["c2"], group=2, auto_pad="SAME_UPPER"),
        helper.make_node("Clip", ["c2", "clip.min", "clip.max"], ["k2"]),
        helper.make_node("Conv", ["p1", "conv3.w"], ["c3"]),
        helper.make_node("AveragePool", ["c3"], ["a3"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0),
        helper.make_node("Concat", ["k2", "a3"], ["cat"], axis=1),
        helper.make_node("Add", ["cat", "cat"], ["dbl"]),
        helper.make_node("GlobalAveragePool", ["dbl"], ["g"]),
        helper.make_node("Flatten", ["g"], ["flat"], axis=1),
        helper.make_node("Reshape", ["flat", "shape2d"], ["flat2"]),
        helper.make_node("Gemm", ["flat2", "fc.w", "fc.b"], ["fc"], transB=1, alpha=1.0, beta=1.0),
        helper.make_node("Softmax", ["fc"], ["y"], axis=1),
    ]
    g = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    save(m, "cnn", [{"x": f32(1, 3, 16, 16)}])


class Block(torch.nn.Module):
    """Embedding, layer norm, single-head causal attention with rotary sin/cos, GELU MLP."""

    def __init__(self, vocab=50, d=16):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.ln = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.o = torch.nn.Linear(d, d)
        self.fc1 = torch.nn.Linear(d, 2 * d)
        self.fc2 = torch.nn.Linear(2 * d, d)
        self.heads = 2
        self.d = d

    def forward(self, ids):
        b, s = ids.shape
        h = self.emb(ids)
        pos = torch.arange(s, dtype=torch.float32).unsqueeze(-1)
        h = h + torch.sin(pos) * 0.1 + torch.cos(pos) * 0.05
        x = self.ln(h)
        q, k, v = self.qkv(x).split(self.d, dim=-1)
        hd = self.d // self.heads
        q = q.reshape(b, s, self.heads, hd).transpose(1, 2)
        k = k.reshape(b, s, self.heads, hd).transpose(1, 2)
        v = v.reshape(b, s, self.heads, hd).transpose(1, 2)
        att = q @ k.transpose(-1, -2) / (hd ** 0.5)
        mask = torch.ones(s, s).tril() == 0
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, self.d)
        h = h + self.o(y)
        h = h + self.fc2(torch.nn.functional.gelu(self.fc1(h)))
        return h.pow(2).mean(dim=-1, keepdim=True).sqrt().neg() + h.pow(2)


def transformer():
    torch.manual_seed(0)
    m = Block().eval()
    ids = torch.randint(0, 50, (2, 7))
    path = os.path.join(OUT, "attn_dyn.onnx")
    torch.onnx.export(
        m, (ids,), path, input_names=["ids"], output_names=["y"],
        dynamic_axes={"ids": {0: "N", 1: "seq"}, "y": {0: "N", 1: "seq"}}, opset_version=17, dynamo=False,
    )
    model = onnx.load(path)
    save(model, "attn_dyn", [
        {"ids": rng.integers(0, 50, (1, 5)).astype(np.int64)},
        {"ids": rng.integers(0, 50, (3, 9)).astype(np.int64)},
    ])


def external():
    """A model whose weight lives in an external data file beside it."""
    w = f32(4, 4)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(w, "w")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = os.path.join(OUT, "ext.onnx")
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.bin", size_threshold=0)
    save_feeds = [{"x": f32(3, 4)}]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, feeds in enumerate(save_feeds):
        np.save(os.path.join(OUT, f"ext.case{k}.in0.npy"), feeds["x"])
        np.save(os.path.join(OUT, f"ext.case{k}.out0.npy"), sess.run(None, feeds)[0])


cnn()
transformer()
external()
