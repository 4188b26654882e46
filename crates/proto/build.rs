//! Compiles `proto/xqz/v1/*.proto` with protox (pure Rust, no protoc) and generates the tonic
//! client and server; also writes the descriptor set that the reflection service serves.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let file = "xqz/v1/coordinator.proto";
    println!("cargo:rerun-if-changed={}", root.join(file).display());
    let descriptors = protox::compile([file], [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("xqz_descriptor.bin"), descriptors.encode_to_vec())?;
    // Every method decodes through the bounded codec (src/codec.rs), which refuses a message
    // whose decoded form would dwarf its bytes before decoding it.
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .codec_path("crate::codec::BoundedCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
