//! Gives the shared library its SONAME: `libacp_host.so.<ACPH_ABI_VERSION>` on Linux (the ABI
//! version of `src/lib.rs`, bumped on every incompatible change), so programs linked against one
//! ABI never load another. `scripts/install-c` installs the matching file names and links.

fn main() {
    println!("cargo:rerun-if-changed=src/lib.rs");
    let lib = std::fs::read_to_string("src/lib.rs").unwrap_or_default();
    let abi = lib
        .lines()
        .find_map(|l| l.trim().strip_prefix("pub const ACPH_ABI_VERSION: u32 = "))
        .and_then(|rest| rest.trim_end_matches(';').trim().parse::<u32>().ok());
    let Some(abi) = abi else {
        // A build without a SONAME would install under the wrong name: refuse.
        println!("cargo:warning=ACPH_ABI_VERSION not found in src/lib.rs");
        std::process::exit(1);
    };
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    match os.as_str() {
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libacp_host.so.{abi}");
        }
        "macos" | "ios" => {
            println!(
                "cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libacp_host.{abi}.dylib"
            );
        }
        _ => {}
    }
}
