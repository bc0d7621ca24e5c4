"""GPU-machine preparation for scripts/device/run.sh: models, inputs, references and
baseline timings (numpy, onnx, onnxruntime, torch, transformers; no TVM).

  python3 prep.py OUT [mm N] [resnet50] [bert] [decoder DIR]...

OUT/mm/       prog.py (R.matmul N x N), in0000.npy, in0001.npy, expected.npy
OUT/resnet50/ model.onnx (onnx's light ResNet-50, seeded He weights), in0000.npy, expected.npy (ORT)
OUT/bert/     model.onnx (HF BertModel, BERT-base config, seeded init, seq 128), in*.npy, expected.npy
DIR/params.npz for the decoder from DIR/param_shapes.json (gen_decoder.py's random_params, same seed)
Prints BASELINE lines: ONNX Runtime CPU and torch CUDA (fp32, TF32 off) medians.
"""
import json, os, sys, time
import numpy as np

out = sys.argv[1]
args = sys.argv[2:]


def median_ms(f, n=20, warm=3):
    for _ in range(warm):
        f()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return float(np.median(ts))


def ort_baseline(name, path, feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = sess.run(None, feeds)[0]
    ms = median_ms(lambda: sess.run(None, feeds))
    print(f"BASELINE {name} onnxruntime-cpu {ms:.3f} ms (threads: default, {os.cpu_count()} cpus)", flush=True)
    return ref


def real_weights(m, rng):
    """Seeded He-scaled weights in place of the light models' placeholders
    (ConstantOfShape nodes and float initializers; BatchNorm variances positive, scales
    near 1), as ../shared/realmodels/prep.py makes them; returns the data inputs."""
    from onnx import numpy_helper
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    bn_var = {n.input[4] for n in m.graph.node if n.op_type == "BatchNormalization"}
    bn_scale = {n.input[1] for n in m.graph.node if n.op_type == "BatchNormalization"}

    def fill(name, shape):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        scale = np.sqrt(2.0 / max(fan_in, 1)) if len(shape) > 1 else 0.1
        a = (rng.standard_normal(shape) * scale).astype(np.float32)
        if name in bn_var:
            a = np.abs(a) + 0.5
        if name in bn_scale:
            a = a + 1.0
        return a

    nodes, new = [], []
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape" and n.input[0] in inits:
            shape = [int(x) for x in inits[n.input[0]]]
            new.append(numpy_helper.from_array(fill(n.output[0], shape), n.output[0]))
        else:
            nodes.append(n)
    keep = [numpy_helper.from_array(fill(k, list(a.shape)) if a.dtype == np.float32 else a, k)
            for k, a in inits.items() if not k.endswith("__SHAPE")]
    g = m.graph
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(keep + new)
    weights = {i.name for i in g.initializer} | set(inits)
    data = [i for i in g.input if i.name not in weights]
    del g.input[:]
    g.input.extend(data)
    m.ir_version = max(m.ir_version, 4)
    return data


def cuda_sync():
    import torch
    torch.cuda.synchronize()


i = 0
while i < len(args):
    what = args[i]
    i += 1
    if what == "mm":
        n = int(args[i]); i += 1
        d = os.path.join(out, "mm"); os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        np.save(os.path.join(d, "in0000.npy"), a)
        np.save(os.path.join(d, "in0001.npy"), b)
        np.save(os.path.join(d, "expected.npy"), a @ b)
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write(f'''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor(({n}, {n}), dtype="float32"), b: R.Tensor(({n}, {n}), dtype="float32")) -> R.Tensor(({n}, {n}), dtype="float32"):
        with R.dataflow():
            c: R.Tensor(({n}, {n}), dtype="float32") = R.matmul(a, b, out_dtype="void")
            R.output(c)
        return c
''')
        try:
            import torch
            if torch.cuda.is_available():
                torch.backends.cuda.matmul.allow_tf32 = False
                ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
                def mm():
                    torch.mm(ta, tb); cuda_sync()
                ms = median_ms(mm, n=20)
                print(f"BASELINE mm{n} torch-cuda-fp32 {ms:.3f} ms {2*n**3/ms/1e9:.1f} TFLOP/s ({torch.cuda.get_device_name()})", flush=True)
        except Exception as e:
            print(f"torch baseline failed: {e}")
    elif what == "resnet50":
        import onnx
        d = os.path.join(out, "resnet50"); os.makedirs(d, exist_ok=True)
        light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
        m = onnx.load(os.path.join(light, "light_resnet50.onnx"))
        rng = np.random.default_rng(0)
        data = real_weights(m, rng)
        # Compare logits, not the probabilities of the final Softmax (which saturate to
        # 0/1 with these weights and would hide any error).
        last = m.graph.node[-1]
        if last.op_type == "Softmax" and last.output[0] == m.graph.output[0].name:
            m.graph.output[0].name = last.input[0]
            del m.graph.node[-1]
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        feeds = {x.name: rng.standard_normal([dd.dim_value for dd in x.type.tensor_type.shape.dim]).astype(np.float32) for x in data}
        for k, x in enumerate(data):
            np.save(os.path.join(d, f"in{k:04d}.npy"), feeds[x.name])
        np.save(os.path.join(d, "expected.npy"), ort_baseline("resnet50", path, feeds))
    elif what == "bert":
        import torch
        from transformers import BertConfig, BertModel
        d = os.path.join(out, "bert"); os.makedirs(d, exist_ok=True)
        torch.manual_seed(0)
        model = BertModel(BertConfig(attn_implementation="eager")).eval()
        seq = 128
        rng = np.random.default_rng(0)
        ids = rng.integers(0, 30522, (1, seq)).astype(np.int64)
        mask = np.ones((1, seq), dtype=np.int64)

        class W(torch.nn.Module):
            def __init__(self, m):
                super().__init__(); self.m = m
            def forward(self, input_ids, attention_mask):
                return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        w = W(model).eval()
        path = os.path.join(d, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(w, (torch.from_numpy(ids), torch.from_numpy(mask)), path,
                              input_names=["input_ids", "attention_mask"], output_names=["out"],
                              dynamo=False, opset_version=17)
        np.save(os.path.join(d, "in0000.npy"), ids)
        np.save(os.path.join(d, "in0001.npy"), mask)
        np.save(os.path.join(d, "expected.npy"), ort_baseline("bert", path, {"input_ids": ids, "attention_mask": mask}))
        if torch.cuda.is_available():
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            wc = w.cuda()
            ti, tm = torch.from_numpy(ids).cuda(), torch.from_numpy(mask).cuda()
            def run():
                with torch.no_grad():
                    wc(ti, tm)
                cuda_sync()
            print(f"BASELINE bert torch-cuda-fp32-eager {median_ms(run):.3f} ms", flush=True)
    elif what == "decoder":
        d = args[i]; i += 1
        shapes = json.load(open(os.path.join(d, "param_shapes.json")))
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        from decoder_weights import seeded_weights
        params = seeded_weights(shapes["params"], shapes["seed"])
        np.savez(os.path.join(d, "params.npz"), **params)
        print(f"decoder weights: {sum(v.size for v in params.values())} parameters", flush=True)
    else:
        sys.exit(f"unknown step {what}")
