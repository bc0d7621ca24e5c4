//! Bytes of `.npy` and `.npz` files for tests (shared by the cli and engine tests).

use std::io::Write;

/// A version 1.0 `.npy` file: the magic, the header dictionary `header` padded to a
/// multiple of 64 bytes, then `data`.
pub fn npy_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.extend(h.as_bytes());
    b.extend(data);
    b
}

/// An `.npy` header dictionary: `descr` (`<f4`, ...) and `shape` as Python writes it.
pub fn header(descr: &str, shape: &str) -> String {
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
}

/// A zip archive of `entries` (name, bytes), deflated when `deflate`.
pub fn zip_bytes(entries: &[(&str, Vec<u8>)], deflate: bool) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let method = if deflate {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(method)
        .large_file(true);
    for (name, bytes) in entries {
        z.start_file(*name, opts).expect("start");
        z.write_all(bytes).expect("write");
    }
    z.finish().expect("finish").into_inner()
}
