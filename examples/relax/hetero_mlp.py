# A heterogeneous two-layer perceptron: input normalisation on the host (llvm),
# both dense layers on the GPU (vulkan), R.to_vdevice between them.
# from tvm.script import ir as I
# from tvm.script import tir as T
# from tvm.script import relax as R


@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["vulkan", "gpu"], "kind": "vulkan", "tag": ""}, 0, "global")]})

    @T.prim_func(private=True, s_tir=True)
    def normalize(var_x: T.handle, mean: T.Buffer((T.int64(32),), "float32"), inv_std: T.Buffer((T.int64(32),), "float32"), var_out: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(32)))
        out = T.match_buffer(var_out, (n, T.int64(32)))
        for i, j in T.grid(n, T.int64(32)):
            with T.sblock("normalize"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = (x[vi, vj] - mean[vj]) * inv_std[vj]

    @T.prim_func(private=True, s_tir=True)
    def dense_relu(var_x: T.handle, w: T.Buffer((T.int64(32), T.int64(64)), "float32"), b: T.Buffer((T.int64(64),), "float32"), var_out: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(32)))
        out = T.match_buffer(var_out, (n, T.int64(64)))
        acc = T.sblock_alloc_buffer((n, T.int64(64)))
        for i, j, k in T.grid(n, T.int64(64), T.int64(32)):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    acc[vi, vj] = T.float32(0.0)
                acc[vi, vj] = acc[vi, vj] + x[vi, vk] * w[vk, vj]
        for i, j in T.grid(n, T.int64(64)):
            with T.sblock("bias_relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = T.max(acc[vi, vj] + b[vj], T.float32(0.0))

    @T.prim_func(private=True, s_tir=True)
    def dense(var_x: T.handle, w: T.Buffer((T.int64(64), T.int64(10)), "float32"), b: T.Buffer((T.int64(10),), "float32"), var_out: T.handle):
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(64)))
        out = T.match_buffer(var_out, (n, T.int64(10)))
        acc = T.sblock_alloc_buffer((n, T.int64(10)))
        for i, j, k in T.grid(n, T.int64(10), T.int64(64)):
            with T.sblock("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    acc[vi, vj] = T.float32(0.0)
                acc[vi, vj] = acc[vi, vj] + x[vi, vk] * w[vk, vj]
        for i, j in T.grid(n, T.int64(10)):
            with T.sblock("bias"):
                vi, vj = T.axis.remap("SS", [i, j])
                out[vi, vj] = acc[vi, vj] + b[vj]

    @R.function
    def main(
        x: R.Tensor(("n", 32), dtype="float32", vdevice="llvm:0:global"),
        mean: R.Tensor((32,), dtype="float32", vdevice="llvm:0:global"),
        inv_std: R.Tensor((32,), dtype="float32", vdevice="llvm:0:global"),
        w1: R.Tensor((32, 64), dtype="float32", vdevice="vulkan:0:global"),
        b1: R.Tensor((64,), dtype="float32", vdevice="vulkan:0:global"),
        w2: R.Tensor((64, 10), dtype="float32", vdevice="vulkan:0:global"),
        b2: R.Tensor((10,), dtype="float32", vdevice="vulkan:0:global"),
    ) -> R.Tensor(("n", 10), dtype="float32", vdevice="llvm:0:global"):
        n = T.int64()
        cls = Module
        xn = R.call_tir(cls.normalize, (x, mean, inv_std), out_ty=R.Tensor((n, 32), dtype="float32", vdevice="llvm:0:global"))
        xg = R.to_vdevice(xn, dst_vdevice="vulkan:0:global")
        h = R.call_tir(cls.dense_relu, (xg, w1, b1), out_ty=R.Tensor((n, 64), dtype="float32", vdevice="vulkan:0:global"))
        y = R.call_tir(cls.dense, (h, w2, b2), out_ty=R.Tensor((n, 10), dtype="float32", vdevice="vulkan:0:global"))
        out = R.to_vdevice(y, dst_vdevice="llvm:0:global")
        return out
