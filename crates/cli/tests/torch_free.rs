//! The build of `xqz` without libtorch (`cargo build -p xqz-cli --no-default-features`, the
//! coordinator's image): it names no libtorch library, its commands that need no network work
//! (the coordinator serves, `status` reads it, `perft` counts), and the commands of the full
//! build are refused with an error that says why.
//!
//! `scripts/test` builds that binary and hands it over in `XQZ_TORCH_FREE`.

use std::path::PathBuf;
use std::process::{Command, Output};

use xqz_test_support::process::start_listening;

/// The torch-free binary that `scripts/test` built.
fn torch_free() -> PathBuf {
    let path = std::env::var_os("XQZ_TORCH_FREE").map(PathBuf::from).expect(
        "no torch-free xqz: build it with `cargo build -p xqz-cli --no-default-features`, copy \
         target/debug/xqz aside and set XQZ_TORCH_FREE to the copy (scripts/test does)",
    );
    assert!(path.exists(), "XQZ_TORCH_FREE={} does not exist", path.display());
    path
}

fn xqz(args: &[&str]) -> Output {
    Command::new(torch_free()).args(args).output().unwrap()
}

#[test]
fn the_torch_free_build_links_no_libtorch() {
    let bytes = std::fs::read(torch_free()).unwrap();
    for library in [&b"libtorch_cpu.so"[..], b"libtorch_cuda.so", b"libc10.so"] {
        let named = bytes.windows(library.len()).any(|w| w == library);
        assert!(!named, "the binary names {}", String::from_utf8_lossy(library));
    }
    // The full build does, so the check above can tell them apart.
    let full = std::fs::read(env!("CARGO_BIN_EXE_xqz")).unwrap();
    assert!(full.windows(15).any(|w| w == b"libtorch_cpu.so"));
}

#[test]
fn commands_without_a_network_work() {
    let perft = xqz(&["perft", "--depth", "2"]);
    assert!(perft.status.success());
    assert!(String::from_utf8_lossy(&perft.stdout).contains("nodes 1920"));

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_coordinator, addr) = start_listening(
        Command::new(torch_free()).args(["coordinator", "--listen", "127.0.0.1:0", "--data"]).arg(&data),
    );
    let status = xqz(&["status", "--coordinator", &format!("http://{addr}"), "--json"]);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(stats.is_object(), "{stats}");
}

#[test]
fn commands_that_run_a_network_are_refused_with_the_reason() {
    let refused: [(&[&str], &str); 5] = [
        (&["train"], "train"),
        (&["run", "--minutes", "1"], "run"),
        (&["eval", "match", "--a", "material"], "eval match"),
        (&["book", "grow", "book.sqlite"], "book grow"),
        (&["bench", "net"], "bench net"),
    ];
    for (args, name) in refused {
        let out = xqz(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("`xqz {name}` runs a network")), "{args:?}: {stderr}");
        assert!(stderr.contains("without libtorch"), "{stderr}");
    }
    let out = xqz(&["frobnicate"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown command `frobnicate`"));
}
