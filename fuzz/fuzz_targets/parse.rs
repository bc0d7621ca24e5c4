//! Parser, checker and printer: any text is parsed; a program that parses is checked
//! (`check_and_realize`) and printed. For a program the checker accepts, the printed
//! text must parse again and print to itself (printing is a fixed point). A panic, a
//! printed valid program that does not re-parse, or a second print that differs is a
//! crash.

#![no_main]

use libfuzzer_sys::fuzz_target;
use relax_ir::text::{parse, print_program};
use relax_transform::check_and_realize;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(program) = parse(text) else { return };
    let printed = print_program(&program);
    let valid = check_and_realize(&program.clone().into_module()).is_valid();
    if !valid {
        return;
    }
    let again = match parse(&printed) {
        Ok(p) => p,
        Err(d) => panic!(
            "a valid program prints as text that does not parse: {}\n{printed}",
            d.message
        ),
    };
    let twice = print_program(&again);
    assert!(
        twice == printed,
        "print is not a fixed point\n--- first ---\n{printed}\n--- second ---\n{twice}"
    );
});
