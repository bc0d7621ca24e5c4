# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"keys": ["cpu"], "kind": "llvm", "tag": ""}, 0, "global"), I.vdevice({"keys": ["webgpu", "gpu"], "kind": "webgpu", "max_num_threads": 256, "tag": ""}, 0, "global")]})
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global"), y: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global")) -> R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global"):
        a: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global") = R.add(x, y)
        ag: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global") = R.to_vdevice(a, dst_vdevice="webgpu:0:global")
        yg: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global") = R.to_vdevice(y, dst_vdevice="webgpu:0:global")
        b: R.Tensor((2, 3), dtype="float32", vdevice="webgpu:0:global") = R.multiply(ag, yg)
        c: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global") = R.to_vdevice(b, dst_vdevice="llvm:0:global")
        d: R.Tensor((2, 3), dtype="float32", vdevice="llvm:0:global") = R.subtract(c, x)
        return d
