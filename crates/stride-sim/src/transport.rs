//! The transport registry: every transport the simulator runs, by name. Scenario `transports`,
//! `stride sim compare --cc` and the validation of both read this one list, so a new transport
//! is one module that defines a [`Transport`] and one line in [`TRANSPORTS`].

use crate::engine::HostStack;
use crate::scenario::{Scenario, ScenarioError};
use crate::stride::StrideHost;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Host stacks for `hosts` hosts of a scenario (an error names the bad scenario field).
pub type Build = fn(&Scenario, u32) -> Result<Vec<Box<dyn HostStack>>, ScenarioError>;

/// One registered transport.
#[derive(Clone, Copy)]
pub struct Transport {
    /// Name in scenario files and on the command line.
    pub name: &'static str,
    /// One line for help texts.
    pub about: &'static str,
    /// Builds the host stacks; called with 0 hosts it only validates the parameters.
    pub build: Build,
}

/// Every transport, in the order tables list them.
pub const TRANSPORTS: &[Transport] = &[
    STRIDE,
    crate::tcp::dctcp::TRANSPORT,
    crate::tcp::vegas::TRANSPORT,
    crate::tcp::newreno::TRANSPORT,
    crate::tcp::aimd::TRANSPORT,
];

/// The transport called `name`.
pub fn find(name: &str) -> Option<&'static Transport> {
    TRANSPORTS.iter().find(|t| t.name == name)
}

/// Every registered name, in table order.
pub fn names() -> Vec<&'static str> {
    TRANSPORTS.iter().map(|t| t.name).collect()
}

/// STRIDE: one unmodified `stride_proto::Endpoint` per host, configured by `[stride]`.
pub const STRIDE: Transport = Transport {
    name: "stride",
    about: "STRIDE (stride-proto's endpoint, unmodified)",
    build: |sc, n| {
        let cfg = sc.stride_config()?;
        let reg = Rc::new(RefCell::new(HashMap::new()));
        Ok((0..n)
            .map(|i| {
                Box::new(StrideHost::new(i, cfg.clone(), sc.seed, reg.clone()))
                    as Box<dyn HostStack>
            })
            .collect())
    },
};
