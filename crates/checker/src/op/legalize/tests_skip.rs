//! A call that cannot be lowered is left as it is with a `legalize/skipped`
//! warning whose reason names what is not supported.

use relax_ir::text::parse;

use super::legalize_module_report;
use crate::normalize::normalize_module;

/// One case: the parameters of `main`, the call bound to `a`, and the text
/// the reason must contain.
struct Case {
    params: &'static str,
    call: &'static str,
    reason: &'static str,
}

const CASES: &[Case] = &[
    // conv2d family: an unsupported layout
    Case {
        params: r#"x: R.Tensor((1, 8, 8, 3), dtype="float32"), w: R.Tensor((3, 4, 3, 3), dtype="float32")"#,
        call: r#"R.nn.conv2d_transpose(x, w, data_layout="NHWC")"#,
        reason: "layouts NHWC/IOHW are not supported (only NCHW/IOHW)",
    },
    Case {
        params: r#"x: R.Tensor((1, 8, 8, 3), dtype="float32"), w: R.Tensor((3, 3, 3, 4), dtype="float32")"#,
        call: r#"R.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW")"#,
        reason: "an output layout other than the data layout",
    },
    // pooling
    Case {
        params: r#"x: R.Tensor((1, 3, 8, 8), dtype="int32")"#,
        call: r#"R.nn.adaptive_avg_pool2d(x, output_size=[2, 2])"#,
        reason: "dtype int32 is not supported by nn.adaptive_avg_pool2d",
    },
    // indexing
    Case {
        params: r#"x: R.Tensor((4, 5, 6), dtype="float32"), i: R.Tensor((4, 2), dtype="int64")"#,
        call: r#"R.gather_nd(x, i, batch_dims=1)"#,
        reason: "batch_dims other than 0 is not supported",
    },
    // manipulation
    Case {
        params: r#"x: R.Tensor((2, 3), dtype="float32")"#,
        call: r#"R.nn.pad(x, pad_width=[0, 0, 3, 3], pad_mode="reflect")"#,
        reason: "a reflect padding as wide as its dimension",
    },
    // reductions
    Case {
        params: r#"x: R.Tensor((2, 3), dtype="int32")"#,
        call: r#"R.variance(x, axis=[1])"#,
        reason: "dtype int32 is not supported by variance",
    },
    // linear algebra
    Case {
        params: r#"x: R.Tensor(dtype="float32", ndim=2), y: R.Tensor((3, 4), dtype="float32")"#,
        call: r#"R.matmul(x, y)"#,
        reason: "the output shape is not known",
    },
    // creation
    Case {
        params: r#"x: R.Tensor((3, 3), dtype="float32"), k: R.Prim("int64")"#,
        call: r#"R.tril(x, k)"#,
        reason: "the diagonal offset k is not a constant",
    },
    // search
    Case {
        params: r#"x: R.Tensor((2, 3))"#,
        call: r#"R.argmax(x, axis=1)"#,
        reason: "an operand's dtype is not known",
    },
    // unary element-wise
    Case {
        params: r#"x: R.Tensor((2, 3), dtype="int32")"#,
        call: r#"R.isnan(x)"#,
        reason: "dtype int32 is not supported by isnan",
    },
];

#[test]
fn declined_calls_say_what_is_not_supported() {
    let failures: Vec<String> = CASES.iter().filter_map(check_case).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What is wrong with `case`, if anything.
fn check_case(case: &Case) -> Option<String> {
    {
        let src = format!(
            "@I.ir_module\nclass Module:\n    @R.function\n    def main({}):\n        a = {}\n        return a\n",
            case.params, case.call
        );
        let module = match parse(&src) {
            Ok(p) => normalize_module(&p.into_module()).module,
            Err(e) => return Some(format!("{} does not parse: {e:?}", case.call)),
        };
        let (out, skipped) = legalize_module_report(&module);
        let msgs: Vec<&str> = skipped.iter().map(|d| d.message.as_str()).collect();
        let text = relax_ir::text::print_program(&relax_ir::text::Program::Module(out));
        let ok = msgs.len() == 1
            && msgs[0].contains(case.reason)
            && skipped[0].rule.as_deref() == Some("legalize/skipped")
            && !text.contains("R.call_tir");
        (!ok).then(|| format!("{}: expected {:?}, got {msgs:?}", case.call, case.reason))
    }
}
