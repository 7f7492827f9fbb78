//! `stride sim run --pcap PORT`: a standard pcap of the STRIDE packets one port accepted.
use std::process::Command;

fn quick() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/quick.toml")
}

#[test]
fn sim_pcap_holds_well_formed_stride_datagrams_of_the_port() {
    let out = std::env::temp_dir().join(format!("stride-sim-pcap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(quick())
        .args([
            "--set",
            "transports=stride",
            "--set",
            "workload.flows=20",
            "--json",
        ])
        // Port 1 is leaf0 -> host 0, which every flow to host 0 crosses whatever its ECMP
        // path. (Port 20, leaf1 -> spine0, held DATA only while the connection ids, which
        // STRIDE hashes into its ECMP key, happened to route some flows through it.)
        .args(["--pcap", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(out.join("stride-port1.pcap")).expect("pcap written");
    let mut r = pcap_file::pcap::PcapReader::new(&bytes[..]).expect("pcap header");
    let (mut n, mut last_ts, mut data) = (0, std::time::Duration::ZERO, 0);
    while let Some(p) = r.next_packet() {
        let p = p.expect("record");
        let d = &p.data[..];
        assert_eq!(d[0], 0x45, "IPv4");
        assert_eq!(d[9], 17, "UDP");
        let s = &d[28..];
        assert!(s.len() >= 32);
        assert!(s[0] == 1 || s[0] == 2, "STRIDE version {}", s[0]);
        assert_eq!(usize::from(u16::from_be_bytes([s[2], s[3]])), s.len() - 32);
        assert!(p.timestamp >= last_ts, "records in time order");
        last_ts = p.timestamp;
        n += 1;
        data += usize::from(s[1] & 0x20 != 0);
    }
    assert!(n > 10 && data > 0, "{n} packets, {data} DATA");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sim_pcap_refuses_a_port_the_topology_lacks_and_a_missing_out() {
    let dir = std::env::temp_dir().join(format!("stride-sim-pcap-bad-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(quick())
        .args(["--set", "workload.flows=5", "--pcap", "100000", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--pcap 100000"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(quick())
        .args(["--pcap", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("--out"), "{err}");
}
