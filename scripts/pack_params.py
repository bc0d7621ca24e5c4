#!/usr/bin/env python3
"""Pack the arguments written by prep.py into one .npz keyed by `main`'s parameter names.

Usage: python pack_params.py MODEL_DIR OUT_NPZ
MODEL_DIR holds prog.py and in0000.npy, in0001.npy, ... (every parameter of `main`, in order);
the parameter names are read from the signature of `main` in prog.py.
"""
import re, sys

import numpy as np


def param_names(prog):
    src = open(prog).read()
    sig = re.search(r"def main\((.*?)\)\s*(->|:)", src, re.S).group(1)
    return re.findall(r"(\w+)\s*:\s*R\.", sig)


def main():
    model_dir, out = sys.argv[1], sys.argv[2]
    names = param_names(f"{model_dir}/prog.py")
    arrays = {n: np.load(f"{model_dir}/in{i:04d}.npy") for i, n in enumerate(names)}
    np.savez(out, **arrays)
    print(f"{out}: {len(arrays)} arrays")


if __name__ == "__main__":
    main()
