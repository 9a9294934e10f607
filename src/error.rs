//! The one error type of the library and its single mapping to the C status codes.

use thiserror::Error;

/// Everything that can make a call fail. Each variant maps to exactly one
/// `bmrm_status` value (see [`Error::status_code`]); the message is what
/// `bmrm_last_error()` returns.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// A required pointer argument was NULL (only produced by the C ABI).
    #[error("null argument: {0}")]
    NullArgument(String),
    /// A setting or argument is out of its domain (lambda <= 0, dim == 0, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Two sizes that must agree do not.
    #[error("dimension mismatch: {0}")]
    DimensionMismatch(String),
    /// The chosen algorithm needs an oracle level the problem does not provide.
    #[error("no oracle: {0}")]
    NoOracle(String),
    /// A user callback reported failure; the message names where.
    #[error("oracle failed: {0}")]
    OracleFailed(String),
    /// NaN or Inf from a callback or inside the solver; the message names where.
    #[error("non-finite value: {0}")]
    NonFinite(String),
    /// An allocation could not be made.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A caught panic or a broken invariant.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The `bmrm_status` value of this error (never 0, which is `BMRM_OK`).
    pub fn status_code(&self) -> i32 {
        match self {
            Error::NullArgument(_) => 1,
            Error::InvalidArgument(_) => 2,
            Error::DimensionMismatch(_) => 3,
            Error::NoOracle(_) => 4,
            Error::OracleFailed(_) => 5,
            Error::NonFinite(_) => 6,
            Error::OutOfMemory(_) => 7,
            Error::Internal(_) => 8,
        }
    }
}

impl Error {
    /// The error of a status code and a message: the inverse of
    /// [`Error::status_code`] and [`Error::message`] (an unknown code is
    /// `Internal`), for errors that cross a process boundary (MPI).
    pub fn from_status(code: i32, message: String) -> Self {
        match code {
            1 => Error::NullArgument(message),
            2 => Error::InvalidArgument(message),
            3 => Error::DimensionMismatch(message),
            4 => Error::NoOracle(message),
            5 => Error::OracleFailed(message),
            6 => Error::NonFinite(message),
            7 => Error::OutOfMemory(message),
            _ => Error::Internal(message),
        }
    }

    /// The message, without the kind's prefix that `Display` adds.
    pub fn message(&self) -> &str {
        match self {
            Error::NullArgument(m)
            | Error::InvalidArgument(m)
            | Error::DimensionMismatch(m)
            | Error::NoOracle(m)
            | Error::OracleFailed(m)
            | Error::NonFinite(m)
            | Error::OutOfMemory(m)
            | Error::Internal(m) => m,
        }
    }
}

impl Error {
    /// A failed oracle call with the given message (what a user's oracle returns).
    pub fn oracle(msg: impl Into<String>) -> Self {
        Error::OracleFailed(msg.into())
    }

    /// The same error with `context` appended to its message, so that an
    /// oracle's own message gains the solver's "at iteration 7, part 3".
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        let add = |m: String| format!("{m} {context}");
        match self {
            Error::NullArgument(m) => Error::NullArgument(add(m)),
            Error::InvalidArgument(m) => Error::InvalidArgument(add(m)),
            Error::DimensionMismatch(m) => Error::DimensionMismatch(add(m)),
            Error::NoOracle(m) => Error::NoOracle(add(m)),
            Error::OracleFailed(m) => Error::OracleFailed(add(m)),
            Error::NonFinite(m) => Error::NonFinite(add(m)),
            Error::OutOfMemory(m) => Error::OutOfMemory(add(m)),
            Error::Internal(m) => Error::Internal(add(m)),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
