//! Arbitrary agent output after a valid handshake, through `Host::connect` end to end.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = acp_host_fuzz::dispatch::fuzz_one(acp_host_fuzz::runtime(), data) {
        panic!("{e}");
    }
});
