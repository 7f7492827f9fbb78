//! The checked-in vectors under `vectors/` must equal what this crate generates, and the wire
//! vectors must parse back to their fields.
use std::path::PathBuf;
use stride_proto::vectors;
use stride_proto::wire::Packet;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vectors")
}

fn check(dir: &str, files: Vec<(&'static str, String)>) {
    for (name, want) in files {
        let path = root().join(dir).join(name);
        let got = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run `stride vectors`", path.display()));
        assert!(
            got == want,
            "{} differs from what stride-proto generates; run `cargo run -p stride-cli -- vectors` and review the diff",
            path.display()
        );
    }
}

#[test]
fn cc_vectors_match_the_code() {
    check("cc", vectors::cc_files());
}

#[test]
fn wire_vectors_match_the_code() {
    check("wire", vectors::wire_files());
}

#[test]
fn wire_vectors_parse_back() {
    let (_, text) = &vectors::wire_files()[0];
    let mut n = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let hexs = v["bytes"].as_str().unwrap();
        let bytes: Vec<u8> = (0..hexs.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hexs[i..i + 2], 16).unwrap())
            .collect();
        let f = &v["fields"];
        let plen = f["payload_len"].as_u64().unwrap() as usize;
        let mut dgram = bytes.clone();
        dgram.resize(32 + plen, 0xab);
        let p = Packet::new_checked(&dgram[..]).unwrap();
        assert_eq!(u64::from(p.seq()), f["seq"].as_u64().unwrap());
        assert_eq!(u64::from(p.ack()), f["ack"].as_u64().unwrap());
        assert_eq!(u64::from(p.flags().bits()), f["flags"].as_u64().unwrap());
        assert_eq!(u64::from(p.echo_stt()), f["echo_stt"].as_u64().unwrap());
        n += 1;
    }
    assert!(n >= 30);
}

#[test]
fn cc_vectors_cover_every_branch() {
    let all: String = vectors::cc_files().into_iter().map(|(_, s)| s).collect();
    for b in [
        "\"low\"",
        "\"high\"",
        "\"grad_inc\"",
        "\"grad_dec\"",
        "\"nack\"",
        "\"timeout\"",
    ] {
        assert!(
            all.contains(&format!("\"branch\":{b}")),
            "no vector takes branch {b}"
        );
    }
}
