#!/usr/bin/env python3
"""Steady-state latency of ONNX Runtime (CPU) and TVM (`tvm.compile(mod, target="llvm")`,
Relax VM) on the models of a prep.py directory, for scripts/bench_models.sh.

Usage: python bench_models.py DIR [--model NAME ...] [--repeat N] [--budget-s S]
Prints `RESULT <model> ort|tvm <median ms> <runs>` lines; a column whose package is missing
is reported on stderr and left out. One warm-up run, then at least 1 and at most N timed runs,
stopping after S seconds.
"""
import argparse, glob, os, sys, time

import numpy as np


def timed(fn, repeat, budget):
    fn()  # warm-up
    times, start = [], time.perf_counter()
    while len(times) < repeat and (not times or time.perf_counter() - start < budget):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2], len(times)


def args_of(d):
    return [np.load(p) for p in sorted(glob.glob(os.path.join(d, "in*.npy")))]


def bench_ort(d, repeat, budget):
    import onnxruntime as ort

    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    args = args_of(d)
    feed = {i.name: args[k] for k, i in enumerate(sess.get_inputs())}
    return timed(lambda: sess.run(None, feed), repeat, budget)


def bench_tvm(d, repeat, budget):
    import tvm
    from tvm import relax
    from tvm.script import from_source

    mod = from_source(open(os.path.join(d, "prog.py")).read())
    ex = tvm.compile(mod, target="llvm")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    args = [make(a, dev) for a in args_of(d)]
    return timed(lambda: vm["main"](*args), repeat, budget)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--model", action="append")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--budget-s", type=float, default=60.0)
    a = p.parse_args()
    models = a.model or ["squeezenet", "shufflenet", "resnet50"]
    for name, bench in (("ort", bench_ort), ("tvm", bench_tvm)):
        for m in models:
            d = os.path.join(a.dir, m)
            if not os.path.isfile(os.path.join(d, "prog.py")):
                continue
            try:
                ms, n = bench(d, max(a.repeat, 1), a.budget_s)
                print(f"RESULT {m} {name} {ms:.3f} {n}", flush=True)
            except ImportError as e:
                print(f"note: no {name} column ({e})", file=sys.stderr)
                break
            except Exception as e:  # a failing model leaves its cell empty
                print(f"note: {m} {name} failed: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
