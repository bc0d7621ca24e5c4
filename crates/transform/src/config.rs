//! Defaults that the environment may set (the one place this crate reads it).

/// Whether pipelines check well-formedness after every pass by default: in debug
/// builds, or when `RELAX_VERIFY_PASSES=1`. [`crate::PassContext::verify`] and
/// [`crate::Pipeline::verify`] override it.
pub fn verify_passes_default() -> bool {
    cfg!(debug_assertions) || std::env::var("RELAX_VERIFY_PASSES").is_ok_and(|v| v == "1")
}
