# A small convolutional network (conv + bias + relu, max pool, 1x1 conv, global
# mean, dense, softmax) for `relax wgsl` against what `relax run --device gpu` runs.
@I.ir_module
class Module:
    @R.function
    def main(
        x: R.Tensor((1, 3, 16, 16), "float32"),
        w1: R.Tensor((8, 3, 3, 3), "float32"),
        b1: R.Tensor((1, 8, 1, 1), "float32"),
        w2: R.Tensor((16, 8, 1, 1), "float32"),
        fc: R.Tensor((16, 10), "float32"),
    ):
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1, padding=[1, 1, 1, 1])
            a1 = R.add(c1, b1)
            r1 = R.nn.relu(a1)
            p1 = R.nn.max_pool2d(r1, pool_size=[2, 2], strides=[2, 2])
            c2 = R.nn.conv2d(p1, w2)
            r2 = R.nn.relu(c2)
            g = R.mean(r2, axis=[2, 3])
            y = R.matmul(g, fc)
            s = R.nn.softmax(y, axis=-1)
            R.output(s)
        return s
