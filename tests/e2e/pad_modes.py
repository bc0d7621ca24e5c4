# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32"), y: R.Tensor((2, 3, 5), dtype="float32")) -> R.Tuple(R.Tensor((5, 6), dtype="float32"), R.Tensor((5, 6), dtype="float32"), R.Tensor((2, 7, 9), dtype="float32")):
        with R.dataflow():
            a = R.nn.pad(x, pad_width=[1, 1, 2, 0], pad_mode="reflect")
            b = R.nn.pad(x, pad_width=[1, 1, 2, 0], pad_value=2.0, pad_mode="edge")
            c = R.nn.pad(y, pad_width=[0, 0, 2, 2, 1, 3], pad_mode="reflect")
            R.output(a, b, c)
        return (a, b, c)
