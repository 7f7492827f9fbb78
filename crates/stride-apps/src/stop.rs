//! Stopping a command that runs until it is stopped (`stride recv`, `stride perf server`,
//! `stride relay`): SIGINT and SIGTERM handlers installed by the command itself, so that it
//! stops cleanly (its connections reset, its temporary files removed, its final counters
//! printed) even when a script started it in the background, where SIGINT is inherited as
//! ignored and the default action never comes.
//!
//! The exit status after such a stop is the command's choice ([`Stop::status`]): 0 when being
//! stopped is the command's normal end (a server's, a relay's), 128 + the signal's number
//! (130, 143, as a shell reports a process the signal killed) when the stop cut a job short
//! (`stride recv --once` before its file arrived).

use std::future::Future;
use std::io;

/// The signal that asked a command to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT (Ctrl-C, `kill -INT`).
    Interrupt,
    /// SIGTERM (`kill`, a service manager).
    Terminate,
}

impl Stop {
    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// 128 + the signal's number (130 for SIGINT, 143 for SIGTERM): the status of a command
    /// whose job the stop cut short.
    pub fn status(self) -> i32 {
        128 + match self {
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
        }
    }
}

/// Installs the SIGINT and SIGTERM handlers now, on the current tokio runtime (which needs its
/// I/O driver), replacing the inherited dispositions (SIGINT ignored included), and returns a
/// future that resolves at the first of them. Call it before announcing readiness, so that a
/// signal sent right after the announcement is not lost.
pub fn stop_signals() -> io::Result<impl Future<Output = Stop> + Send + 'static> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => Stop::Interrupt,
            _ = term.recv() => Stop::Terminate,
        }
    })
}

/// For blocking code: installs the handlers now (as [`stop_signals`]) and calls `on_stop` on a
/// thread of its own at the first signal; the caller's thread goes on with its work.
pub fn on_stop_signal(on_stop: impl FnOnce(Stop) + Send + 'static) -> io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let stop = {
        let _in = rt.enter();
        stop_signals()?
    };
    std::thread::Builder::new()
        .name("stop-signals".into())
        .spawn(move || on_stop(rt.block_on(stop)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_the_shells() {
        assert_eq!(Stop::Interrupt.status(), 130);
        assert_eq!(Stop::Terminate.status(), 143);
        assert_eq!(Stop::Terminate.name(), "SIGTERM");
    }
}
