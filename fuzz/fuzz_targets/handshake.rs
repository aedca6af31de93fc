//! Handshake-phase decoders (server greeting, client response, change user,
//! auth switch) must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    use hscale_wire::handshake::*;
    let _ = InitialHandshake::decode(data);
    let _ = HandshakeResponse::decode(data);
    let _ = ChangeUser::decode(data, u32::MAX);
    let _ = ChangeUser::decode(data, 0);
    let _ = decode_auth_switch(data);
});
