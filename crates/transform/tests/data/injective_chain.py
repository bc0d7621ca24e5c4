# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 6), "float32"), y: R.Tensor((6, 4), "float32")) -> R.Tensor((6, 4), "float32"):
        with R.dataflow():
            lv0 = R.exp(x)
            lv1 = R.permute_dims(lv0, axes=[1, 0])
            lv2 = R.add(lv1, y)
            lv3 = R.multiply(lv2, lv2)
            lv4 = R.sum(lv3, axis=[1], keepdims=True)
            lv5 = R.subtract(lv3, lv4)
            gv = lv5
            R.output(gv)
        return gv
