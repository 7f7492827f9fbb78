//! Typed errors of the UDP transport.

use stride_proto::CloseReason;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A socket call failed.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// The handshake got no answer (or the peer stopped answering): nobody is listening there.
    #[error("peer unreachable (no answer)")]
    Unreachable,
    /// The peer refused the handshake or reset the connection.
    #[error("connection reset by peer")]
    Reset,
    /// Nothing was received for the idle timeout.
    #[error("connection idle timeout")]
    IdleTimeout,
    /// This side aborted the connection.
    #[error("connection aborted locally")]
    Aborted,
    /// The endpoint holds as many connections as it may.
    #[error("too many connections")]
    TooManyConnections,
    /// The endpoint's driver has stopped.
    #[error("endpoint closed")]
    EndpointClosed,
    /// `connect` did not complete in the allotted time.
    #[error("peer unreachable (no answer within {0:?})")]
    ConnectTimeout(std::time::Duration),
}

impl Error {
    /// The error for a connection that ended for `reason` (None for a graceful end).
    pub fn from_close(reason: CloseReason) -> Option<Error> {
        match reason {
            CloseReason::Graceful => None,
            CloseReason::Reset => Some(Error::Reset),
            CloseReason::TimedOut => Some(Error::Unreachable),
            CloseReason::IdleTimeout => Some(Error::IdleTimeout),
            CloseReason::Aborted => Some(Error::Aborted),
        }
    }

    /// As an `std::io::Error` (for `AsyncRead`/`AsyncWrite`), keeping this error as the source
    /// so callers can downcast it back.
    pub fn into_io(self) -> std::io::Error {
        use std::io::ErrorKind as K;
        let kind = match &self {
            Error::Io(e) => e.kind(),
            Error::Unreachable | Error::ConnectTimeout(_) => K::TimedOut,
            Error::Reset => K::ConnectionReset,
            Error::IdleTimeout => K::TimedOut,
            Error::Aborted => K::ConnectionAborted,
            Error::TooManyConnections => K::Other,
            Error::EndpointClosed => K::NotConnected,
        };
        if let Error::Io(e) = self {
            return e;
        }
        std::io::Error::new(kind, self)
    }

    /// Recovers a transport error from an `std::io::Error` made by [`Error::into_io`].
    pub fn from_io_ref(e: &std::io::Error) -> Option<&Error> {
        e.get_ref().and_then(|i| i.downcast_ref::<Error>())
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
