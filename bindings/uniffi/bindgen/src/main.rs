//! `uniffi-bindgen`, built once per run from the pinned uniffi: generates the Kotlin and Swift
//! sources from the built `libacp_host_uniffi` (library mode). Used by scripts/gen-uniffi.

fn main() {
    uniffi::uniffi_bindgen_main()
}
