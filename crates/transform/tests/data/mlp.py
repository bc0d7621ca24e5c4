# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w0: R.Tensor((8, 16), "float32"), b0: R.Tensor((16,), "float32"), w1: R.Tensor((16, 3), "float32"), b1: R.Tensor((3,), "float32")) -> R.Tensor((4, 3), "float32"):
        with R.dataflow():
            lv0 = R.matmul(x, w0)
            lv1 = R.add(lv0, b0)
            lv2 = R.nn.relu(lv1)
            lv3 = R.matmul(lv2, w1)
            lv4 = R.add(lv3, b1)
            lv5 = R.exp(lv4)
            lv6 = R.multiply(lv5, lv5)
            gv = lv6
            R.output(gv)
        return gv
