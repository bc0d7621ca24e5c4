//! `R.quantize`/`R.dequantize` (legalized as TVM 0.27 does), `R.nonzero`/`R.unique`
//! (TVM runs them through `relax.run.nonzero`/`relax.run.unique`, numpy on the host)
//! and `R.size`, on the host and the GPU, against the outputs of TVM 0.27
//! (`tvm.compile(mod, "llvm")` and its VM, the same modules and inputs).

mod common;

use common::text::{engines, parse};
use ndarray::{ArrayD, IxDyn};
use relax_engine::{Tensor, Value};
use relax_ir::{DataType, TypeCode};

fn arr<T: relax_engine::Element>(shape: &[usize], v: Vec<T>) -> Value {
    ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape").into()
}

fn raw(dtype: DataType, shape: &[i64], bytes: Vec<u8>) -> Value {
    Value::Tensor(Tensor::from_bytes(dtype, shape, bytes).expect("tensor"))
}

fn field(out: &Value, i: usize) -> &Tensor {
    out.as_tuple().expect("tuple")[i].as_tensor().expect("tensor")
}

fn ints<T: relax_engine::Element + Into<i64>>(t: &Tensor) -> Vec<i64> {
    t.to_array::<T>().expect("dtype").iter().map(|&x| x.into()).collect()
}

fn floats(t: &Tensor) -> Vec<f32> {
    t.to_array::<f32>().expect("float32").iter().copied().collect()
}

/// `|got - want| <= 1e-5 + rtol * |want|` element by element, lengths equal.
fn assert_within(got: &[f32], want: &[f32], rtol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (g, e)) in got.iter().zip(want).enumerate() {
        assert!((g - e).abs() <= 1e-5 + rtol * e.abs(), "{what}[{k}]: {g} vs {e}");
    }
}

/// Equal as numbers, NaN equal to NaN (numpy's `unique` may pick `0.0` or `-0.0`
/// for a group holding both).
fn same_floats(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g == w || (g.is_nan() && w.is_nan()), "{what}[{i}]: {g} vs {w}");
    }
}

const QDQ: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3, 2), dtype="float32"), s: R.Tensor((3,), dtype="float32"), z: R.Tensor((3,), dtype="uint8"), s0: R.Tensor((), dtype="float32"), z0: R.Tensor((), dtype="int8"), q: R.Tensor((2, 3, 2), dtype="int8"), zh: R.Tensor((), dtype="float16"), q8: R.Tensor((4,), dtype="float8_e4m3fn")):
        with R.dataflow():
            a: R.Tensor((2, 3, 2), dtype="uint8") = R.quantize(x, s, z, out_dtype="uint8", axis=1)
            b: R.Tensor((2, 3, 2), dtype="int8") = R.quantize(x, s0, z0, out_dtype="int8", axis=-1)
            c: R.Tensor((2, 3, 2), dtype="int16") = R.quantize(x, R.const(0.25, "float32"), R.const(-3, "int16"), out_dtype="int16", axis=0)
            d: R.Tensor((2, 3, 2), dtype="float32") = R.dequantize(q, s, z, out_dtype="float32", axis=-2)
            e: R.Tensor((2, 3, 2), dtype="float16") = R.dequantize(q, s0, z0, out_dtype="float16", axis=0)
            f: R.Tensor((2, 3, 2), dtype="float8_e4m3fn") = R.quantize(x, s0, zh, out_dtype="float8_e4m3fn", axis=0)
            g: R.Tensor((4,), dtype="float32") = R.dequantize(q8, s0, zh, out_dtype="float32", axis=0)
            R.output(a, b, c, d, e, f, g)
        return (a, b, c, d, e, f, g)
"#;

/// Per-axis and per-tensor scales and zero points, inlined scalar constants,
/// rounding half to even (`2.5 -> 2`), saturation, a float16 output clipped to
/// float16's range, float8 in and out (no rounding to integers; float8 data is
/// read through `int32`, as TVM's legalization does).
#[test]
fn quantize_and_dequantize_match_tvm() {
    let module = parse(QDQ);
    let x = vec![
        0.5f32, -1.25, 2.5, 3.75, -7.0, 100.0, -300.0, 0.1, 1.5, -2.5, 6.25, 1000.0,
    ];
    let q = vec![-128i8, -1, 0, 1, 5, 127, 100, -100, 64, -64, 3, -3];
    let args = vec![
        arr(&[2, 3, 2], x),
        arr(&[3], vec![0.5f32, 2.0, 0.25]),
        arr(&[3], vec![10u8, 128, 250]),
        arr(&[], vec![0.5f32]),
        arr(&[], vec![-3i8]),
        arr(&[2, 3, 2], q),
        // float16 1.5
        raw(DataType::FLOAT16, &[], 0x3e00u16.to_le_bytes().to_vec()),
        // float8_e4m3fn [1.0, -2.0, 448.0, 0.75]
        raw(
            DataType::new(TypeCode::Float8E4M3FN, 8, 1),
            &[4],
            vec![56, 192, 126, 52],
        ),
    ];
    // TVM 0.27's outputs.
    let a: Vec<i64> = vec![11, 8, 129, 130, 222, 255, 0, 10, 129, 127, 255, 255];
    let b: Vec<i64> = vec![-2, -5, 2, 5, -17, 127, -128, -3, 0, -8, 9, 127];
    let c: Vec<i64> = vec![-1, -8, 7, 12, -31, 397, -1203, -3, 3, -13, 22, 3997];
    let d = [
        -69.0f32, -5.5, -256.0, -254.0, -61.25, -30.75, 45.0, -55.0, -128.0, -384.0, -61.75, -63.25,
    ];
    let e_bits: [u16; 12] = [
        54224, 15360, 15872, 16384, 17408, 21520, 21104, 53776, 20528, 53152, 16896, 0,
    ];
    let f_bits: [u8; 12] = [66, 184, 77, 81, 212, 117, 254, 62, 73, 198, 86, 126];
    let g = [-0.25f32, -1.75, 223.25, -0.75];
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        assert_eq!(ints::<u8>(field(&out, 0)), a, "{dev}: quantize per axis (uint8)");
        assert_eq!(ints::<i8>(field(&out, 1)), b, "{dev}: quantize per tensor (int8)");
        assert_eq!(ints::<i16>(field(&out, 2)), c, "{dev}: quantize with constants (int16)");
        assert_eq!(floats(field(&out, 3)), d, "{dev}: dequantize per axis");
        let e: Vec<u8> = e_bits.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            field(&out, 4).to_bytes().expect("bytes"),
            e,
            "{dev}: dequantize to float16"
        );
        assert_eq!(
            field(&out, 5).to_bytes().expect("bytes"),
            f_bits,
            "{dev}: quantize to float8"
        );
        assert_eq!(floats(field(&out, 6)), g, "{dev}: dequantize float8");
    }
}

const SET_OPS: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((8,), dtype="float32"), m: R.Tensor((4, 3), dtype="int32"), b: R.Tensor((), dtype="bool")):
        nz = T.int64()
        nb = T.int64()
        u = T.int64()
        v = T.int64()
        w = T.int64()
        with R.dataflow():
            a: R.Tensor((2, nz), dtype="int64") = R.match_cast(R.nonzero(x), R.Tensor((2, nz), dtype="int64"))
            a0: R.Tensor((1, nb), dtype="int64") = R.match_cast(R.nonzero(b), R.Tensor((1, nb), dtype="int64"))
            lv = R.unique(y, True, True, True, True)
            s0: R.Tensor((u,), dtype="float32") = R.match_cast(lv[0], R.Tensor((u,), dtype="float32"))
            s1: R.Tensor((u,), dtype="int64") = R.match_cast(lv[1], R.Tensor((u,), dtype="int64"))
            s2: R.Tensor((8,), dtype="int64") = R.match_cast(lv[2], R.Tensor((8,), dtype="int64"))
            s3: R.Tensor((u,), dtype="int64") = R.match_cast(lv[3], R.Tensor((u,), dtype="int64"))
            lv1 = R.unique(y, False, True, True, True)
            t0: R.Tensor((u,), dtype="float32") = R.match_cast(lv1[0], R.Tensor((u,), dtype="float32"))
            t1: R.Tensor((u,), dtype="int64") = R.match_cast(lv1[1], R.Tensor((u,), dtype="int64"))
            t2: R.Tensor((8,), dtype="int64") = R.match_cast(lv1[2], R.Tensor((8,), dtype="int64"))
            t3: R.Tensor((u,), dtype="int64") = R.match_cast(lv1[3], R.Tensor((u,), dtype="int64"))
            lv2 = R.unique(m, True, True, True, True, 0)
            r0: R.Tensor((v, 3), dtype="int32") = R.match_cast(lv2[0], R.Tensor((v, 3), dtype="int32"))
            r1: R.Tensor((v,), dtype="int64") = R.match_cast(lv2[1], R.Tensor((v,), dtype="int64"))
            r2: R.Tensor((4,), dtype="int64") = R.match_cast(lv2[2], R.Tensor((4,), dtype="int64"))
            r3: R.Tensor((v,), dtype="int64") = R.match_cast(lv2[3], R.Tensor((v,), dtype="int64"))
            lv3 = R.unique(m, False, False, True, False, -1)
            c0: R.Tensor((4, w), dtype="int32") = R.match_cast(lv3[0], R.Tensor((4, w), dtype="int32"))
            c1: R.Tensor((3,), dtype="int64") = R.match_cast(lv3[1], R.Tensor((3,), dtype="int64"))
            lv4 = R.unique(y, True, False, False, False)
            d0: R.Tensor((u,), dtype="float32") = R.match_cast(lv4, R.Tensor((u,), dtype="float32"))
            sz: R.Tensor((), dtype="int64") = R.size(m)
            R.output(a, a0, s0, s1, s2, s3, t0, t1, t2, t3, r0, r1, r2, r3, c0, c1, d0, sz)
        return (a, a0, s0, s1, s2, s3, t0, t1, t2, t3, r0, r1, r2, r3, c0, c1, d0, sz)
"#;

/// `nonzero` with NaN and `-0.0` and of a 0-d bool; `unique` flattened (sorted and
/// in order of first occurrence, NaNs taken as one value, `-0.0` equal to `0.0`),
/// along an axis (rows, columns with a negative axis, unsorted) with every
/// combination of extra outputs used by ONNX; `size`.
#[test]
fn nonzero_unique_and_size_match_tvm() {
    let module = parse(SET_OPS);
    let nan = f32::NAN;
    let args = vec![
        arr(&[2, 3], vec![0.0f32, nan, -0.0, 2.0, 0.0, -1.5]),
        arr(&[8], vec![3.0f32, 1.0, nan, 3.0, -0.0, 1.0, nan, 0.0]),
        arr(&[4, 3], vec![1i32, 2, 1, 0, 5, 0, 1, 2, 1, 0, 5, 0]),
        arr(&[], vec![true]),
    ];
    // TVM 0.27's outputs (numpy 2.4).
    let i64s: Vec<(usize, Vec<usize>, Vec<i64>)> = vec![
        (0, vec![2, 3], vec![0, 1, 1, 1, 0, 2]),
        (1, vec![1, 1], vec![0]),
        (3, vec![4], vec![4, 1, 0, 2]),
        (4, vec![8], vec![2, 1, 3, 2, 0, 1, 3, 0]),
        (5, vec![4], vec![2, 2, 2, 2]),
        (7, vec![4], vec![0, 1, 2, 4]),
        (8, vec![8], vec![0, 1, 2, 0, 3, 1, 2, 3]),
        (9, vec![4], vec![2, 2, 2, 2]),
        (11, vec![2], vec![1, 0]),
        (12, vec![4], vec![1, 0, 1, 0]),
        (13, vec![2], vec![2, 2]),
        (15, vec![3], vec![0, 1, 0]),
        (17, vec![], vec![12]),
    ];
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        for (i, shape, want) in &i64s {
            let t = field(&out, *i);
            let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            assert_eq!(t.shape(), shape.as_slice(), "{dev}: output {i} shape");
            assert_eq!(&ints::<i64>(t), want, "{dev}: output {i}");
        }
        same_floats(
            &floats(field(&out, 2)),
            &[-0.0, 1.0, 3.0, nan],
            &format!("{dev}: sorted unique"),
        );
        same_floats(
            &floats(field(&out, 6)),
            &[3.0, 1.0, nan, -0.0],
            &format!("{dev}: unsorted unique"),
        );
        same_floats(
            &floats(field(&out, 16)),
            &[0.0, 1.0, 3.0, nan],
            &format!("{dev}: unique alone"),
        );
        assert_eq!(ints::<i32>(field(&out, 10)), [0, 5, 0, 1, 2, 1], "{dev}: unique rows");
        assert_eq!(field(&out, 10).shape(), &[2, 3], "{dev}: unique rows shape");
        assert_eq!(
            ints::<i32>(field(&out, 14)),
            [1, 2, 0, 5, 1, 2, 0, 5],
            "{dev}: unique columns"
        );
        assert_eq!(field(&out, 14).shape(), &[4, 2], "{dev}: unique columns shape");
    }
}

/// The packed functions TVM registers for these operators run the same way when
/// called by name, and a bad call is an error, not a panic.
#[test]
fn run_packed_functions_and_errors() {
    let src = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5,), dtype="int64")):
        n = T.int64()
        with R.dataflow():
            a = R.call_pure_packed("relax.run.nonzero", x, sinfo_args=(R.Tensor(dtype="int64", ndim=2),))
            b = R.call_pure_packed("relax.run.unique", x, R.prim_value(True), R.prim_value(False), R.prim_value(False), R.prim_value(True), sinfo_args=(R.Tuple(R.Tensor(dtype="int64", ndim=1), R.Tensor(dtype="int64", ndim=1)),))
            R.output(a, b)
        return (a, b)
"#;
    let module = parse(src);
    let x = arr(&[5], vec![4i64, 0, -2, 4, 0]);
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", std::slice::from_ref(&x))
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        assert_eq!(ints::<i64>(field(&out, 0)), [0, 2, 3], "{dev}: nonzero");
        let u = out.as_tuple().expect("tuple")[1].as_tuple().expect("pair").to_vec();
        assert_eq!(ints::<i64>(u[0].as_tensor().expect("t")), [-2, 0, 4], "{dev}: unique");
        assert_eq!(ints::<i64>(u[1].as_tensor().expect("t")), [1, 2, 2], "{dev}: counts");
    }
    // An axis out of range is an error.
    let bad = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((5,), dtype="int64")):
        with R.dataflow():
            b = R.call_pure_packed("relax.run.unique", x, R.prim_value(True), R.prim_value(False), R.prim_value(False), R.prim_value(False), R.prim_value(3), sinfo_args=(R.Tensor(dtype="int64", ndim=1),))
            R.output(b)
        return b
"#;
    let module = parse(bad);
    for (dev, engine) in engines() {
        let err = engine
            .run(&module, "main", std::slice::from_ref(&x))
            .err()
            .unwrap_or_else(|| panic!("{dev}: an out-of-range axis must fail"));
        assert!(err.to_string().contains("out of range"), "{dev}: {err}");
    }
}

/// `image.grid_sample` of TVM's outputs in `data/grid_sample_tvm.json` (the
/// program, its inputs and TVM 0.27's results for every method, padding mode and
/// `align_corners` of 2-d (`NCHW`) and 3-d (`NCDHW`) sampling, grid points outside
/// `[-1, 1]` included), for the outputs `keep` (the program is cut down to them).
fn grid_sample_case(keep: &[usize]) {
    let case: serde_json::Value = serde_json::from_str(include_str!("data/grid_sample_tvm.json")).expect("json");
    let names: Vec<String> = keep.iter().map(|i| format!("o{i}")).collect();
    let list = names.join(", ");
    let program: Vec<String> = case["program"]
        .as_str()
        .expect("program")
        .lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let indent = &l[..l.len() - t.len()];
            if t.starts_with("R.output(") {
                return Some(format!("{indent}R.output({list})"));
            }
            if t.starts_with("return (") {
                return Some(format!("{indent}return ({list})"));
            }
            match t.split_once(':') {
                Some((name, _)) if name.starts_with('o') && name[1..].parse::<usize>().is_ok() => {
                    names.iter().any(|n| n == name).then(|| l.to_string())
                }
                _ => Some(l.to_string()),
            }
        })
        .collect();
    let module = parse(&program.join("\n"));
    let vals = |k: &str| -> Vec<f32> {
        case[k]
            .as_array()
            .expect("array")
            .iter()
            .map(|v| v.as_f64().expect("number") as f32)
            .collect()
    };
    let args = vec![
        arr(&[1, 2, 3, 4], vals("x")),
        arr(&[1, 2, 2, 3], vals("g")),
        arr(&[1, 1, 2, 3, 3], vals("v")),
        arr(&[1, 3, 2, 2, 2], vals("u")),
    ];
    let outs = case["out"].as_array().expect("outputs");
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        for (j, &i) in keep.iter().enumerate() {
            let want: Vec<f32> = outs[i]
                .as_array()
                .expect("array")
                .iter()
                .map(|v| v.as_f64().expect("number") as f32)
                .collect();
            let got = floats(field(&out, j));
            assert_within(&got, &want, 1e-5, &format!("{dev}: output {i}"));
        }
    }
}

/// `image.grid_sample` against TVM: 2-d bilinear (zeros, reflection), nearest,
/// bicubic with reflection, 3-d trilinear with border (the whole sweep:
/// `grid_sample_every_mode_matches_tvm`).
#[test]
fn grid_sample_matches_tvm() {
    grid_sample_case(&[0, 5, 7, 16, 21]);
}

/// Every method, padding mode and `align_corners`, 2-d and 3-d (30 kernels:
/// about 15 s on lavapipe; run with `--ignored`).
#[test]
#[ignore]
fn grid_sample_every_mode_matches_tvm() {
    grid_sample_case(&(0..30).collect::<Vec<_>>());
}

/// `data/roi_align_tvm.json` (made by `scripts/gen_roi_align_case.py`): the case,
/// its program, and the data in `NCHW` and `NHWC` (`[2, 3, 6, 7]`).
fn roi_align_case() -> (serde_json::Value, relax_ir::IRModule, [Value; 2]) {
    let case: serde_json::Value = serde_json::from_str(include_str!("data/roi_align_tvm.json")).expect("json");
    let module = parse(case["program"].as_str().expect("program"));
    let x = json_floats(&case["x"]);
    let (b, c, h, w) = (2, 3, 6, 7);
    let mut xh = vec![0f32; x.len()];
    for (i, v) in x.iter().enumerate() {
        let (n, ch, y, xx) = (i / (c * h * w), i / (h * w) % c, i / w % h, i % w);
        xh[((n * h + y) * w + xx) * c + ch] = *v;
    }
    (case, module, [arr(&[b, c, h, w], x), arr(&[b, h, w, c], xh)])
}

/// A JSON array of numbers as `f32`s.
fn json_floats(v: &serde_json::Value) -> Vec<f32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_f64().expect("number") as f32)
        .collect()
}

/// `vision.roi_align` against TVM (`data/roi_align_tvm.json`, made by
/// `scripts/gen_roi_align_case.py`): average and max, aligned or not, fixed and
/// adaptive sampling (a reduction whose extent is read from the regions), NCHW and
/// NHWC, over a symbolic number of regions that lie inside, across and outside
/// the image, one under a pixel and one reversed (no samples: max gives the
/// lowest float, as TVM).
#[test]
fn roi_align_matches_tvm() {
    let (case, module, [x, xh]) = roi_align_case();
    let args = vec![x, xh, arr(&[6, 5], json_floats(&case["rois"]))];
    let outs = case["out"].as_array().expect("outputs");
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        for (i, want) in outs.iter().enumerate() {
            let (got, want) = (floats(field(&out, i)), json_floats(want));
            assert_within(&got, &want, 1e-5, &format!("{dev}: output {i}"));
        }
    }
}

/// A region with a coordinate or batch index that is NaN or infinite (TVM's result
/// is undefined there: LLVM's `fptosi` of the sample count) has no samples and
/// gives NaN in every output, the same on every device; the finite regions around
/// it keep TVM's values. Before, the host and the GPU disagreed on such regions.
#[test]
fn roi_align_non_finite_regions_give_nan_on_every_device() {
    let (case, module, [x, xh]) = roi_align_case();
    let vals = json_floats;
    // TVM's first two regions at rows 0 and 5; between them a NaN corner, an
    // infinite corner, a negative infinite one and a NaN batch index.
    let tvm_rois = vals(&case["rois"]);
    let (first, second) = (&tvm_rois[0..5], &tvm_rois[5..10]);
    let mut rois = first.to_vec();
    for bad in [
        [0.0, f32::NAN, 1.0, 4.0, 4.0],
        [1.0, 0.0, 0.0, 3.0, f32::INFINITY],
        [0.0, f32::NEG_INFINITY, 0.0, 2.0, 2.0],
        [f32::NAN, 0.0, 0.0, 2.0, 2.0],
    ] {
        rois.extend(bad);
    }
    rois.extend(second);
    let args = vec![x, xh, arr(&[6, 5], rois)];
    let outs = case["out"].as_array().expect("outputs");
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        for (i, want) in outs.iter().enumerate() {
            let (got, want) = (floats(field(&out, i)), vals(want));
            // TVM's case has 6 regions; each region's outputs are one row of both.
            let per = want.len() / 6;
            assert_eq!(got.len(), 6 * per, "{dev}: output {i}");
            for (row, tvm_row) in [(0, 0), (5, 1)] {
                assert_within(
                    &got[row * per..(row + 1) * per],
                    &want[tvm_row * per..(tvm_row + 1) * per],
                    1e-5,
                    &format!("{dev}: output {i} region {row}"),
                );
            }
            for row in 1..5 {
                let bad = &got[row * per..(row + 1) * per];
                assert!(
                    bad.iter().all(|v| v.is_nan()),
                    "{dev}: output {i} region {row}: {bad:?}"
                );
            }
        }
    }
}

/// `image.resize2d` against TVM (`data/resize2d_tvm.json`, made by
/// `scripts/gen_resize2d_case.py`): nearest with every rounding method (ties
/// rounded half to even; integer upscaling by `x / factor`), linear and cubic (with
/// and without `cubic_exclude`), every coordinate transformation mode
/// (`tf_crop_and_resize` with a region reaching outside the image and its
/// extrapolation value), NCHW and NHWC, up- and down-sampling, an extent of 1, a
/// symbolic size (from the shape of `y`), int32 data (truncated) and float16 data
/// (computed in float32, as topi). Floats within 1e-5 (float16: half an ulp of
/// float16, for a float32 sum that falls the other side of a rounding boundary).
#[test]
fn resize2d_matches_tvm() {
    let case: serde_json::Value = serde_json::from_str(include_str!("data/resize2d_tvm.json")).expect("json");
    let module = parse(case["program"].as_str().expect("program"));
    let nums = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect()
    };
    let x: Vec<f32> = nums(&case["x"]).iter().map(|&v| v as f32).collect();
    let (c, h, w) = (2, 5, 6);
    let mut xh = vec![0f32; x.len()];
    for (i, v) in x.iter().enumerate() {
        let (ch, y, xx) = (i / (h * w), i / w % h, i % w);
        xh[(y * w + xx) * c + ch] = *v;
    }
    let xi: Vec<i32> = nums(&case["xi"]).iter().map(|&v| v as i32).collect();
    let xf: Vec<half::f16> = x.iter().map(|&v| half::f16::from_f32(v)).collect();
    let ys: Vec<usize> = nums(&case["y_shape"]).iter().map(|&v| v as usize).collect();
    let args = vec![
        arr(&[1, c, h, w], x.clone()),
        arr(&[1, h, w, c], xh),
        arr(&[1, c, h, w], xi),
        arr(&[1, c, h, w], xf),
        arr(&ys, vec![0f32; ys.iter().product()]),
    ];
    let outs = case["out"].as_array().expect("outputs");
    let dtypes = case["dtypes"].as_array().expect("dtypes");
    let shapes = case["shapes"].as_array().expect("shapes");
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        for (i, want) in outs.iter().enumerate() {
            let got = field(&out, i);
            let want = nums(want);
            let shape: Vec<i64> = nums(&shapes[i]).iter().map(|&v| v as i64).collect();
            assert_eq!(got.shape(), &shape[..], "{dev}: output {i} shape");
            match dtypes[i].as_str().expect("dtype") {
                "int32" => {
                    let got = ints::<i32>(got);
                    let want: Vec<i64> = want.iter().map(|&v| v as i64).collect();
                    assert_eq!(got, want, "{dev}: output {i}");
                }
                "float16" => {
                    let got: Vec<f32> = got
                        .to_array::<half::f16>()
                        .expect("float16")
                        .iter()
                        .map(|v| v.to_f32())
                        .collect();
                    let want: Vec<f32> = want.iter().map(|&e| e as f32).collect();
                    assert_within(&got, &want, 1.0 / 2048.0, &format!("{dev}: output {i}"));
                }
                _ => {
                    let want: Vec<f32> = want.iter().map(|&e| e as f32).collect();
                    assert_within(&floats(got), &want, 1e-5, &format!("{dev}: output {i}"));
                }
            }
        }
    }
}

/// `image.resize2d` where TVM gives no reference (`docs/semantics.md`): an
/// `out_dtype` other than the data's gives that dtype (the float32 result cast;
/// TVM's run returns the data's dtype), and `tf_crop_and_resize` to a constant
/// extent of 1 samples the region's centre (TVM divides by zero while
/// legalizing).
#[test]
fn resize2d_out_dtype_and_unit_extent() {
    let module = parse(
        r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1, 5, 6), dtype="float32")):
        with R.dataflow():
            a = R.image.resize2d(x, R.shape([3, 4]), method="cubic")
            b = R.image.resize2d(x, R.shape([3, 4]), method="cubic", out_dtype="float16")
            c = R.image.resize2d(x, R.shape([3, 4]), method="cubic", out_dtype="int32")
            d = R.image.resize2d(x, R.shape([1, 1]), roi=[0.0, 0.0, 1.0, 1.0], coordinate_transformation_mode="tf_crop_and_resize")
            R.output(a, b, c, d)
        return (a, b, c, d)
"#,
    );
    let x: Vec<f32> = (0..30).map(|i| (i as f32 * 0.37).sin() * 10.0).collect();
    let args = vec![arr(&[1, 1, 5, 6], x.clone())];
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        let a = floats(field(&out, 0));
        let b = field(&out, 1);
        assert_eq!(b.dtype(), DataType::new(TypeCode::Float, 16, 1), "{dev}");
        let b: Vec<f32> = b
            .to_array::<half::f16>()
            .expect("float16")
            .iter()
            .map(|v| v.to_f32())
            .collect();
        let want_b: Vec<f32> = a.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
        assert_eq!(b, want_b, "{dev}: float16 output");
        let c = ints::<i32>(field(&out, 2));
        let want_c: Vec<i64> = a.iter().map(|&v| v as i64).collect();
        assert_eq!(c, want_c, "{dev}: int32 output (truncated)");
        // The centre of the whole image: row 2, halfway between columns 2 and 3.
        let d = floats(field(&out, 3));
        let want = x[2 * 6 + 2] * 0.5 + x[2 * 6 + 3] * 0.5;
        assert!((d[0] - want).abs() <= 1e-5, "{dev}: {} vs {want}", d[0]);
    }
}

/// `slice_scatter` against TVM (`data/slice_scatter_tvm.json`, made by
/// `scripts/gen_slice_scatter_case.py`): a slice along each axis, a step of 2, the
/// whole axis (the source as it is), int64 data with a negative axis; float results
/// exact (each output element is one input or source element), on every device.
#[test]
fn slice_scatter_matches_tvm() {
    let case: serde_json::Value = serde_json::from_str(include_str!("data/slice_scatter_tvm.json")).expect("json");
    let module = parse(case["program"].as_str().expect("program"));
    let ins = case["inputs"].as_array().expect("inputs");
    let ints = |v: &serde_json::Value| -> Vec<i64> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|v| v.as_i64().expect("integer"))
            .collect()
    };
    let shapes: [&[usize]; 4] = [&[6, 5], &[2, 5], &[6, 3], &[6, 5]];
    let mut args: Vec<Value> = shapes.iter().zip(ins).map(|(s, v)| arr(s, json_floats(v))).collect();
    args.push(arr(&[3, 5], ints(&ins[4])));
    args.push(arr(&[6, 5], ints(&ins[5])));
    let outs = case["out"].as_array().expect("outputs");
    for (dev, engine) in engines() {
        let out = engine
            .run(&module, "main", &args)
            .unwrap_or_else(|err| panic!("{dev}: {err}"));
        for (i, want) in outs.iter().enumerate().take(3) {
            assert_eq!(floats(field(&out, i)), json_floats(want), "{dev}: output {i}");
        }
        let got: Vec<i64> = field(&out, 3)
            .to_array::<i64>()
            .expect("int64")
            .iter()
            .copied()
            .collect();
        assert_eq!(got, ints(&outs[3]), "{dev}: output 3");
    }
}
