//! `.npy` inputs and `.npy`/`.npz` outputs of `relax run`. The files are parsed and
//! written by `relax_engine::params::npy` (the format is small and is parsed there
//! rather than through a dependency: the header is checked, with bounds, before
//! anything is allocated).

use std::path::Path;

use relax_engine::{Tensor, Value};

use crate::common::{EXIT_REJECTED, EXIT_USAGE};

fn rejected(msg: impl Into<String>) -> (u8, String) {
    (EXIT_REJECTED, msg.into())
}
fn usage(msg: impl Into<String>) -> (u8, String) {
    (EXIT_USAGE, msg.into())
}

/// A tensor from a `.npy` file (the header checked before anything is allocated; see
/// `relax_engine::params::npy` for the element types).
pub(crate) fn read_npy(path: &Path) -> Result<Tensor, (u8, String)> {
    if !path.is_file() {
        return Err(usage(format!("cannot read {}: no such file", path.display())));
    }
    relax_engine::params::read_npy(path).map_err(|e| rejected(e.to_string()))
}

/// Write the result: one tensor as `.npy`, several (or one) as `.npz` entries
/// `arr_0`, `arr_1`, ... (float16 as `<f2`, bfloat16 as `<V2` as `ml_dtypes` saves it,
/// sub-byte integers widened to `int8`/`uint8`).
pub(crate) fn write_output(path: &Path, leaves: &[Tensor]) -> Result<(), (u8, String)> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "npy" => {
            let [t] = leaves else {
                return Err(rejected(format!(
                    "the result has {} tensors; write them to a .npz file",
                    leaves.len()
                )));
            };
            let bytes =
                relax_engine::params::npy::encode(t).map_err(|e| rejected(format!("cannot write the result: {e}")))?;
            std::fs::write(path, bytes).map_err(|e| usage(format!("cannot write {}: {e}", path.display())))
        }
        "npz" => {
            let params: relax_engine::Params = leaves
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("arr_{i}"), Value::Tensor(t.clone())))
                .collect();
            params.write_npz(path).map_err(|e| match e {
                relax_engine::EngineError::Invalid(m) => usage(m),
                e => rejected(format!("cannot write the result: {e}")),
            })
        }
        _ => Err(usage(format!("{}: --output must end in .npy or .npz", path.display()))),
    }
}

/// The helpers of the integration tests (`.npy` bytes).
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

#[cfg(test)]
mod tests {
    use relax_engine::params::npy::parse_header;

    /// A `.npy` file with the header `header` and `data` zero bytes.
    fn npy(header: &str, data: usize) -> Vec<u8> {
        super::test_common::npy_bytes(header, &vec![0u8; data])
    }

    fn decode(b: &[u8]) -> Result<relax_engine::Tensor, String> {
        relax_engine::params::parse_npy(b).map_err(|e| e.to_string())
    }

    #[test]
    fn a_valid_header_passes() {
        let b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
        assert_eq!(decode(&b).map(|t| t.shape().to_vec()), Ok(vec![2, 3]));
        let b = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8);
        assert_eq!(decode(&b).map(|t| t.shape().to_vec()), Ok(vec![]));
        let b = npy("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }", 5);
        assert_eq!(decode(&b).map(|t| t.shape().to_vec()), Ok(vec![5]));
        let b = npy("{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", 10);
        assert_eq!(decode(&b).map(|t| t.dtype().to_string()), Ok("float16".to_string()));
    }

    #[test]
    fn overflowing_huge_or_nested_headers_are_errors() {
        let b = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
            0,
        );
        assert!(decode(&b).unwrap_err().contains("overflows"));
        let b = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }",
            4,
        );
        assert!(decode(&b)
            .unwrap_err()
            .contains("needs 4000000000000000 bytes of data, the file has 4"));
        let nested = format!("{}{}", "{".repeat(10000), "}".repeat(10000));
        let b = npy(&nested, 0);
        assert!(decode(&b).unwrap_err().contains("not a flat dict"));
        let b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0);
        assert!(decode(&b).unwrap_err().contains("not a non-negative integer"));
        assert!(parse_header(b"\x93NUMPY").is_err());
        // An empty array whose other dimensions overflow when multiplied.
        let b = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775807, 9223372036854775807), }",
            0,
        );
        assert!(decode(&b).unwrap_err().contains("too large"));
    }
}
