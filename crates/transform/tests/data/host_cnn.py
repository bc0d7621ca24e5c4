# A small CNN touching every pattern of `dispatch-host-library`: conv + bias + relu,
# grouped strided conv + bias + batch norm + residual + relu, depthwise conv, max and
# average pooling (padded, count_include_pad), mean, add + relu, concat,
# permute_dims, reshape, matmul of a transposed matrix + bias + relu, inference dropout,
# divide, multiply, subtract, softmax.
from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 4, 9, 9), dtype="float32"), w1: R.Tensor((8, 4, 3, 3), dtype="float32"), b1: R.Tensor((1, 8, 1, 1), dtype="float32"), w2: R.Tensor((8, 2, 3, 3), dtype="float32"), gamma: R.Tensor((8,), dtype="float32"), beta: R.Tensor((8,), dtype="float32"), mean: R.Tensor((8,), dtype="float32"), var: R.Tensor((8,), dtype="float32"), wd: R.Tensor((8, 1, 3, 3), dtype="float32"), fc: R.Tensor((5, 104), dtype="float32"), fcb: R.Tensor((5,), dtype="float32"), sc: R.Tensor((5,), dtype="float32")) -> R.Tensor((2, 5), dtype="float32"):
        with R.dataflow():
            c1: R.Tensor((2, 8, 9, 9), dtype="float32") = R.nn.conv2d(x, w1, strides=[1, 1], padding=[1, 1, 1, 1], dilation=[1, 1], groups=1, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            c1b: R.Tensor((2, 8, 9, 9), dtype="float32") = R.add(c1, b1)
            r1: R.Tensor((2, 8, 9, 9), dtype="float32") = R.nn.relu(c1b)
            c2: R.Tensor((2, 8, 5, 4), dtype="float32") = R.nn.conv2d(r1, w2, strides=[2, 2], padding=[1, 0, 2, 1], dilation=[1, 1], groups=4, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            c2b: R.Tensor((2, 8, 5, 4), dtype="float32") = R.add(c2, b1)
            bn: R.Tuple(R.Tensor((2, 8, 5, 4), dtype="float32"), R.Tensor((8,), dtype="float32"), R.Tensor((8,), dtype="float32")) = R.nn.batch_norm(c2b, gamma, beta, mean, var, axis=1, epsilon=1.0000000000000001e-05, center=True, scale=True, momentum=0.90000000000000002, training=False)
            y: R.Tensor((2, 8, 5, 4), dtype="float32") = bn[0]
            d: R.Tensor((2, 8, 5, 4), dtype="float32") = R.nn.conv2d(r1, wd, strides=[2, 2], padding=[1, 0, 2, 1], dilation=[1, 1], groups=8, data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
            s: R.Tensor((2, 8, 5, 4), dtype="float32") = R.add(y, d)
            r2: R.Tensor((2, 8, 5, 4), dtype="float32") = R.nn.relu(s)
            mp: R.Tensor((2, 8, 3, 2), dtype="float32") = R.nn.max_pool2d(r2, pool_size=[3, 3], strides=[2, 2], dilation=[1, 1], padding=[1, 1, 1, 1], ceil_mode=False, count_include_pad=False, layout="NCHW", out_layout="NCHW")
            ap: R.Tensor((2, 8, 6, 5), dtype="float32") = R.nn.avg_pool2d(r2, pool_size=[2, 2], strides=[1, 1], dilation=[1, 1], padding=[1, 1, 1, 1], ceil_mode=False, count_include_pad=True, layout="NCHW", out_layout="NCHW")
            m: R.Tensor((2, 8, 1, 1), dtype="float32") = R.mean(ap, axis=[2, 3], keepdims=True)
            mr: R.Tensor((2, 8), dtype="float32") = R.reshape(m, R.shape([2, 8]))
            t: R.Tensor((2, 8), dtype="float32") = R.add(mr, mr)
            tr: R.Tensor((2, 8), dtype="float32") = R.nn.relu(t)
            cat: R.Tensor((2, 16, 3, 2), dtype="float32") = R.concat((mp, mp), axis=1)
            pd: R.Tensor((2, 3, 2, 16), dtype="float32") = R.permute_dims(cat, axes=[0, 2, 3, 1])
            rs: R.Tensor((2, 96), dtype="float32") = R.reshape(pd, R.shape([2, 96]))
            fcin: R.Tensor((2, 104), dtype="float32") = R.concat((rs, tr), axis=1)
            fct: R.Tensor((104, 5), dtype="float32") = R.permute_dims(fc, axes=[1, 0])
            mm: R.Tensor((2, 5), dtype="float32") = R.matmul(fcin, fct, out_dtype=None)
            mb: R.Tensor((2, 5), dtype="float32") = R.add(mm, fcb)
            mrelu: R.Tensor((2, 5), dtype="float32") = R.nn.relu(mb)
            dr: R.Tuple(R.Tensor((2, 5), dtype="float32"), R.Tensor((2, 5), dtype="float32")) = R.nn.dropout(mrelu, rate=0.5)
            o: R.Tensor((2, 5), dtype="float32") = dr[0]
            dv: R.Tensor((2, 5), dtype="float32") = R.divide(o, sc)
            ml: R.Tensor((2, 5), dtype="float32") = R.multiply(dv, o)
            sb: R.Tensor((2, 5), dtype="float32") = R.subtract(ml, fcb)
            sm: R.Tensor((2, 5), dtype="float32") = R.nn.softmax(sb, axis=-1)
            R.output(sm)
        return sm
