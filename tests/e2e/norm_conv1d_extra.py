# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 6, 5, 7), dtype="float32"), g: R.Tensor((6,), dtype="float32"), b: R.Tensor((6,), dtype="float32"), wr: R.Tensor((5, 7), dtype="float32"), s: R.Tensor((2, 4, 9), dtype="float32"), w1: R.Tensor((6, 2, 3), dtype="float32"), w2: R.Tensor((5, 4, 2), dtype="float32")):
        with R.dataflow():
            gn = R.nn.group_norm(x, g, b, num_groups=3, channel_axis=1, axes=[2, 3], epsilon=1.0000000000000001e-05)
            rn = R.nn.rms_norm(x, wr, axes=[-2, -1], epsilon=1.0000000000000001e-05)
            c1 = R.nn.conv1d(s, w1, strides=[2], padding=[2, 1], dilation=[2], groups=2)
            sw = R.permute_dims(s, axes=[0, 2, 1])
            wk = R.permute_dims(w2, axes=[2, 1, 0])
            c2 = R.nn.conv1d(sw, wk, strides=[1], padding=[1, 1], data_layout="NWC", kernel_layout="WIO")
            p1 = R.nn.adaptive_avg_pool2d(x, output_size=[1, 1])
            p2 = R.nn.adaptive_avg_pool2d(x, output_size=[3, 4])
            gz = R.nn.group_norm(x, g, b, num_groups=2, channel_axis=1, axes=[2, 3], epsilon=1.0000000000000001e-05, center=False, scale=False)
            R.output(gn, rn, c1, c2, p1, p2, gz)
        return (gn, rn, c1, c2, p1, p2, gz)
