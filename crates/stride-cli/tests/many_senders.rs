//! The CI slice of `bench/many.py` ("many senders into one receiver"): 50 concurrent
//! `stride send` processes of 1 MB each into one `stride recv`, one run; every transfer must
//! complete with its bytes intact. The full case is `python3 bench/many.py` (200 senders,
//! 10 runs; docs/results.md).

use std::path::Path;
use std::process::Command;

#[test]
fn fifty_concurrent_senders_all_complete() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("python3")
        .arg(root.join("bench/many.py"))
        .args([
            "--senders",
            "50",
            "--runs",
            "1",
            "--size",
            "1MB",
            "--no-build",
        ])
        .args(["--timeout", "240", "--stride", env!("CARGO_BIN_EXE_stride")])
        .output()
        .expect("python3 runs bench/many.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "not every transfer completed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("50/50 completed"), "{text}");
}
