//! `relax check FILE [--json]`.

use std::path::Path;

use relax_ir::text::{parse, print_struct_info};
use relax_ir::{Diagnostic, Severity};
use serde_json::json;

use crate::common::{read_source, report, EXIT_OK, EXIT_REJECTED};

/// Run `relax check`: parse, normalize, check well-formedness and derive StructInfo.
/// Exit 0 when valid (warnings allowed), 1 when rejected, 2 on I/O errors.
pub fn run(path: &Path, as_json: bool, lenient: bool) -> u8 {
    let source = match read_source(path) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let module = match parse(&source.text) {
        Ok(p) => p.into_module(),
        Err(d) => {
            report(&source, &d);
            if as_json {
                println!(
                    "{}",
                    json!({"well_formed": false, "diagnostics": [diag_json(&d)], "bindings": []})
                );
            }
            return EXIT_REJECTED;
        }
    };
    let (module, lenient_warnings) = if lenient {
        crate::common::lenient(&module)
    } else {
        (module, Vec::new())
    };
    let mut result = relax_transform::check_and_realize(&module);
    result.diagnostics.splice(0..0, lenient_warnings);
    if result.is_valid() {
        // Calls whose legalization declines (a `legalize/skipped` warning each).
        // As the engine's pipeline: ranked tensors of unknown shape get symbolic dimensions first.
        let bound = relax_transform::bind_shapes::bind_symbolic_shapes(&result.module);
        let (_, skipped) = relax_transform::legalize::legalize_module_report(bound.as_ref().unwrap_or(&result.module));
        result.diagnostics.extend(skipped);
    }
    for d in &result.diagnostics {
        report(&source, d);
    }
    let valid = result.is_valid();
    if as_json {
        let bindings: Vec<_> = result
            .bindings
            .iter()
            .map(|b| {
                json!({
                    "function": b.function,
                    "var": b.var,
                    "struct_info": print_struct_info(&b.struct_info, Some(&result.module)),
                })
            })
            .collect();
        let out = json!({
            "well_formed": result.well_formed,
            "diagnostics": result.diagnostics.iter().map(diag_json).collect::<Vec<_>>(),
            "bindings": bindings,
        });
        println!("{out}");
    } else if valid {
        let warnings = result.diagnostics.len();
        eprintln!(
            "{}: ok ({warnings} warning{})",
            source.name,
            if warnings == 1 { "" } else { "s" }
        );
    }
    if valid {
        EXIT_OK
    } else {
        EXIT_REJECTED
    }
}

fn diag_json(d: &Diagnostic) -> serde_json::Value {
    let (line, column) = if d.span.is_none() {
        (serde_json::Value::Null, serde_json::Value::Null)
    } else {
        (json!(d.span.line), json!(d.span.col))
    };
    json!({
        "severity": match d.severity { Severity::Error => "error", Severity::Warning => "warning" },
        "message": d.message,
        "line": line,
        "column": column,
        "rule": d.rule.map(|r| r.as_str()),
    })
}
