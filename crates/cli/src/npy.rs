//! Validation of a `.npy` header before the file is handed to the `.npy` reader: the
//! header is a small Python dict literal whose `shape` decides how much memory the
//! reader allocates, so it is parsed here first, with bounds, and the claimed size is
//! checked against the bytes the file actually holds.

/// The longest header accepted (NumPy writes headers of at most a few hundred bytes).
const MAX_HEADER: usize = 1 << 16;

/// The most dimensions a shape may have.
const MAX_NDIM: usize = 64;

/// Check the header of `.npy` bytes: the magic string, a bounded, flat dict with a
/// `descr` of known item size and a `shape` of non-negative integers whose element count
/// (times the item size) does not overflow and matches the data that follows.
pub(crate) fn validate_header(bytes: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err("not a .npy file (no \\x93NUMPY magic string)".into());
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err("truncated .npy header".into());
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    if len > MAX_HEADER {
        return Err(format!("the .npy header is {len} bytes long (at most {MAX_HEADER})"));
    }
    let header = bytes
        .get(start..start + len)
        .ok_or_else(|| "truncated .npy header".to_string())?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text".to_string())?;
    let h = header.trim();
    // One flat dict: exactly one pair of braces, at the ends.
    if !h.starts_with('{') || h.matches('{').count() != 1 || h.matches('}').count() != 1 || !h.ends_with('}') {
        return Err("the .npy header is not a flat dict {'descr': ..., 'fortran_order': ..., 'shape': (...)}".into());
    }
    let item = item_size(field(h, "descr")?)?;
    let shape = field(h, "shape")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("the .npy shape {shape} is not a tuple"))?;
    let mut count: u64 = 1;
    let mut ndim = 0;
    for d in inner.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        ndim += 1;
        if ndim > MAX_NDIM {
            return Err(format!("the .npy shape has more than {MAX_NDIM} dimensions"));
        }
        let d: u64 = d
            .trim_end_matches('L')
            .parse()
            .map_err(|_| format!("the .npy shape has a dimension `{d}` that is not a non-negative integer"))?;
        count = count
            .checked_mul(d)
            .ok_or_else(|| format!("the .npy shape ({inner}) has an element count that overflows"))?;
    }
    let data = (bytes.len() - start - len) as u64;
    let need = count
        .checked_mul(item)
        .ok_or_else(|| format!("the .npy shape ({inner}) has a byte size that overflows"))?;
    if need != data {
        return Err(format!(
            "the .npy shape ({inner}) needs {need} bytes of data, the file has {data}"
        ));
    }
    Ok(())
}

/// The text of the value of `'key':` in the header dict, up to the next top-level comma
/// (a shape's tuple is kept whole).
fn field<'a>(h: &'a str, key: &str) -> Result<&'a str, String> {
    let pat = [format!("'{key}'"), format!("\"{key}\"")];
    let at = pat
        .iter()
        .find_map(|p| h.find(p.as_str()).map(|i| i + p.len()))
        .ok_or_else(|| format!("the .npy header has no '{key}'"))?;
    let rest = h[at..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("the .npy header's '{key}' has no value"))?
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else {
        rest.find([',', '}'])
    }
    .ok_or_else(|| format!("the .npy header's '{key}' is not terminated"))?;
    Ok(rest[..end].trim())
}

/// The item size in bytes of a `descr` like `'<f4'` or `'|b1'`.
fn item_size(descr: &str) -> Result<u64, String> {
    let d = descr.trim_matches(|c| c == '\'' || c == '"');
    let digits = d.trim_start_matches(['<', '>', '|', '=']);
    let n: u64 = digits
        .get(1..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("unsupported .npy dtype {descr}"))?;
    if !(1..=16).contains(&n) {
        return Err(format!("unsupported .npy dtype {descr}"));
    }
    Ok(n)
}

/// The helpers of the integration tests (`.npy` bytes).
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_common;

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file with the header `header` and `data` zero bytes.
    fn npy(header: &str, data: usize) -> Vec<u8> {
        super::test_common::npy_bytes(header, &vec![0u8; data])
    }

    #[test]
    fn a_valid_header_passes() {
        let b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
        assert_eq!(validate_header(&b), Ok(()));
        let b = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8);
        assert_eq!(validate_header(&b), Ok(()));
        let b = npy("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }", 5);
        assert_eq!(validate_header(&b), Ok(()));
    }

    #[test]
    fn overflowing_huge_or_nested_headers_are_errors() {
        let b = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
            0,
        );
        assert!(validate_header(&b).unwrap_err().contains("overflows"));
        let b = npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }",
            4,
        );
        assert!(validate_header(&b)
            .unwrap_err()
            .contains("needs 4000000000000000 bytes of data, the file has 4"));
        let nested = format!("{}{}", "{".repeat(10000), "}".repeat(10000));
        let b = npy(&nested, 0);
        assert!(validate_header(&b).unwrap_err().contains("not a flat dict"));
        let b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0);
        assert!(validate_header(&b).unwrap_err().contains("not a non-negative integer"));
        assert!(validate_header(b"\x93NUMPY").is_err());
    }
}
