//! A one-line summary of a result tensor (shape, dtype, first values, min/max/mean),
//! printed by `relax run --output` instead of every value.

use relax_engine::Tensor;

/// Values shown at the start of a summary.
const SHOWN: usize = 6;

/// `output 0: shape (1, 1000), float32, first [..], min .., max .., mean ..`.
pub fn summarize(index: usize, t: &Tensor) -> String {
    let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let head = format!("output {index}: shape {shape}, {}", t.dtype());
    let values = match t.to_f64_values() {
        Ok(v) => v,
        Err(e) => return format!("{head} (cannot read the values: {e})"),
    };
    if values.is_empty() {
        return format!("{head}, no elements");
    }
    let shown: Vec<String> = values.iter().take(SHOWN).map(|v| format!("{v:.6}")).collect();
    let more = if values.len() > SHOWN { ", ..." } else { "" };
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let non_finite = values.len() - finite.len();
    let mut text = format!("{head}, first [{}{more}]", shown.join(", "));
    if !finite.is_empty() {
        let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = finite.iter().sum::<f64>() / finite.len() as f64;
        text += &format!(", min {min:.6}, max {max:.6}, mean {mean:.6}");
    }
    if non_finite > 0 {
        text += &format!(", {non_finite} non-finite (nan/inf) value(s)");
    }
    text
}
