//! A new host controller is one file and one registry line: this file is the whole of one
//! (an additive-increase, multiplicative-decrease rate controller with two parameters), and
//! the `register` call is its registry line. Registered, it is known by name, its parameters
//! are set by name in the unit grammar and listed with their declarations, and it moves data.

use stride_proto::cc::{self, AckSample, CcConfig, Controller, Registered, Signals};
use stride_proto::testkit::{transfer, Link};

stride_proto::controller_params! {
    /// Parameters of the example controller.
    pub struct ExampleParams for |_p| "example-aimd", (line) {
        /// Additive increase per ACK.
        step: u32 [Rate] = (line >> 7).max(1);
        /// A NACK or a timeout cuts `rate >> md_shift`. 1..=31.
        md_shift: u8 [Shift] = 1;
        /// Highest rate (the line rate).
        rate_max: u32 [Rate] = line;
    }
    build: |p, _now| Example { p, rate: p.rate_max >> 2 }
}

impl ExampleParams {
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.md_shift == 0 || self.md_shift > 31 {
            return Err(("md_shift", "must be in 1..=31"));
        }
        Ok(())
    }
}

struct Example {
    p: ExampleParams,
    rate: u32,
}

impl Controller for Example {
    fn on_ack(&mut self, _now: u64, _s: &AckSample) {
        self.rate = self.rate.saturating_add(self.p.step).min(self.p.rate_max);
    }
    fn on_nack(&mut self, _now: u64) {
        self.rate = (self.rate - (self.rate >> self.p.md_shift)).max(1);
    }
    fn on_timeout(&mut self, now: u64) {
        self.on_nack(now);
    }
    fn rate(&self) -> u32 {
        self.rate
    }
}

static EXAMPLE: Registered = Registered {
    name: "example-aimd",
    about: "an example AIMD rate controller",
    needs: Signals::NONE,
    rdma_nic: false,
    listed: false,
    make: |line| CcConfig::new(ExampleParams::for_line_rate(line)),
    fit: None,
};

#[test]
fn a_controller_in_one_file_is_known_by_name_with_its_parameters() {
    cc::register(&EXAMPLE).unwrap();
    assert!(cc::register(&EXAMPLE).is_err(), "a name registers once");
    assert!(cc::names().contains(&"example-aimd"));
    let line = cc::rate_from_gbps(1.0);
    let mut c = CcConfig::by_name("example-aimd", line).unwrap();
    c.set("step", "5mbit").unwrap();
    c.set("md_shift", "2").unwrap();
    let p = c.params_ref::<ExampleParams>().unwrap();
    assert_eq!((p.step, p.md_shift), (cc::rate_from_gbps(0.005), 2));
    let e = c.set("md_shfit", "2").unwrap_err();
    assert!(e.contains("step, md_shift, rate_max"), "{e}");
    c.set("md_shift", "0").unwrap();
    assert_eq!(c.validate().unwrap_err().0, "md_shift");
    c.set("md_shift", "1").unwrap();
    // The declaration is the documentation.
    let specs = c.specs();
    assert_eq!(specs[0].name, "step");
    assert!(specs[0].doc.contains("Additive increase"));
    assert!(cc::params::markdown_table(1.0).contains("### `example-aimd`"));
    // It moves data through a lossy link.
    let mut cfg = stride_proto::Config::for_line_rate_gbps(1.0);
    cfg.cc = c;
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let link = Link {
        delay_ns: 10_000,
        loss_ppm: 5_000,
        reorder_ppm: 0,
        reorder_ns: 0,
        dup_ppm: 0,
    };
    let out = transfer(cfg, link, 7, &data, &[], 5_000_000_000);
    assert_eq!(out.at_server, data);
}
