//! `--dscp` of `send`, `recv` and `perf` (both roles, async and blocking): the datagrams each
//! sends carry the codepoint with ECT(0) below it, read at a plain socket that asks for the TOS
//! byte (`IP_RECVTOS`); bad values are refused naming the grammar.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use stride::sys::{self, RxBatch};

const BIN: &str = env!("CARGO_BIN_EXE_stride");

/// A loopback socket that reports each datagram's TOS byte.
fn tos_socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_nonblocking(true).unwrap();
    assert!(sys::enable_recv_tos(s.as_raw_fd(), false));
    s
}

/// The TOS byte of the first datagram `s` receives within 10 s.
fn first_tos(s: &UdpSocket) -> u8 {
    let mut batch = RxBatch::with_room(sys::GRO_ROOM);
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if let Ok(n) = batch.recv(s.as_raw_fd()) {
            assert!(n > 0);
            return batch.got[0].tos;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("nothing arrived");
}

/// Runs `stride ARGS` towards a silent socket (nobody answers) and returns the TOS byte of
/// the first datagram (the handshake) it sent there; the command is stopped afterwards.
fn handshake_tos(args: &[&str]) -> u8 {
    let silent = tos_socket();
    let to = silent.local_addr().unwrap().to_string();
    let mut child = Command::new(BIN)
        .args(args)
        .args(["--to", &to])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let tos = first_tos(&silent);
    let _ = child.kill();
    let _ = child.wait();
    tos
}

#[test]
fn clients_mark_their_datagrams() {
    let file = std::env::temp_dir().join(format!("stride-dscp-{}", std::process::id()));
    std::fs::write(&file, b"x").unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(handshake_tos(&["send", "--dscp", "af41", f]), 0x8a);
    assert_eq!(
        handshake_tos(&["send", f]),
        sys::ECN_ECT0,
        "unmarked: ECT(0)"
    );
    assert_eq!(
        handshake_tos(&["perf", "client", "--dscp", "EF", "--rr", "1"]),
        0xba
    );
    let blocking = ["perf", "client", "--blocking", "--dscp", "40", "--rr", "1"];
    assert_eq!(handshake_tos(&blocking), 0xa2);
    let _ = std::fs::remove_file(&file);
}

/// A SYN from a raw socket to `server`; the TOS byte of the server's answer (its SYN-ACK).
fn answer_tos(server: SocketAddr) -> u8 {
    let raw = tos_socket();
    let mut core = stride::proto::Endpoint::new(stride::host_config(1_000_000_000), [7; 16], 1);
    core.connect(0, server).unwrap();
    let mut buf = vec![0u8; 2048];
    let t = core.poll_transmit(0, &mut buf).expect("a SYN");
    raw.send_to(&buf[..t.len], server).unwrap();
    first_tos(&raw)
}

/// Starts `stride ARGS` and returns it with the address on its first stderr line.
fn server(args: &[&str]) -> (std::process::Child, SocketAddr) {
    use std::io::BufRead;
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addr)
}

#[test]
fn servers_mark_their_answers() {
    let dir = std::env::temp_dir().join(format!("stride-dscp-recv-{}", std::process::id()));
    let out = dir.to_str().unwrap();
    let listen = ["--listen", "127.0.0.1:0"];
    let cases: [(Vec<&str>, u8); 3] = [
        (vec!["recv", "--out", out, "--dscp", "cs1"], 0x22),
        (vec!["perf", "server", "--dscp", "af41"], 0x8a),
        (vec!["perf", "server", "--blocking", "--dscp", "af41"], 0x8a),
    ];
    for (args, want) in cases {
        let (mut child, at) = server(&[&args[..], &listen].concat());
        let got = answer_tos(at);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(got, want, "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_codepoints_are_refused_naming_the_grammar() {
    for (args, want) in [
        (
            vec!["send", "--to", "127.0.0.1:9", "--dscp", "64", "f"],
            "0..=63",
        ),
        (
            vec![
                "recv",
                "--listen",
                "127.0.0.1:0",
                "--out",
                "/nonexistent",
                "--dscp",
                "af44",
            ],
            "af11..af43",
        ),
        (
            vec![
                "perf",
                "client",
                "--to",
                "127.0.0.1:9",
                "--rr",
                "1",
                "--dscp",
                "x",
            ],
            "not a DSCP",
        ),
        (
            vec![
                "perf",
                "client",
                "--to",
                "127.0.0.1:9",
                "--rr",
                "1",
                "--tcp",
                "--dscp",
                "ef",
            ],
            "cannot be used with",
        ),
    ] {
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(want) && err.contains("--dscp"),
            "{args:?}: {err}"
        );
    }
}
