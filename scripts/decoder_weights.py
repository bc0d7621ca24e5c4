"""The decoders' seeded random weights (numpy only): gen_decoder.py writes them with TVM's
reference run, and scripts/device/prep.py makes the same ones again on a machine without TVM
from the names, shapes and dtypes gen_decoder's output lists."""
import numpy as np


def seeded_weights(specs, seed):
    """{name: array} for specs [(name, shape, dtype)], in order, from one generator seeded
    with `seed`: norm weights near 1, embeddings N(0, 1), other weights N(0, 1/fan_in)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape, dtype in specs:
        shape = [int(d) for d in shape]
        if "layernorm" in name or name.endswith("norm.weight"):
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        elif "embed" in name:
            w = rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) / np.sqrt(shape[-1])
        out[name] = w.astype(dtype)
    return out
