//! Generates the gRPC client and message types from Kozel Arena's .proto files into
//! OUT_DIR; `src/main.rs` pulls them in with `tonic::include_proto!("kozel.v1")`. The proto
//! folder is `$KOZEL_PROTO_DIR` when set (a copy of this folder outside the repository), else
//! the repository's own `../../proto` (never copied).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = std::env::var_os("KOZEL_PROTO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../../proto"));
    if !proto_root.join("kozel/v1/referee.proto").is_file() {
        return Err(format!(
            "no kozel/v1/referee.proto in {}: set KOZEL_PROTO_DIR to Kozel Arena's proto folder",
            proto_root.display()
        )
        .into());
    }
    // referee.proto imports game.proto, which imports google/protobuf/struct.proto.
    let protos = [proto_root.join("kozel/v1/referee.proto")];
    // The well-known types (struct.proto) ship with protoc-bin-vendored.
    let includes = [proto_root, protoc_bin_vendored::include_path()?];

    // protoc: $PROTOC when set, otherwise the binary bundled by protoc-bin-vendored, so a plain
    // `cargo build` needs no protoc installed.
    let mut config = tonic_prost_build::Config::new();
    if std::env::var_os("PROTOC").is_none() {
        config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    }
    println!("cargo:rerun-if-env-changed=PROTOC");
    println!("cargo:rerun-if-env-changed=KOZEL_PROTO_DIR");
    // Regenerate when a .proto changes (a build script that prints any rerun-if line is
    // otherwise rerun only for those): a cached target folder kept stale stubs before.
    println!(
        "cargo:rerun-if-changed={}",
        protos[0].parent().unwrap().display()
    );

    tonic_prost_build::configure()
        .build_server(false) // a bot only needs the client
        .compile_with_config(config, &protos, &includes)?;
    Ok(())
}
