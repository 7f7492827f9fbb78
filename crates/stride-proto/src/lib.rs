//! Sans-IO core of STRIDE.
#![forbid(unsafe_code)]
