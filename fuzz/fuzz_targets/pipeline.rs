//! Normalize, legalize and WGSL: any text that parses is normalized; a module without
//! errors is legalized and every PrimFunc emitted as WGSL for a device with every
//! capability (which validates it with naga). A panic is a crash, and so is WGSL that
//! naga rejects for a program the checker accepts (the generator wrote invalid code).

#![no_main]

use libfuzzer_sys::fuzz_target;
use relax_checker::normalize::normalize_module;
use relax_ir::text::parse;
use relax_ir::BaseFunc;
use relax_jit::{emit_program, DeviceCaps, JitError, ScheduleOptions};
use relax_transform::check_and_realize;
use relax_transform::legalize::legalize_module;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(program) = parse(text) else { return };
    let module = program.into_module();
    let n = normalize_module(&module);
    if n.diagnostics.iter().any(|d| d.is_error()) {
        return;
    }
    let valid = check_and_realize(&module).is_valid();
    let Ok(m) = legalize_module(&n.module) else { return };
    for (name, f) in m.functions.iter() {
        if let BaseFunc::Prim(pf) = f {
            match emit_program(pf, &DeviceCaps::ALL, &ScheduleOptions::default()) {
                Err(e @ JitError::Naga { .. }) if valid => {
                    panic!("generated WGSL of `{name:?}` fails naga validation: {e}")
                }
                _ => {}
            }
        }
    }
});
