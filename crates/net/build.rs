//! Bakes libtorch's library folder into the rpath of this package's binaries (tests, benches; the
//! `xqz` binary's package uses this same script), so they run without `LD_LIBRARY_PATH`.

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    if let Ok(lib) = std::env::var("DEP_TCH_LIBTORCH_LIB") {
        // The resolved path, so that binaries outlive the project's `.libtorch` link.
        let lib = std::fs::canonicalize(&lib).unwrap_or_else(|_| lib.into());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
        // The linker drops libtorch_cuda as unused (nothing names its symbols), and without it
        // libtorch sees no GPU: keep it wherever the wheel has it.
        if lib.join("libtorch_cuda.so").exists() {
            println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-ltorch_cuda,--as-needed");
        }
    }
}
