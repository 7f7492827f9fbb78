#![no_main]
//! The wire parser must return Ok or an error for any bytes, and what parses must re-emit
//! byte-identically.
use libfuzzer_sys::fuzz_target;
use stride_proto::wire::{Packet, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Packet::new_checked(data) {
        let mut b = [0u8; HEADER_LEN];
        p.header().emit(&mut b).unwrap();
        assert_eq!(&b[..], &data[..HEADER_LEN]);
        assert_eq!(p.payload().len(), usize::from(p.payload_len()));
    }
});
