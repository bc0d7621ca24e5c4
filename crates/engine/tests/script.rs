//! End to end from TVMScript text: parse, check, load and run.

mod common;

use common::text::{parse, printing_engine};

use ndarray::{arr1, arr2, ArrayD, IxDyn};
use relax_engine::{Engine, EngineError, Purity, Tensor, Value};

fn f32s(v: &Value) -> ArrayD<f32> {
    v.as_tensor().expect("tensor").to_array::<f32>().unwrap()
}

const FACTORIAL: &str = r#"
@I.ir_module
class Module:
    @R.function
    def fact(n: R.Tensor((), "int64")) -> R.Tensor((), "int64"):
        le = R.call_pure_packed("test.le1", n, sinfo_args=R.Tensor((), "bool"))
        if le:
            r = R.const(1, "int64")
        else:
            m = R.call_pure_packed("test.sub1", n, sinfo_args=R.Tensor((), "int64"))
            f = Module.fact(m)
            r = R.call_pure_packed("test.mul", n, f, sinfo_args=R.Tensor((), "int64"))
        return r

    @R.function
    def even(n: R.Tensor((), "int64")) -> R.Tensor((), "bool"):
        z = R.call_pure_packed("test.eq0", n, sinfo_args=R.Tensor((), "bool"))
        if z:
            r = R.const(True, "bool")
        else:
            m = R.call_pure_packed("test.sub1", n, sinfo_args=R.Tensor((), "int64"))
            r = Module.odd(m)
        return r

    @R.function
    def odd(n: R.Tensor((), "int64")) -> R.Tensor((), "bool"):
        z = R.call_pure_packed("test.eq0", n, sinfo_args=R.Tensor((), "bool"))
        if z:
            r = R.const(False, "bool")
        else:
            m = R.call_pure_packed("test.sub1", n, sinfo_args=R.Tensor((), "int64"))
            r = Module.even(m)
        return r
"#;

fn scalar(args: &[Value], i: usize) -> relax_engine::Result<i64> {
    let t = args
        .get(i)
        .ok_or_else(|| EngineError::msg("missing argument"))?
        .expect_tensor("argument")?;
    t.scalar_value()?
        .as_int()
        .ok_or_else(|| EngineError::msg("not an integer"))
}

fn math_engine() -> Engine {
    let e = Engine::default();
    e.register_packed("test.le1", Purity::Pure, |a| {
        Ok(Tensor::scalar(scalar(a, 0)? <= 1).into())
    });
    e.register_packed("test.eq0", Purity::Pure, |a| {
        Ok(Tensor::scalar(scalar(a, 0)? == 0).into())
    });
    e.register_packed("test.sub1", Purity::Pure, |a| {
        Ok(Tensor::scalar(scalar(a, 0)? - 1).into())
    });
    e.register_packed("test.mul", Purity::Pure, |a| {
        Ok(Tensor::scalar(scalar(a, 0)? * scalar(a, 1)?).into())
    });
    e
}

#[test]
fn recursion_from_text() {
    let loaded = math_engine().load(&parse(FACTORIAL)).unwrap();
    let fact = |n: i64| loaded.run("fact", &[Tensor::scalar(n).into()]).unwrap();
    assert_eq!(fact(6).as_tensor().unwrap().scalar_value().unwrap().as_int(), Some(720));
    assert_eq!(fact(1).as_tensor().unwrap().scalar_value().unwrap().as_int(), Some(1));
    for n in [0i64, 3, 8] {
        let even = loaded.run("even", &[Tensor::scalar(n).into()]).unwrap();
        assert_eq!(
            even.as_tensor().unwrap().scalar_value().unwrap().as_int(),
            Some((n % 2 == 0) as i64),
            "even({n})"
        );
    }
}

const CALL_TIR: &str = r#"
n = TypeVar("n")
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def add(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32")):
        for i in range(n):
            with T.sblock("add"):
                vi = T.axis.spatial(n, i)
                T.reads(A[vi], B[vi])
                T.writes(C[vi])
                C[vi] = A[vi] + B[vi]

    @R.function
    def main(x: R.Tensor((n,), dtype="float32"), y: R.Tensor((n,), dtype="float32")) -> R.Tensor((n * 2,), dtype="float32"):
        cls = Module
        with R.dataflow():
            z = R.call_tir(cls.add, (x, y), out_ty=R.Tensor((n,), dtype="float32"))
            w = R.call_tir(cls.add, (z, z), out_ty=R.Tensor((n,), dtype="float32"))
            R.output(w)
        s = R.shape_of(w)
        u = R.match_cast(w, R.Tensor((n,), dtype="float32"))
        out = R.call_pure_packed("test.concat", u, x, sinfo_args=R.Tensor((n * 2,), dtype="float32"))
        return out
"#;

/// Registers `test.concat`: the two float32 tensors' elements, one after the other.
fn register_concat(engine: &Engine) {
    engine.register_packed("test.concat", Purity::Pure, |a| {
        let x = a[0].expect_tensor("a")?.to_array::<f32>()?;
        let y = a[1].expect_tensor("b")?.to_array::<f32>()?;
        let v: Vec<f32> = x.iter().chain(y.iter()).copied().collect();
        Ok(Tensor::from_array(
            &ArrayD::from_shape_vec(IxDyn(&[v.len()]), v).map_err(|e| EngineError::msg(e.to_string()))?,
        )
        .into())
    });
}

#[test]
fn call_tir_from_text_runs_on_the_jit() {
    let engine = Engine::default();
    register_concat(&engine);
    let loaded = engine.load(&parse(CALL_TIR)).unwrap();
    let out = loaded
        .run(
            "main",
            &[
                arr1(&[1.0f32, 2.0, 3.0]).into_dyn().into(),
                arr1(&[0.5f32, 0.5, 0.5]).into_dyn().into(),
            ],
        )
        .unwrap();
    assert_eq!(f32s(&out), arr1(&[3.0f32, 5.0, 7.0, 1.0, 2.0, 3.0]).into_dyn());
    assert_eq!(loaded.stats().kernels_run, 2);
    let err = loaded
        .run(
            "main",
            &[
                arr1(&[1.0f32]).into_dyn().into(),
                arr1(&[1.0f32, 2.0]).into_dyn().into(),
            ],
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "dimension 0 of argument `y` of function `main`: expected n = 1, got 2"
    );
}

const EFFECTS: &str = r#"
n = TypeVar("n")
m = TypeVar("m")
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((n, m), "float32"), flag: R.Tensor((), "bool")):
        R.print(x, R.shape([n, m * 2]), format="x={} shape={}")
        s = R.shape([n * m, n // 2, m % 3])
        R.assert_op(flag, [s], format="flag is off for {}")
        t = (x, s, R.prim_value(n + 1), R.str("done"))
        return t
"#;

#[test]
fn print_assert_and_shapes_from_text() {
    let (engine, lines) = printing_engine();
    let loaded = engine.load(&parse(EFFECTS)).unwrap();
    let x: Value = arr2(&[[1.0f32, 2.5], [3.0, 4.0], [5.0, 6.0]]).into_dyn().into();
    let out = loaded.run("main", &[x.clone(), Tensor::scalar(true).into()]).unwrap();
    let f = out.as_tuple().unwrap();
    assert!(f[0].as_tensor().unwrap().shares_memory_with(x.as_tensor().unwrap()));
    assert_eq!(f[1].as_shape().unwrap(), &[6, 1, 2]);
    assert_eq!(f[2].as_int(), Some(4));
    assert_eq!(f[3].as_str(), Some("done"));
    let err = loaded.run("main", &[x, Tensor::scalar(false).into()]).unwrap_err();
    assert_eq!(err.to_string(), "assertion failed: flag is off for (6, 1, 2)");
    assert_eq!(
        *lines.lock().unwrap(),
        vec!["x=[[1. 2.5] [3. 4.] [5. 6.]] shape=(3, 4)"; 2]
    );
}

const CLOSURES: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32"), k: R.Tensor((), "float32")):
        @R.function
        def scale(y: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            r = R.call_pure_packed("test.scale", y, k, sinfo_args=R.Tensor((2,), "float32"))
            return r

        a = scale(x)
        b = scale(a)
        return (a, b)
"#;

#[test]
fn local_function_captures_from_text() {
    let engine = Engine::default();
    engine.register_packed("test.scale", Purity::Pure, |a| {
        let y = a[0].expect_tensor("y")?.to_array::<f32>()?;
        let k = a[1].expect_tensor("k")?.scalar_value()?.as_f64() as f32;
        Ok(Tensor::from_array(&y.mapv(|v| v * k)).into())
    });
    let out = engine
        .run(
            &parse(CLOSURES),
            "main",
            &[arr1(&[1.0f32, -2.0]).into_dyn().into(), Tensor::scalar(3.0f32).into()],
        )
        .unwrap();
    let f = out.as_tuple().unwrap();
    assert_eq!(f32s(&f[0]), arr1(&[3.0f32, -6.0]).into_dyn());
    assert_eq!(f32s(&f[1]), arr1(&[9.0f32, -18.0]).into_dyn());
}

#[test]
fn call_tir_from_text_runs_on_the_gpu() {
    let engine = match Engine::default().with_gpu(None) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("no GPU adapter available, GPU kernels not checked: {e}");
            return;
        }
    };
    register_concat(&engine);
    let loaded = engine.load(&parse(CALL_TIR)).unwrap();
    for n in [3usize, 1000] {
        let x = ArrayD::from_shape_fn(IxDyn(&[n]), |i| i[0] as f32);
        let y = ArrayD::from_elem(IxDyn(&[n]), 0.5f32);
        let out = loaded.run("main", &[x.clone().into(), y.clone().into()]).unwrap();
        let want: Vec<f32> = (&(&x + &y) * 2.0).iter().chain(x.iter()).copied().collect();
        assert_eq!(f32s(&out).iter().copied().collect::<Vec<_>>(), want, "n = {n}");
    }
    assert_eq!(loaded.stats().kernels_run, 4);
}

const LOWERED: &str = r#"
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2, 3), "float32")):
        s = R.shape_of(x)
        t = R.shape_to_tensor(s)
        s2 = R.tensor_to_shape(t)
        buf = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), R.prim_value(0))
        y = R.call_packed("test.fill", buf, R.prim_value(7), sinfo_args=R.Tensor((2, 3), "float32"))
        return (t, s2, y, buf)
"#;

#[test]
fn lowered_builtins_from_text() {
    let engine = Engine::default();
    engine.register_packed("test.fill", Purity::Impure, |a| {
        let t = a[0].expect_tensor("buf")?;
        let v = a[1].as_int().ok_or_else(|| EngineError::msg("fill value"))? as f32;
        t.assign(&ArrayD::from_elem(IxDyn(&[2, 3]), v))?;
        Ok(a[0].clone())
    });
    let out = engine
        .run(&parse(LOWERED), "main", &[ArrayD::<f32>::zeros(IxDyn(&[2, 3])).into()])
        .unwrap();
    let f = out.as_tuple().unwrap();
    assert_eq!(
        f[0].as_tensor().unwrap().to_array::<i64>().unwrap(),
        arr1(&[2i64, 3]).into_dyn()
    );
    assert_eq!(f[1].as_shape().unwrap(), &[2, 3]);
    // The packed call mutated the allocated tensor in place and returned it.
    assert!(f[2].as_tensor().unwrap().shares_memory_with(f[3].as_tensor().unwrap()));
    assert_eq!(f32s(&f[3]), ArrayD::from_elem(IxDyn(&[2, 3]), 7.0f32));
}

/// TVM 0.27 spells a scalar that also names a symbolic variable `extent: T.int64`: the
/// binding defines `extent`, which later shapes use.
const SCALAR_NAMES_SHAPE_VAR: &str = r#"
@I.ir_module
class Module:
    @R.function
    def main(source: T.int64, data: R.Tensor(dtype="float32", ndim=1)) -> T.int64:
        with R.dataflow():
            extent: T.int64 = source
            matched: R.Tensor((extent,), dtype="float32") = R.match_cast(data, R.Tensor((extent,), dtype="float32"))
            R.output(extent)
        return extent
"#;

#[test]
fn scalar_binding_defines_its_shape_variable() {
    let module = parse(SCALAR_NAMES_SHAPE_VAR);
    let engine = Engine::default();
    let data: Value = arr1(&[1.0f32, 2.0, 3.0]).into_dyn().into();
    let out = engine
        .run(
            &module,
            "main",
            &[Value::Prim(relax_engine::PrimValue::int64(3)), data.clone()],
        )
        .unwrap();
    assert_eq!(out.as_prim().map(|p| p.value), Some(relax_engine::Scalar::Int(3)));
    // `extent` is 4, the data has 3 elements: the MatchCast fails.
    let err = engine
        .run(&module, "main", &[Value::Prim(relax_engine::PrimValue::int64(4)), data])
        .unwrap_err()
        .to_string();
    assert!(err.contains("matched") || err.contains("extent"), "{err}");
}
