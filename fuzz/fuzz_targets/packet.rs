//! Response and statement packet decoders must never panic, whatever the bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    use hscale_wire::{response, stmt};
    let _ = response::OkPacket::decode(data);
    let _ = response::ErrPacket::decode(data);
    let _ = response::decode_eof(data);
    let _ = stmt::PrepareOk::decode(data);
    let _ = stmt::statement_id(data);
    if let Some((&n, rest)) = data.split_first() {
        if let Ok(e) = stmt::Execute::decode(rest, n as usize) {
            let types = vec![0u8; n as usize * 2];
            let _ = e.encode_for(1, &types);
        }
    }
    let mut r = hscale_wire::buf::Reader::new(data);
    while r.lenenc_bytes().is_ok() {}
});
