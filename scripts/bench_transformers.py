#!/usr/bin/env python3
"""Steady-state latency of Hugging Face transformers (BERT, GPT-2, Llama) as Apache TVM's front
ends print them: ours on the host and on the GPU, ONNX Runtime (CPU), torch (CPU) and TVM
(`tvm.compile(mod, target="llvm")`, Relax VM), all measured in this one run, with each column's
ratio to ONNX Runtime.

Usage: python scripts/bench_transformers.py ROOT [--cases a,b] [--seq 128] [--repeat 10]
                                            [--devices cpu,gpu] [--relax PATH] [--no-tvm] [--no-torch]
                                            [--stat median|min]
  ROOT       case directories made by the transformer generator (`gen_hf.py`: hf_<model>_<preset>_<route>/
             with meta.json, prog_static.py, ids_<L>.npy, w*.npy, model_static.onnx for the onnx route);
             make BERT-base and GPT-2 small at seq 128 with `--preset base --static-seq 128`
  --repeat   timed runs per cell after one warm-up run (default 10); every column is the median
  --relax    the relax binary (default target/release/relax)
  --stat     what every column reports: the median of the timed runs (default) or their
             minimum (steadier on a machine shared with other work)
Each model's ONNX Runtime and torch times are measured once (from its onnx case directory and its
config) and shared by the routes. A column whose package is missing is left out with a note.
"""
import argparse, glob, json, os, re, subprocess, sys, time

import numpy as np


STAT = "median"


def timed(fn, repeat):
    fn()  # warm-up
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return ts[0] if STAT == "min" else ts[len(ts) // 2]


def static_run(case, seq):
    meta = json.load(open(os.path.join(case, "meta.json")))
    for p in meta.get("progs", []):
        if p.get("symbolic") or "error" in p:
            continue
        for r in p["runs"]:
            if r["seq_len"] == seq:
                return meta, p, r
    return meta, None, None


def ours(relax, case, prog, run, device, repeat):
    # --lenient: the ONNX route's Llama calls vm.builtin.tensor_to_shape inside a dataflow block.
    cmd = [relax, "run", "--lenient", "--device", device, os.path.join(case, prog["prog"]), "--repeat", str(repeat + 1), "--stats",
           "--output", os.path.join(case, f"bench_out_{device}.npy")]
    for a in run["args"]:
        cmd += ["--input", os.path.join(case, a)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pat = r"min ([0-9.]+) ms" if STAT == "min" else r"median after the first ([0-9.]+) ms"
    m = re.search(pat, p.stderr)
    if p.returncode != 0 or not m:
        err = [l for l in p.stderr.splitlines() if l.startswith("error")]
        return None, (err[0] if err else p.stderr.strip()[-200:])
    got = np.load(os.path.join(case, f"bench_out_{device}.npy"))
    want = np.load(os.path.join(case, run["expected"]))
    ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-3, atol=1e-3)
    return float(m.group(1)), None if ok else f"output differs from the reference (max abs {np.abs(got - want).max():.3g})"


def ort_ms(case, run, repeat):
    import onnxruntime as ort

    onnx = os.path.join(case, "model_static.onnx")
    sess = ort.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    inputs = [np.load(os.path.join(case, a)) for a in run["args"][: len(sess.get_inputs())]]
    feed = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
    return timed(lambda: sess.run(None, feed), repeat)


def torch_ms(meta, run, case, repeat):
    import torch
    import transformers as tf

    cfg = tf.AutoConfig.for_model(**meta["config"])
    model = meta["model"]
    if model == "gpt2":
        m = tf.GPT2LMHeadModel(cfg)
    elif model == "bert":
        m = tf.BertModel(cfg, add_pooling_layer=False)
    elif model == "llama":
        m = tf.LlamaForCausalLM(cfg)
    else:
        raise ValueError(model)
    m = m.eval()
    names = meta.get("data_names", ["input_ids"])
    args = {n: torch.from_numpy(np.load(os.path.join(case, a))) for n, a in zip(names, run["args"])}
    with torch.no_grad():
        return timed(lambda: m(**args), repeat)


def tvm_ms(case, prog, run, repeat):
    import tvm
    from tvm import relax
    from tvm.script import from_source

    mod = from_source(open(os.path.join(case, prog["prog"])).read())
    ex = tvm.compile(mod, target="llvm")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    args = [make(np.load(os.path.join(case, a)), dev) for a in run["args"]]
    return timed(lambda: vm["main"](*args), repeat)


def try_col(name, fn):
    try:
        return fn()
    except ImportError as e:
        print(f"note: no {name} column: {e}", file=sys.stderr)
    except Exception as e:  # a failing baseline is reported, not fatal
        print(f"note: {name} failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--cases", default="")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--devices", default="cpu,gpu")
    ap.add_argument("--relax", default="target/release/relax")
    ap.add_argument("--no-tvm", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--stat", choices=["median", "min"], default="median")
    a = ap.parse_args()
    global STAT
    STAT = a.stat
    cases = sorted(d for d in glob.glob(os.path.join(a.root, "hf_*")) if os.path.isfile(os.path.join(d, "meta.json")))
    if a.cases:
        want = set(a.cases.split(","))
        cases = [c for c in cases if os.path.basename(c) in want]
    devices = [d for d in a.devices.split(",") if d]
    rows, ort_of, torch_of = [], {}, {}
    for case in cases:
        meta, prog, run = static_run(case, a.seq)
        if prog is None:
            print(f"note: {os.path.basename(case)}: no static program at seq {a.seq}", file=sys.stderr)
            continue
        key = (meta["model"], meta["preset"])
        print(f"timing {os.path.basename(case)} ...", file=sys.stderr)
        row = {"case": os.path.basename(case), "key": key}
        for dev in devices:
            row[dev], err = ours(a.relax, case, prog, run, dev, a.repeat)
            if err:
                print(f"note: {row['case']} ours --device {dev}: {err}", file=sys.stderr)
                row[dev] = None
        if meta["route"] == "onnx" and key not in ort_of:
            ort_of[key] = try_col("onnxruntime", lambda: ort_ms(case, run, a.repeat))
        if not a.no_torch and key not in torch_of:
            torch_of[key] = try_col("torch", lambda: torch_ms(meta, run, case, a.repeat))
        row["tvm"] = None if a.no_tvm else try_col("tvm", lambda: tvm_ms(case, prog, run, a.repeat))
        rows.append(row)

    def cell(ms, ort):
        if ms is None:
            return "-"
        return f"{ms:9.2f}" + (f" ({ms / ort:4.2f}x)" if ort else "")

    cols = devices + ["ORT", "torch", "TVM"]
    print(f"\nPer-inference latency at seq {a.seq} in ms, {a.stat} of {a.repeat} runs after a warm-up, "
          f"(ratio to ONNX Runtime); GPU = the first wgpu adapter")
    print(f"{'case':28} " + " ".join(f"{c:>18}" for c in cols))
    for row in rows:
        ort = ort_of.get(row["key"])
        vals = [row.get(d) for d in devices] + [ort, torch_of.get(row["key"]), row["tvm"]]
        print(f"{row['case']:28} " + " ".join(f"{cell(v, ort):>18}" for v in vals))


if __name__ == "__main__":
    main()
