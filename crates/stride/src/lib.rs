//! STRIDE over UDP sockets, on tokio.
//!
//! An [`Endpoint`] owns one UDP socket and serves many connections through one driver thread;
//! [`Endpoint::connect`] and [`Endpoint::accept`] give [`Stream`]s, which implement tokio's
//! `AsyncRead` and `AsyncWrite`. See [`endpoint`] for the driver's design (batched I/O, kernel
//! receive timestamps, sub-millisecond pacing); [`blocking`] runs the core on the caller's
//! thread instead. The applications on top (file transfer, the perf harness, the relay) are
//! in the `stride-apps` crate.
//!
//! ```no_run
//! # async fn demo() -> stride::Result<()> {
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! let server = stride::Endpoint::bind("127.0.0.1:0".parse().unwrap())?;
//! let client = stride::Endpoint::client("127.0.0.1:0".parse().unwrap())?;
//! let mut s = client.connect(server.local_addr()).await?;
//! s.write_all(b"hello").await?;
//! s.shutdown().await?;
//! let mut r = server.accept().await?;
//! let mut got = Vec::new();
//! r.read_to_end(&mut got).await?;
//! # Ok(()) }
//! ```

pub mod blocking;
pub mod dscp;
pub mod endpoint;
pub mod error;
pub mod line_rate;
pub mod overrides;
pub mod sys;

pub use bytes::Bytes;
pub use dscp::{Dscp, DSCP_NAMES};
pub use endpoint::{
    host_config, max_payload_for_mtu, Endpoint, EndpointConfig, IoStats, SocketInfo, Stream,
};
pub use endpoint::{
    HOST_BURST_BYTES, HOST_BURST_NS, HOST_COMPETE_AFTER_NS, HOST_COMPETE_AI, HOST_COMPETE_HOLD_NS,
    HOST_COMPETE_MD, HOST_DELAYED_ACK_NS, HOST_FIRST_WINDOW_PACKETS, HOST_MIN_RTO_NS,
    HOST_NORM_SHIFT, HOST_RX_SHARE, HOST_SEND_BATCH_BYTES, HOST_T_HIGH_NS, HOST_T_LOW_NS,
};
pub use error::{Error, Result};
pub use line_rate::{LineRate, LineRateSource, DEFAULT_LINE_BPS};
pub use overrides::{ControllerOverrides, OverrideError};
pub use stride_proto as proto;
pub use stride_proto::{CloseReason, Config, ConnStats, EndpointStats};
