//! The lexer and statement classifier must never panic on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = hscale_sql::analyze(s);
    }
});
