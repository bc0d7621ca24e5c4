# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 5, 6), dtype="float32"), w: R.Tensor((3, 2, 2, 3, 2), dtype="float32"), wt: R.Tensor((2, 3, 2, 2, 3), dtype="float32"), y: R.Tensor((2, 3, 7), dtype="float32"), a: R.Tensor((3,), dtype="float32"), b: R.Tensor((3,), dtype="float32")):
        with R.dataflow():
            c3 = R.nn.conv3d(x, w, strides=[1, 2, 1], padding=[1, 0, 1, 1, 0, 1])
            t3 = R.nn.conv3d_transpose(x, wt, strides=[2, 1, 2], padding=[0, 1, 1, 1, 0, 0], output_padding=[1, 0, 1])
            m1 = R.nn.max_pool1d(y, pool_size=[3], strides=[2], padding=[1, 1], ceil_mode=True)
            v1 = R.nn.avg_pool1d(y, pool_size=[2], strides=[2], padding=[1, 0])
            m3 = R.nn.max_pool3d(x, pool_size=[2, 2, 2], strides=[2, 2, 2], padding=[0, 1, 0, 1, 0, 1])
            v3 = R.nn.avg_pool3d(x, pool_size=[2, 3, 2], strides=[2, 2, 2], padding=[1, 1, 0, 0, 1, 1], count_include_pad=True)
            d1 = R.nn.adaptive_avg_pool1d(y, output_size=[3])
            d3 = R.nn.adaptive_avg_pool3d(x, output_size=[2, 2, 3])
            pr = R.nn.prelu(y, a, axis=1)
            inn = R.nn.instance_norm(y, a, b, channel_axis=1, axes=[2])
            R.output(c3, t3, m1, v1, m3, v3, d1, d3, pr, inn)
        return (c3, t3, m1, v1, m3, v3, d1, d3, pr, inn)
