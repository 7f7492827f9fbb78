//! Applications on STRIDE over UDP ([`stride`]), apart from the transport itself: [`xfer`] is
//! the verified file transfer of `stride send`/`stride recv`, [`perf`] the throughput and
//! round-trip harness of `stride perf`, and [`relay`] a userspace bottleneck for tests and
//! demonstrations (`stride relay`), and [`demo`] the loopback demonstration of `stride demo`
//! (receiver, relay and sender in one process); [`stop`] is how the commands that run until
//! stopped handle SIGINT and SIGTERM.

pub mod demo;
pub mod perf;
pub mod relay;
pub mod stop;
pub mod xfer;
