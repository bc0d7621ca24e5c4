# from tvm.script import ir as I
# from tvm.script import relax as R
# from tvm.script import tir as T

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((2, 3), dtype="float32"), R.Tensor((2,), dtype="float32")):
        with R.dataflow():
            s = R.prim_value(T.float32(2.5))
            k = R.prim_value(T.int64(2))
            a = R.multiply(x, s)
            b = R.subtract(s, x)
            c = R.take(x, k, axis=1)
            R.output(a, b, c)
        return (a, b, c)
