//! A call that cannot be lowered is left as it is with a `legalize/skipped`
//! warning whose reason names what is not supported.

use relax_ir::text::parse;

use super::legalize_module_report;
use relax_checker::normalize::normalize_module;

/// The cases, one a line: the parameters of `main`, the call bound to `a`,
/// and the text the reason must contain, separated by ` | ` (`#` starts a
/// comment line).
const CASES: &str = r#"
# conv2d family: an unsupported layout
x: R.Tensor((1, 8, 8, 3), dtype="float32"), w: R.Tensor((3, 4, 3, 3), dtype="float32") | R.nn.conv2d_transpose(x, w, data_layout="NHWC") | layouts NHWC/IOHW are not supported (only NCHW/IOHW)
x: R.Tensor((1, 8, 8, 3), dtype="float32"), w: R.Tensor((3, 3, 3, 4), dtype="float32") | R.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="HWIO", out_layout="NCHW") | an output layout other than the data layout
# pooling
x: R.Tensor((1, 3, 8, 8), dtype="int32") | R.nn.adaptive_avg_pool2d(x, output_size=[2, 2]) | dtype int32 is not supported by nn.adaptive_avg_pool2d
# indexing
x: R.Tensor((4, 5, 6), dtype="float32"), i: R.Tensor(dtype="int64", ndim=2) | R.gather_nd(x, i, batch_dims=1) | the output shape is not known
# manipulation
x: R.Tensor((2, 3), dtype="float32") | R.nn.pad(x, pad_width=[0, 0, 3, 3], pad_mode="reflect") | a reflect padding as wide as its dimension
# reductions
x: R.Tensor((2, 3), dtype="int32") | R.variance(x, axis=[1]) | dtype int32 is not supported by variance
# linear algebra
x: R.Tensor(dtype="float32", ndim=2), y: R.Tensor((3, 4), dtype="float32") | R.matmul(x, y) | the output shape is not known
# creation
x: R.Tensor((3, 3), dtype="float32"), k: R.Prim("int64") | R.tril(x, k) | the diagonal offset k is not a constant
# search
x: R.Tensor((2, 3)) | R.argmax(x, axis=1) | an operand's dtype is not known
# unary element-wise
x: R.Tensor((2, 3), dtype="int32") | R.isnan(x) | dtype int32 is not supported by isnan
"#;

#[test]
fn declined_calls_say_what_is_not_supported() {
    let cases: Vec<Vec<&str>> = CASES
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split(" | ").collect())
        .collect();
    assert!(cases.len() >= 10 && cases.iter().all(|c| c.len() == 3), "{cases:?}");
    let failures: Vec<String> = cases.iter().filter_map(|c| check_case(c[0], c[1], c[2])).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What is wrong with the case `a = call` in `main(params)`, if anything.
fn check_case(params: &str, call: &str, reason: &str) -> Option<String> {
    let src = format!(
        "@I.ir_module\nclass Module:\n    @R.function\n    def main({params}):\n        a = {call}\n        return a\n"
    );
    let module = match parse(&src) {
        Ok(p) => normalize_module(&p.into_module()).module,
        Err(e) => return Some(format!("{call} does not parse: {e:?}")),
    };
    let (out, skipped) = legalize_module_report(&module);
    let msgs: Vec<&str> = skipped.iter().map(|d| d.message.as_str()).collect();
    let text = super::tests::text(&out);
    let ok = msgs.len() == 1
        && msgs[0].contains(reason)
        && skipped[0].rule.map(relax_ir::Rule::as_str) == Some("legalize/skipped")
        && !text.contains("R.call_tir");
    (!ok).then(|| format!("{call}: expected {reason:?}, got {msgs:?}"))
}
