# from tvm.script import ir as I
# from tvm.script import tirx as T
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global")]})
    @T.prim_func(private=True)
    def add_inplace(a: T.Buffer((T.int64(2), T.int64(3)), "float32"), b: T.Buffer((T.int64(2), T.int64(3)), "float32")):
        T.func_attr({"tir.noalias": True})
        for i, j in T.grid(T.int64(2), T.int64(3)):
            a[i, j] = a[i, j] + b[i, j]

    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32")):
        cls = Module
        nothing: R.Object = R.null_value()
        h: R.Tensor((2, 3), dtype="float32") = R.hint_on_device(x, R.cpu(0))
        x1: R.Tensor((2, 3), dtype="float32") = R.multiply(h, y)
        z: R.Tensor((2, 3), dtype="float32") = R.call_tir_inplace(cls.add_inplace, (x1, y), inplace_indices=[0], out_ty=R.Tensor((2, 3), dtype="float32"))
        s: R.Tensor((), dtype="float32") = R.sum(z)
        ok: R.Tensor((), dtype="bool") = R.greater(s, R.const(-1000000.0, "float32"))
        R.assert_op(ok, format="the sum is finite")
        d: R.Tensor((2, 3), dtype="float32") = R.call_dps_packed("test.add_one_dps", (z,), out_ty=R.Tensor((2, 3), dtype="float32"))
        d2: R.Tensor((2, 3), dtype="float32") = R.add(d, y)
        e: R.Tensor((2, 3), dtype="float32") = R.call_inplace_packed("test.double_inplace", d2, inplace_indices=[0], ty_args=(R.Tensor((2, 3), dtype="float32"),))
        R.print(e, format="e = {}")
        return (z, d, e)
