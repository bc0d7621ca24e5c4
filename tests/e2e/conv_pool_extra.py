# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 7, 6), dtype="float32"), w: R.Tensor((6, 2, 3, 3), dtype="float32"), w1: R.Tensor((3, 4, 3, 2), dtype="float32"), wt: R.Tensor((4, 3, 3, 2), dtype="float32"), s: R.Tensor((2, 4, 5), dtype="float32"), wt1: R.Tensor((4, 1, 3), dtype="float32")):
        with R.dataflow():
            g = R.nn.conv2d(x, w, strides=[2, 1], padding=[1, 2, 0, 1], dilation=[1, 2], groups=2)
            xh = R.permute_dims(x, axes=[0, 2, 3, 1])
            wh = R.permute_dims(w1, axes=[2, 3, 1, 0])
            nh = R.nn.conv2d(xh, wh, padding=[1, 0, 1, 0], data_layout="NHWC", kernel_layout="HWIO")
            mp = R.nn.max_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], dilation=[2, 1], ceil_mode=True)
            a1 = R.nn.avg_pool2d(x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], ceil_mode=True)
            a2 = R.nn.avg_pool2d(x, pool_size=[2, 3], strides=[1, 2], padding=[0, 1, 1, 0], count_include_pad=True)
            a3 = R.nn.avg_pool2d(x, pool_size=[2, 2], strides=[2, 2], dilation=[2, 2], padding=[1, 1, 1, 1])
            t1 = R.nn.conv2d_transpose(x, wt, strides=[2, 3], padding=[1, 0, 0, 1], output_padding=[1, 2], dilation=[1, 2], groups=2)
            t2 = R.nn.conv2d_transpose(x, wt, groups=2)
            t3 = R.nn.conv1d_transpose(s, wt1, strides=[2], padding=[1, 0], output_padding=[1], dilation=[2], groups=4)
            a4 = R.nn.avg_pool2d(x, pool_size=[3, 2], strides=[2, 2], padding=[1, 0, 1, 0], ceil_mode=True, count_include_pad=True)
            R.output(g, nh, mp, a1, a2, a3, t1, t2, t3, a4)
        return (g, nh, mp, a1, a2, a3, t1, t2, t3, a4)
