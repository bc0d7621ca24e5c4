# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 5, 5), dtype="float32"), gamma: R.Tensor((4,), dtype="float32"), beta: R.Tensor((4,), dtype="float32"), mean: R.Tensor((4,), dtype="float32"), var: R.Tensor((4,), dtype="float32"), g2: R.Tensor((5, 5), dtype="float32"), b2: R.Tensor((5, 5), dtype="float32"), s: R.Tensor((3, 7), dtype="float32"), k: R.Tensor((3, 7), dtype="int32")):
        with R.dataflow():
            bn = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1.0000000000000001e-05, training=False)
            bt = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=0.001, momentum=0.2, training=True)
            bs = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1.0000000000000001e-05, center=False, scale=False, training=False)
            ln = R.nn.layer_norm(x, g2, b2, axes=[2, 3], epsilon=1.0000000000000001e-05)
            ls = R.nn.log_softmax(s, axis=0)
            gt = R.nn.gelu_tanh(s)
            sp = R.nn.softplus(s, beta=2.0, threshold=1.0)
            cs = R.cumsum(s, axis=0, exclusive=True)
            cp = R.cumprod(k, axis=1, dtype="int64")
            cf = R.cumsum(k, exclusive=True)
            am = R.argmin(k, axis=1)
            ax = R.argmax(k, axis=None, keepdims=True)
            vr = R.variance(s, axis=[0, 1], keepdims=True)
            sd = R.std(x, axis=[0, 2, 3])
            R.output(bn, bt, bs, ln, ls, gt, sp, cs, cp, cf, am, ax, vr, sd)
        return (bn, bt, bs, ln, ls, gt, sp, cs, cp, cf, am, ax, vr, sd)
