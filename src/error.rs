//! The one error type of the library: a kind, a message and an optional
//! source.
//!
//! [`ErrorKind`] is the status table of the library, written once here: each
//! kind's `#[repr(i32)]` value is its C `bmrm_status` (the C enum in
//! `src/ffi/types.rs` is checked against it at compile time), its label
//! starts the [`Error`]'s message, and its description is what
//! `bmrm_status_string` returns. The values 1 to 8 are the C ABI's promise
//! (docs/c-api.md) and never change; new kinds are added at the end.

use std::ffi::CStr;
use std::fmt;
use std::sync::Arc;

/// A `const` C string of a literal (a compile error if it holds a NUL).
macro_rules! c_text {
    ($text:literal) => {{
        const TEXT: &CStr = match CStr::from_bytes_with_nul(concat!($text, "\0").as_bytes()) {
            Ok(text) => text,
            Err(_) => panic!("a status text holds a NUL"),
        };
        TEXT
    }};
}

/// Writes the kinds, their constructors on [`Error`] and their texts from one
/// table, so that a new kind is one row.
macro_rules! error_kinds {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident = $code:literal, $constructor:ident, $label:literal, $description:literal;
    )*) => {
        /// What went wrong: one kind per C status (its `#[repr(i32)]` value
        /// is the `bmrm_status` a C caller receives).
        #[repr(i32)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($(#[doc = $doc])* $kind = $code,)*
        }

        impl ErrorKind {
            /// Every kind, in the order of their status values.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind),*];

            /// The kind of a C status value (`None` for `BMRM_OK` and for
            /// values no kind has).
            pub fn from_code(code: i32) -> Option<ErrorKind> {
                match code {
                    $($code => Some(ErrorKind::$kind),)*
                    _ => None,
                }
            }

            /// The start of an error's message, e.g. "invalid argument".
            pub fn label(self) -> &'static str {
                match self {
                    $(ErrorKind::$kind => $label,)*
                }
            }

            /// The status's description for `bmrm_status_string`, e.g.
            /// "no oracle for the algorithm".
            pub fn description(self) -> &'static CStr {
                match self {
                    $(ErrorKind::$kind => c_text!($description),)*
                }
            }
        }

        impl Error {
            $(
                #[doc = concat!("An error of kind [`ErrorKind::", stringify!($kind), "`].")]
                pub fn $constructor(message: impl Into<String>) -> Self {
                    Error::new(ErrorKind::$kind, message)
                }
            )*
        }
    };
}

error_kinds! {
    /// A required pointer argument was NULL (only produced by the C ABI).
    NullArgument = 1, null_argument, "null argument", "null argument";
    /// A setting or argument is out of its domain (lambda <= 0, dim == 0,
    /// an unknown enum value, malformed input data, ...).
    InvalidArgument = 2, invalid_argument, "invalid argument", "invalid argument";
    /// Two sizes that must agree do not.
    DimensionMismatch = 3, dimension_mismatch, "dimension mismatch", "dimension mismatch";
    /// The chosen algorithm needs an oracle level the problem does not provide.
    NoOracle = 4, no_oracle, "no oracle", "no oracle for the algorithm";
    /// A user callback reported failure; the message names where.
    OracleFailed = 5, oracle_failed, "oracle failed", "oracle failed";
    /// NaN or Inf from a callback or inside the solver; the message names where.
    NonFinite = 6, non_finite, "non-finite value", "non-finite value";
    /// An allocation could not be made.
    OutOfMemory = 7, out_of_memory, "out of memory", "out of memory";
    /// A caught panic or a broken invariant: a bug in the library.
    Internal = 8, internal, "internal error", "internal error";
    /// Reading or writing a file failed (the source is the `std::io::Error`).
    Io = 9, io, "I/O error", "I/O error";
    /// An MPI rank died or stopped answering; that communicator cannot be
    /// used for another run (end the job).
    RankLost = 10, rank_lost, "rank lost", "an MPI rank was lost";
}

/// Everything that can make a call fail: a kind (one per C status), a message
/// naming what failed, and the error that caused it when there is one.
///
/// Its `Display` is `"<kind label>: <message>"`, what `bmrm_last_error()`
/// returns after the function's name. Two errors are equal when their kinds
/// and messages are (the source is not compared).
#[derive(Debug, Clone)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// What failed and where, e.g. "lambda = 0 must be positive".
    pub message: String,
    /// The error this one was made from (e.g. the `std::io::Error` of an
    /// [`ErrorKind::Io`]); shared so that errors stay cheap to clone.
    pub source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// An error of `kind` with `message` and no source.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error with `source` as the error that caused it.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What failed and where (without the kind's label).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The `bmrm_status` value of this error (never 0, which is `BMRM_OK`).
    pub fn status_code(&self) -> i32 {
        self.kind as i32
    }

    /// An [`ErrorKind::Io`] (or [`ErrorKind::OutOfMemory`]) from `e`, with
    /// the message `"{what}: {e}"` and `e` as its source, e.g.
    /// `Error::from_io("libsvm file a.svm: cannot open", e)`.
    pub fn from_io(what: impl fmt::Display, e: std::io::Error) -> Self {
        let message = format!("{what}: {e}");
        let mut error = Error::from(e);
        error.message = message;
        error
    }

    /// A failed oracle call with the given message (what a user's oracle returns).
    pub fn oracle(message: impl Into<String>) -> Self {
        Error::oracle_failed(message)
    }

    /// The same error with `context` appended to its message, so that an
    /// oracle's own message gains the solver's "at iteration 7, part 3".
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{} {context}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.label(), self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}

impl From<std::io::Error> for Error {
    /// An [`ErrorKind::Io`] whose message is the I/O error's; callers that
    /// know the file add it with [`Error::context`].
    fn from(e: std::io::Error) -> Self {
        let kind = if e.kind() == std::io::ErrorKind::OutOfMemory {
            ErrorKind::OutOfMemory
        } else {
            ErrorKind::Io
        };
        Error::new(kind, e.to_string()).with_source(e)
    }
}

impl From<std::collections::TryReserveError> for Error {
    /// An [`ErrorKind::OutOfMemory`] (a failed `try_reserve`).
    fn from(e: std::collections::TryReserveError) -> Self {
        Error::out_of_memory(e.to_string()).with_source(e)
    }
}

/// The library's `Result`, with [`Error`] as the error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_kinds_are_numbered_from_one_without_gaps() {
        for (i, &kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(kind as i32, i as i32 + 1);
            assert_eq!(ErrorKind::from_code(kind as i32), Some(kind));
            assert!(!kind.description().to_bytes().is_empty());
        }
        assert_eq!(ErrorKind::from_code(0), None);
        assert_eq!(ErrorKind::from_code(ErrorKind::ALL.len() as i32 + 1), None);
    }

    #[test]
    fn io_errors_keep_their_source_and_context_extends_the_message() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = Error::from(io).context("(reading a.txt)");
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.status_code(), 9);
        assert_eq!(e.to_string(), "I/O error: no such file (reading a.txt)");
        let source = std::error::Error::source(&e).expect("the io::Error");
        assert_eq!(source.to_string(), "no such file");
        assert_eq!(Error::oracle("x"), Error::oracle_failed("x"));
        assert_ne!(Error::oracle("x"), Error::internal("x"));
    }
}
