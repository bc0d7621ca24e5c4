# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(a: R.Tensor((3, 4), dtype="int32"), s: R.Tensor((4,), dtype="int32"), m: R.Tensor((3, 4), dtype="bool"), x: R.Tensor((3, 4), dtype="float32"), idx: R.Tensor((2, 3), dtype="int64")) -> R.Tuple(R.Tensor((3, 4), dtype="int32"), R.Tensor((3, 4), dtype="int32"), R.Tensor((3, 4), dtype="int32"), R.Tensor((3, 4), dtype="int32"), R.Tensor((3, 4), dtype="int32"), R.Tensor((3, 4), dtype="int32"), R.Tensor((3, 4), dtype="bool"), R.Tensor((3, 4), dtype="bool"), R.Tensor((3, 4), dtype="float32"), R.Tensor((3, 2, 3), dtype="float32"), R.Tensor((2, 3, 4), dtype="float32"), R.Tensor((2, 2), dtype="float32"), R.Tensor((5, 6), dtype="float32"), R.Tensor((24,), dtype="float32"), R.Tensor((4, 3), dtype="float32"), R.Tensor((3, 2), dtype="float32"), R.Tensor((3, 2), dtype="float32")):
        with R.dataflow():
            b1 = R.bitwise_and(a, s)
            b2 = R.bitwise_or(a, s)
            b3 = R.bitwise_xor(a, s)
            b4 = R.bitwise_not(a)
            b5 = R.left_shift(a, R.const(2, "int32"))
            b6 = R.right_shift(a, R.const(1, "int32"))
            l1 = R.logical_xor(m, R.greater(x, R.const(0.0, "float32")))
            l2 = R.logical_not(m)
            f1 = R.trunc(R.multiply(x, R.const(3.0, "float32")))
            t1 = R.take(x, idx, axis=1, mode="clip")
            t2 = R.take(x, idx, axis=0, mode="wrap")
            s1 = R.strided_slice(x, axes=[0, 1], begin=[2, -1], end=[-10, 0], strides=[-2, -2])
            p1 = R.nn.pad(x, pad_width=[2, 0, 1, 1], pad_value=-1.5)
            r1 = R.repeat(R.reshape(x, R.shape([2, -1])), repeats=2)
            xt = R.permute_dims(x)
            r2 = R.reshape(xt, R.shape([0, -1]))
            sp = R.split(x, indices_or_sections=2, axis=1)
            sp0 = sp[0]
            sp1 = sp[1]
            R.output(b1, b2, b3, b4, b5, b6, l1, l2, f1, t1, t2, s1, p1, r1, r2, sp0, sp1)
        return (b1, b2, b3, b4, b5, b6, l1, l2, f1, t1, t2, s1, p1, r1, r2, sp0, sp1)
