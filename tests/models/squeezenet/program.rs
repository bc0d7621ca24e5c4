//! The SqueezeNet 1.0 program of `tests/models/squeezenet/`, written line by line as
//! Apache TVM 0.27's ONNX front end imports it (`keep_params_in_input=True`) and
//! `mod.script()` prints it: the same bindings, names, shapes and attributes (the
//! parameters of `main` are listed in layer order, where TVM lists them in the ONNX
//! initializers' order; they are bound by name).

/// The fire modules after `conv1`: name, squeeze channels, expand channels (of each
/// of the 1x1 and 3x3 expansions), and whether a 3x3 / 2 max pooling follows.
const FIRES: [(&str, i64, i64, bool); 8] = [
    ("fire2", 16, 64, false),
    ("fire3", 16, 64, true),
    ("fire4", 32, 128, false),
    ("fire5", 32, 128, true),
    ("fire6", 48, 192, false),
    ("fire7", 48, 192, false),
    ("fire8", 64, 256, false),
    ("fire9", 64, 256, false),
];

/// An NCHW activation: its variable and shape.
type Act = (String, [i64; 4]);

/// `R.Tensor((d0, d1, ...), dtype="float32")`.
fn tensor(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    let dims = if dims.len() == 1 {
        format!("{},", dims[0])
    } else {
        dims.join(", ")
    };
    format!("R.Tensor(({dims}), dtype=\"float32\")")
}

/// The parameters and dataflow bindings of `main`, in the order TVM prints them.
#[derive(Default)]
struct Writer {
    params: Vec<String>,
    bindings: Vec<String>,
}

impl Writer {
    /// A new parameter `name` of `shape`.
    fn param(&mut self, name: &str, shape: &[i64]) -> String {
        self.params.push(format!("{name}: {}", tensor(shape)));
        name.to_string()
    }

    /// Bind `value` (of StructInfo `sinfo`) to the next `lv` variable.
    fn bind_sinfo(&mut self, sinfo: &str, value: &str) -> String {
        let name = match self.bindings.len() {
            0 => "lv".to_string(),
            n => format!("lv{n}"),
        };
        self.bindings.push(format!("{name}: {sinfo} = {value}"));
        name
    }

    fn bind(&mut self, shape: [i64; 4], value: &str) -> Act {
        (self.bind_sinfo(&tensor(&shape), value), shape)
    }

    /// `conv2d` with the weights `{layer}_w_0` (`cout x cin x k x k`), then the
    /// reshaped bias `{layer}_b_0` added.
    fn conv(&mut self, (x, [n, cin, h, _]): &Act, layer: &str, cout: i64, k: i64, stride: i64, pad: i64) -> Act {
        let w = self.param(&format!("{layer}_w_0"), &[cout, *cin, k, k]);
        let b = self.param(&format!("{layer}_b_0"), &[cout]);
        let o = (h + 2 * pad - k) / stride + 1;
        let conv = self.bind(
            [*n, cout, o, o],
            &format!(
                "R.nn.conv2d({x}, {w}, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], \
                 dilation=[1, 1], groups=1, data_layout=\"NCHW\", kernel_layout=\"OIHW\", out_layout=\"NCHW\", \
                 out_dtype=None)"
            ),
        );
        let bias = self.bind([1, cout, 1, 1], &format!("R.reshape({b}, R.shape([1, {cout}, 1, 1]))"));
        self.bind(conv.1, &format!("R.add({}, {})", conv.0, bias.0))
    }

    fn relu(&mut self, (x, shape): &Act) -> Act {
        self.bind(*shape, &format!("R.nn.relu({x})"))
    }

    fn max_pool(&mut self, (x, [n, c, h, _]): &Act) -> Act {
        let o = (h - 3) / 2 + 1;
        self.bind(
            [*n, *c, o, o],
            &format!(
                "R.nn.max_pool2d({x}, pool_size=[3, 3], strides=[2, 2], dilation=[1, 1], padding=[0, 0, 0, 0], \
                 ceil_mode=False, count_include_pad=False, layout=\"NCHW\", out_layout=\"NCHW\")"
            ),
        )
    }

    /// A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated.
    fn fire(&mut self, x: &Act, name: &str, squeeze: i64, expand: i64) -> Act {
        let s = self.conv(x, &format!("{name}_squeeze1x1"), squeeze, 1, 1, 0);
        let s = self.relu(&s);
        let e1 = self.conv(&s, &format!("{name}_expand1x1"), expand, 1, 1, 0);
        let e3 = self.conv(&s, &format!("{name}_expand3x3"), expand, 3, 1, 1);
        let (e1, e3) = (self.relu(&e1), self.relu(&e3));
        let [n, c, h, w] = e1.1;
        self.bind([n, 2 * c, h, w], &format!("R.concat(({}, {}), axis=1)", e1.0, e3.0))
    }
}

/// The program's text.
pub fn squeezenet_program() -> String {
    let mut wr = Writer::default();
    let data = (wr.param("data_0", &[1, 3, 224, 224]), [1, 3, 224, 224]);
    let x = wr.conv(&data, "conv1", 64, 3, 2, 0);
    let x = wr.relu(&x);
    let mut x = wr.max_pool(&x);
    for (name, squeeze, expand, pool) in FIRES {
        x = wr.fire(&x, name, squeeze, expand);
        if pool {
            x = wr.max_pool(&x);
        }
    }
    let t = tensor(&x.1);
    let pair = wr.bind_sinfo(
        &format!("R.Tuple({t}, {t})"),
        &format!("R.nn.dropout({}, rate=0.5)", x.0),
    );
    let kept = (wr.bind_sinfo(&t, &format!("{pair}[0]")), x.1);
    wr.bind_sinfo(&t, &format!("{pair}[1]"));
    let x = wr.conv(&kept, "conv10", 1000, 1, 1, 0);
    let x = wr.relu(&x);
    let mean = wr.bind([1, 1000, 1, 1], &format!("R.mean({}, axis=[2, 3], keepdims=True)", x.0));
    let flat = wr.bind_sinfo(
        &tensor(&[1, 1000]),
        &format!("R.reshape({}, R.shape([1, 1000]))", mean.0),
    );
    let probs = wr.bind_sinfo(&tensor(&[1, 1000]), &format!("R.nn.softmax({flat}, axis=-1)"));
    let out = tensor(&[1, 1000, 1, 1]);
    wr.bindings
        .push(format!("gv: {out} = R.reshape({probs}, R.shape([1, 1000, 1, 1]))"));
    let mut text = String::from(
        "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n@I.ir_module\nclass Module:\n    @R.function\n",
    );
    text += &format!("    def main({}) -> {out}:\n", wr.params.join(", "));
    text += "        R.func_attr({\"num_input\": 1})\n        with R.dataflow():\n";
    for b in &wr.bindings {
        text += &format!("            {b}\n");
    }
    text += "            R.output(gv)\n        return gv";
    text
}
