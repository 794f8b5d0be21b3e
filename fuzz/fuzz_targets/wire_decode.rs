//! Arbitrary bytes through the framing (random bound and chunk sizes) and the decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = acp_host_fuzz::wire::fuzz_one(acp_host_fuzz::runtime(), data) {
        panic!("{e}");
    }
});
