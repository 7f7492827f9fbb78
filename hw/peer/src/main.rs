//! The Rust side of the hardware interoperation test (`hw/tb/test_interop.py`).
//!
//! Two `stride-proto` endpoints, driven over stdin/stdout by the cocotb testbench with the
//! simulation's clock (the core is sans-IO: time is passed in):
//! - the **peer**, a client at 10.0.0.1:40000 that connects to the NIC, sends `BYTES` bytes
//!   of a fixed pattern (`pattern(i)`) and reads what the NIC sends back, which must be
//!   `reverse_pattern(i)` byte for byte (the program stops with an error naming the first byte
//!   that differs);
//! - the **host software** of the NIC, a listener at 10.0.0.2: it runs the handshake (cookies)
//!   for the packets the engine hands to the host, and reports the accepted connection so the
//!   testbench can install it in the engine.
//!
//! Commands, one per line (`now` in ns, datagrams in hex, the STRIDE datagram = UDP payload):
//!   `S now`        the peer connects
//!   `P now hex`    a datagram for the peer (from the NIC)
//!   `H now hex`    a datagram for the host software (from the peer)
//!   `T now`        time passes (timers)
//! After each command the program runs due timers and answers with the datagrams both endpoints
//! send now (`p hex` from the peer to the NIC, `h hex` from the host software to the peer),
//! `accepted` once the host software accepted the connection, and a closing line
//! `. unacked written next_timer received` (`next_timer` -1 when none; `received` the bytes the
//! peer has read from the NIC, all checked).
use std::io::{self, BufRead, Write};
use std::net::SocketAddr;

use stride_proto::{Config, ConnHandle, Endpoint, Event};

/// Byte `i` of the stream the peer sends (the testbench computes the same).
fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(7) ^ (i >> 8) ^ (i >> 16)) as u8
}

/// Byte `i` of the stream the NIC sends to the peer (the testbench writes the same).
fn reverse_pattern(i: u64) -> u8 {
    (i.wrapping_mul(13) ^ (i >> 9) ^ 0xA5) as u8
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err(format!("odd-length hex datagram ({} digits)", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("bad hex at {i}: {e}")))
        .collect()
}

struct Peer {
    peer: Endpoint,
    host: Endpoint,
    conn: Option<ConnHandle>,
    written: u64,
    total: u64,
    accepted: bool,
    received: u64,
}

const PEER_ADDR: &str = "10.0.0.1:40000";
const NIC_ADDR: &str = "10.0.0.2:21332";

impl Peer {
    fn fill(&mut self) {
        let Some(h) = self.conn else { return };
        while self.written < self.total {
            let n = (self.total - self.written).min(16384) as usize;
            let chunk: Vec<u8> = (0..n as u64).map(|k| pattern(self.written + k)).collect();
            match self.peer.write(h, &chunk) {
                Ok(0) | Err(_) => break,
                Ok(w) => self.written += w as u64,
            }
        }
    }

    /// Reads everything the NIC delivered so far and checks it.
    fn drain(&mut self) -> Result<(), String> {
        let Some(h) = self.conn else { return Ok(()) };
        let mut buf = vec![0u8; 65536];
        loop {
            let n = self.peer.read(h, &mut buf).unwrap_or(0);
            if n == 0 {
                return Ok(());
            }
            for (k, &b) in buf[..n].iter().enumerate() {
                let i = self.received + k as u64;
                if b != reverse_pattern(i) {
                    return Err(format!(
                        "byte {i} from the NIC is {b:#04x}, expected {:#04x}",
                        reverse_pattern(i)
                    ));
                }
            }
            self.received += n as u64;
        }
    }

    fn run(&mut self, now: u64, out: &mut impl Write) -> Result<(), String> {
        self.drain()?;
        self.emit(now, out).map_err(|e| e.to_string())
    }

    fn emit(&mut self, now: u64, out: &mut impl Write) -> io::Result<()> {
        for ep in [&mut self.peer, &mut self.host] {
            while ep.next_timer().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
            }
        }
        while let Some((_, ev)) = self.host.poll_event() {
            if ev == Event::Accepted {
                self.accepted = true;
                writeln!(out, "accepted")?;
            }
        }
        while let Some((_, ev)) = self.peer.poll_event() {
            if matches!(ev, Event::Connected | Event::Writable) {
                self.fill();
            }
        }
        let mut buf = vec![0u8; 2048];
        while let Some(t) = self.peer.poll_transmit(now, &mut buf) {
            writeln!(out, "p {}", hex(&buf[..t.len]))?;
        }
        while let Some(t) = self.host.poll_transmit(now, &mut buf) {
            if !self.accepted {
                writeln!(out, "h {}", hex(&buf[..t.len]))?;
            }
        }
        let unacked = self
            .conn
            .and_then(|h| self.peer.conn(h))
            .map_or(0, |c| c.unacked());
        let next = [self.peer.next_timer(), self.host.next_timer()]
            .into_iter()
            .flatten()
            .min()
            .map_or(-1, |t| t as i64);
        writeln!(out, ". {unacked} {} {next} {}", self.written, self.received)?;
        out.flush()
    }
}

fn main() -> Result<(), String> {
    let total: u64 = std::env::var("BYTES")
        .unwrap_or_else(|_| "1048576".into())
        .parse()
        .map_err(|e| format!("BYTES: {e}"))?;
    let cfg = Config::default();
    let mut host = Endpoint::new(cfg.clone(), [7; 16], 2);
    host.listen(true);
    let mut p = Peer {
        peer: Endpoint::new(cfg, [3; 16], 1),
        host,
        conn: None,
        written: 0,
        total,
        accepted: false,
        received: 0,
    };
    let peer_addr: SocketAddr = PEER_ADDR.parse().expect("address");
    let nic_addr: SocketAddr = NIC_ADDR.parse().expect("address");
    let stdin = io::stdin();
    let mut out = io::BufWriter::new(io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let mut it = line.split_whitespace();
        let cmd = it.next().unwrap_or("");
        let now: u64 = it
            .next()
            .ok_or_else(|| format!("command {cmd:?} without time"))?
            .parse()
            .map_err(|e| format!("time: {e}"))?;
        match cmd {
            "S" => {
                let h = p
                    .peer
                    .connect(now, nic_addr)
                    .map_err(|e| format!("connect: {e:?}"))?;
                p.conn = Some(h);
            }
            "P" => p
                .peer
                .handle(now, nic_addr, &unhex(it.next().unwrap_or(""))?),
            "H" => p
                .host
                .handle(now, peer_addr, &unhex(it.next().unwrap_or(""))?),
            "T" => {}
            _ => return Err(format!("unknown command {cmd:?}")),
        }
        p.run(now, &mut out)?;
    }
    Ok(())
}
