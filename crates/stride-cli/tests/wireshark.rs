//! The Wireshark dissector (tools/wireshark/stride.lua) under tshark: a capture made by
//! `stride relay --pcap` of a real `send`/`recv` transfer is decoded, and every header field
//! tshark shows must equal the bytes the relay forwarded; hand-made malformed datagrams must
//! raise the dissector's expert info. Needs `tshark` (scripts/setup.sh installs it).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_stride");

fn dissector() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/stride.lua")
}

fn tshark(pcap: &Path, extra: &[&str]) -> String {
    let lua = format!("lua_script:{}", dissector().display());
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(["-X", &lua])
        .args(extra)
        .output()
        .expect("tshark not found: run scripts/setup.sh (apt package tshark)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Starts `stride ARGS` and returns it with the first address in its first stderr line (the
/// listening address of `recv` and of `relay`).
fn start(args: &[&str]) -> (Child, SocketAddr) {
    let mut c = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stride");
    let mut line = String::new();
    let mut err = BufReader::new(c.stderr.take().expect("stderr"));
    err.read_line(&mut line).expect("first line");
    // Keep draining stderr so that later lines never meet a closed pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        while err.read_line(&mut rest).is_ok_and(|n| n > 0) {
            eprint!("{rest}");
            rest.clear();
        }
    });
    let addr = line
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (c, addr)
}

fn wait(c: &mut Child, what: &str) {
    let t = Instant::now();
    while c.try_wait().expect("wait").is_none() {
        if t.elapsed() > Duration::from_secs(30) {
            let _ = c.kill();
            panic!("{what} did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A tshark field value: decimal, or hexadecimal with 0x.
fn num(s: &str) -> u64 {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

fn be(b: &[u8], at: usize, n: usize) -> u64 {
    b[at..at + n].iter().fold(0, |a, &x| a << 8 | u64::from(x))
}

#[test]
fn tshark_decodes_a_relay_capture_field_for_field() {
    let dir = std::env::temp_dir().join(format!("stride-wireshark-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("out")).expect("dir");
    let file = dir.join("f.bin");
    let content: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&file, &content).expect("write");
    let pcap = dir.join("cap.pcap");
    let out = dir.join("out");
    let (mut recv, raddr) = start(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        out.to_str().unwrap(),
        "--once",
    ]);
    let (mut relay, laddr) = start(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--to",
        &raddr.to_string(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    let st = Command::new(BIN)
        .args(["send", "--to", &laddr.to_string()])
        .arg(&file)
        .stdout(Stdio::null())
        .status()
        .expect("send");
    assert!(st.success(), "send failed");
    wait(&mut recv, "recv --once");
    // SAFETY: signals our own child process.
    unsafe { libc::kill(relay.id() as libc::pid_t, libc::SIGTERM) };
    wait(&mut relay, "relay");

    // What the relay forwarded, from the file itself.
    let bytes = std::fs::read(&pcap).expect("pcap");
    let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).expect("pcap header");
    let mut sent: Vec<Vec<u8>> = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.expect("record");
        assert_eq!(p.data[0] >> 4, 4, "IPv4 record");
        sent.push(p.data[28..].to_vec());
    }
    assert!(sent.len() >= 8, "only {} packets captured", sent.len());

    let fields = [
        "stride.version",
        "stride.flags",
        "stride.payload_len",
        "stride.dst_cid",
        "stride.src_cid",
        "stride.seq",
        "stride.ack",
        "stride.tx_ts",
        "stride.echo_stt",
        "stride.window",
        "stride.reserved",
        "stride.ce_count",
        "stride.first_offset",
    ];
    let mut args = vec!["-T", "fields", "-E", "separator=,"];
    for f in &fields {
        args.extend(["-e", f]);
    }
    let text = tshark(&pcap, &args);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows.len(),
        sent.len(),
        "tshark rows vs captured packets:\n{text}"
    );
    // (field, offset, size) in the header, spec section 3.
    let layout = [
        (0, 1),
        (1, 1),
        (2, 2),
        (4, 4),
        (8, 4),
        (12, 4),
        (16, 4),
        (20, 4),
        (24, 4),
        (28, 2),
    ];
    assert_eq!(sent[0][1], 0x01, "the capture starts with the SYN");
    let mut data = std::collections::BTreeMap::new();
    let mut offsets = 0;
    for (i, (row, d)) in rows.iter().zip(&sent).enumerate() {
        assert_eq!(row.len(), fields.len(), "packet {i}: {row:?}");
        for (k, &(at, n)) in layout.iter().enumerate() {
            assert!(!row[k].is_empty(), "packet {i}: {} not decoded", fields[k]);
            assert_eq!(num(row[k]), be(d, at, n), "packet {i}: {}", fields[k]);
        }
        // Bytes 30..32: `reserved` in version 1, `ce_count` in version 2.
        let last = if d[0] == 1 { row[10] } else { row[11] };
        assert_eq!(num(last), be(d, 30, 2), "packet {i}: bytes 30..32");
        // The first-window offset (spec §5): shown exactly for the sender's DATA and FIN
        // that carry one in echo_stt, and then equal to seq - ISN - 1.
        let from_sender = be(d, 8, 4) == be(&sent[0], 8, 4);
        if d[1] & 0x28 != 0 && d[1] & 0x01 == 0 && be(d, 24, 4) != 0 {
            assert!(
                from_sender,
                "packet {i}: echo_stt in the receiver's DATA/FIN"
            );
            let isn = be(&sent[0], 12, 4) as u32;
            let off = (be(d, 12, 4) as u32).wrapping_sub(isn.wrapping_add(1));
            assert_eq!(num(row[12]), u64::from(off), "packet {i}: first_offset");
            offsets += 1;
        } else {
            assert!(row[12].is_empty(), "packet {i}: first_offset {:?}", row[12]);
        }
        // The sender's DATA (its cid is the SYN's src_cid), keyed by offset from its ISN.
        if d[1] & 0x20 != 0 && from_sender {
            let off = (be(d, 12, 4) as u32).wrapping_sub(be(&sent[0], 12, 4) as u32);
            data.insert(off, d[32..].to_vec());
        }
    }
    // Whether any packet left before the sender heard from the receiver's connection depends
    // on timing, so this is reported, not required.
    println!("{offsets} packets with a first-window offset");
    // The file's bytes are in what the sender's DATA packets carried (between the transfer's
    // own header and trailer).
    let stream: Vec<u8> = data.into_values().flatten().collect();
    assert!(
        stream.windows(content.len()).any(|w| w == &content[..]),
        "the sender's DATA payloads ({} bytes) do not contain the file",
        stream.len()
    );
    let info = tshark(&pcap, &[]);
    for k in ["SYN", "SYN-ACK", "DATA", "FIN"] {
        assert!(info.contains(&format!("STRIDE {k} ")), "no {k} in:\n{info}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_datagrams_raise_expert_info() {
    let dir = std::env::temp_dir().join(format!("stride-wireshark-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let pcap = dir.join("bad.pcap");
    let good = {
        let mut h = vec![0u8; 32];
        h[0] = 1;
        h[1] = 0x02; // a pure ACK
        h
    };
    let mut cases: Vec<(Vec<u8>, &str)> = Vec::new();
    cases.push((good[..20].to_vec(), "Truncated"));
    let mut v = good.clone();
    v[0] = 9;
    cases.push((v, "Bad version"));
    let mut v = good.clone();
    v[1] = 0x05; // SYN|NACK
    cases.push((v, "Illegal flag combination"));
    let mut v = good.clone();
    v[1] = 0x82; // ACK|CN: legal in version 2 only
    cases.push((v, "Illegal flag combination"));
    let mut v = good.clone();
    v[3] = 10; // payload_len 10, no payload
    cases.push((v, "Bad length"));
    let mut v = good.clone();
    v[1] = 0x22; // DATA without a payload
    cases.push((v, "Bad length"));
    let mut v = good.clone();
    v[31] = 1;
    cases.push((v, "Reserved field is not 0"));
    let mut v = good.clone();
    v[0] = 2;
    v[1] = 0x82; // version 2 ACK|CN: legal, no expert info
    cases.push((v, ""));
    // A selective NACK: two (seq, len) ranges, legal.
    let mut nack = good.clone();
    nack[0] = 2;
    nack[1] = 0x06;
    nack[3] = 16;
    for (seq, len) in [(1000u32, 1440u32), (5320, 2880)] {
        nack.extend(seq.to_be_bytes());
        nack.extend(len.to_be_bytes());
    }
    cases.push((nack.clone(), ""));
    // A NACK payload that is not whole ranges.
    let mut v = nack.clone();
    v.truncate(44);
    v[3] = 12;
    cases.push((v, "Bad length"));
    let f = std::fs::File::create(&pcap).expect("pcap");
    let mut w = stride_pcap::Writer::new(f).expect("writer");
    let (a, b): (SocketAddr, SocketAddr) = (
        "127.0.0.1:40000".parse().unwrap(),
        "127.0.0.1:7000".parse().unwrap(),
    );
    for (i, (d, _)) in cases.iter().enumerate() {
        w.write_udp(i as u64, a, b, d).expect("record");
    }
    drop(w.into_inner());
    let text = tshark(
        &pcap,
        &[
            "-d",
            "udp.port==7000,stride",
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "_ws.expert.message",
        ],
    );
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), cases.len(), "{text}");
    // The selective NACK's ranges are decoded.
    let ranges = tshark(
        &pcap,
        &[
            "-d",
            "udp.port==7000,stride",
            "-Y",
            "stride.nack.range",
            "-T",
            "fields",
            "-E",
            "separator=;",
            "-e",
            "stride.nack.range.seq",
            "-e",
            "stride.nack.range.len",
        ],
    );
    // (The malformed one shows its one whole range, with the expert info above.)
    let lines: Vec<&str> = ranges.lines().collect();
    assert_eq!(lines, ["1000,5320;1440,2880", "1000;1440"], "{ranges}");
    for (i, ((_, want), got)) in cases.iter().zip(&rows).enumerate() {
        if want.is_empty() {
            assert!(
                !got.contains("stride") && got.trim().is_empty(),
                "case {i}: {got}"
            );
        } else {
            assert!(
                got.contains(want),
                "case {i}: expected {want:?}, got {got:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
