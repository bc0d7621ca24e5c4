//! GPU indexing limits found while emitting WGSL (no adapter needed): a tensor of
//! more than 2^31 - 1 elements is refused with the clean "too large for 32-bit GPU
//! indexing" error (naga would reject the narrowed constant), and indices that are
//! not affine in the loop variables get a run-time bounds check.

use relax_ir::{BaseFunc, PrimFunc};
use relax_jit::{Jit, JitError};

fn prim(src: &str) -> PrimFunc {
    let module = match relax_ir::text::parse(src) {
        Ok(p) => p.into_module(),
        Err(d) => panic!("parse error: {}", d.render("test.py", src, false)),
    };
    match module.functions.values().next().cloned() {
        Some(BaseFunc::Prim(f)) => f,
        _ => panic!("no PrimFunc"),
    }
}

const TAKE_HUGE: &str = r#"
@T.prim_func
def take(x: T.Buffer((T.int64(4294967296),), "int8"), i: T.Buffer((T.int64(2),), "int64"), o: T.Buffer((T.int64(2),), "int8")):
    for ax0 in range(T.int64(2)):
        with T.block("T_take"):
            v = T.axis.spatial(T.int64(2), ax0)
            o[v] = x[i[v]]
"#;

const GATHER_ND_HUGE: &str = r#"
@T.prim_func
def gather_nd(x: T.Buffer((T.int64(65536), T.int64(65536)), "int8"), i: T.Buffer((T.int64(2), T.int64(3)), "int64"), o: T.Buffer((T.int64(3),), "int8")):
    for ax0 in range(T.int64(3)):
        with T.block("T_gather_nd"):
            v = T.axis.spatial(T.int64(3), ax0)
            o[v] = x[i[T.int64(0), v], i[T.int64(1), v]]
"#;

#[test]
fn gathers_from_tensors_past_32_bit_indexing_are_refused_cleanly() {
    for src in [TAKE_HUGE, GATHER_ND_HUGE] {
        let e = Jit::new(None).wgsl(&prim(src)).expect_err("2^32 elements");
        assert!(matches!(e, JitError::TooLarge(_)), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("too large for 32-bit GPU indexing") && msg.contains("4294967296 elements"),
            "{msg}"
        );
    }
}

const SQUARE: &str = r#"
@T.prim_func
def sq(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
    for i in range(10):
        with T.block("b"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi * vi]
"#;

const AFFINE: &str = r#"
@T.prim_func
def shift(A: T.Buffer((12,), "float32"), B: T.Buffer((10,), "float32")):
    for i in range(10):
        with T.block("b"):
            vi = T.axis.spatial(10, i)
            B[vi] = A[vi + 2]
"#;

#[test]
fn non_affine_indices_are_checked_affine_ones_are_not() {
    let src = Jit::new(None).wgsl(&prim(SQUARE)).expect("wgsl");
    let k = &src.kernels[0];
    assert_eq!(k.oob_sites.len(), 1, "{}", k.wgsl);
    assert!(k.wgsl.contains("relax_chk("), "{}", k.wgsl);
    let src = Jit::new(None).wgsl(&prim(AFFINE)).expect("wgsl");
    assert!(src.kernels[0].oob_sites.is_empty(), "{}", src.kernels[0].wgsl);
}
