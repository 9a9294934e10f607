#!/usr/bin/env python3
"""Rewrites the old enum-variant forms of `bmrm::Error` into the kind + message form.

`Error` used to be an enum of one `String` per C status
(`Error::InvalidArgument(format!(..))`); it is now a struct with a `kind`
(`ErrorKind`, one per C status), a `message` and an optional `source`. This
script rewrites every `.rs` file of the repository (not `target/`, not
`src/error.rs`) mechanically and idempotently, so it can be re-run after
merging branches that still write the old forms:

  construction  Error::InvalidArgument(x)     -> Error::invalid_argument(x)
  as a function .map_err(Error::NonFinite)    -> .map_err(Error::non_finite)
  literals      Error::internal("x".into())  -> Error::internal("x")   (also `msg.into()`)
  patterns      Error::NoOracle(_)            -> Error { kind: <k>::NoOracle, .. }
                Error::OracleFailed(m) if ..  -> Error { kind: <k>::OracleFailed, message: m, .. } if ..

where <k> is `crate::ErrorKind` inside the library and `bmrm::ErrorKind` in
tests, benches, examples and the binaries. A variant with a binding is taken
as a pattern when the next token after its closing parentheses is `=>`, `if`
or `|`; with `_` it always is. `Error::oracle`, `Error::context` and
`Error::status_code` keep working and are left alone. Run `cargo fmt --all`
afterwards.

Usage: python3 scripts/rewrite_errors.py [ROOT]   (default: the repository)
"""

import pathlib
import re
import sys

KINDS = {
    "NullArgument": "null_argument",
    "InvalidArgument": "invalid_argument",
    "DimensionMismatch": "dimension_mismatch",
    "NoOracle": "no_oracle",
    "OracleFailed": "oracle_failed",
    "NonFinite": "non_finite",
    "OutOfMemory": "out_of_memory",
    "Internal": "internal",
}
KIND = "|".join(KINDS)
# `Error::Kind(` preceded by an optional path (`bmrm::`, `crate::error::`),
# not part of a longer name (`TryLockError::`).
PREFIX = r"(?<![A-Za-z0-9_])((?:[A-Za-z_][A-Za-z0-9_]*::)*)Error::(" + KIND + r")"
PATTERN_UNDERSCORE = re.compile(PREFIX + r"\(_\)")
PATTERN_BINDING = re.compile(
    PREFIX + r"\(([a-z_][a-z0-9_]*)\)(?=\)*\s*(?:=>|if\b|\|))"
)
CALL_OR_PATH = re.compile(PREFIX + r"(?![A-Za-z0-9_])")
# The constructors take `impl Into<String>`, so `"text".into()` as their
# argument would be ambiguous: the literal (or the variable) is passed as it is.
LITERAL_INTO = re.compile(
    r"(?<![A-Za-z0-9_])(Error::(?:" + "|".join(KINDS.values())
    + r")\(\s*(?:\"(?:[^\"\\]|\\.)*\"|[a-z_][a-z0-9_]*))\s*\.into\(\)",
    re.S,
)


def kind_path(prefix: str, in_library: bool) -> str:
    """Where `ErrorKind` is reachable from the `Error` path as written."""
    if prefix.startswith("bmrm::") or prefix == "bmrm::":
        return "bmrm::ErrorKind"
    if prefix.startswith("crate::"):
        return "crate::ErrorKind"
    return "crate::ErrorKind" if in_library else "bmrm::ErrorKind"


def rewrite(text: str, in_library: bool) -> str:
    def underscore(m: re.Match) -> str:
        prefix, kind = m.group(1), m.group(2)
        return f"{prefix}Error {{ kind: {kind_path(prefix, in_library)}::{kind}, .. }}"

    def binding(m: re.Match) -> str:
        prefix, kind, name = m.group(1), m.group(2), m.group(3)
        return (
            f"{prefix}Error {{ kind: {kind_path(prefix, in_library)}::{kind}, "
            f"message: {name}, .. }}"
        )

    def call(m: re.Match) -> str:
        return f"{m.group(1)}Error::{KINDS[m.group(2)]}"

    text = PATTERN_UNDERSCORE.sub(underscore, text)
    text = PATTERN_BINDING.sub(binding, text)
    text = CALL_OR_PATH.sub(call, text)
    return LITERAL_INTO.sub(lambda m: m.group(1), text)


def main() -> None:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    changed = 0
    for path in sorted(root.rglob("*.rs")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("target/") or "/target/" in rel or rel == "src/error.rs":
            continue
        in_library = rel.startswith("src/") and not rel.startswith("src/bin/")
        old = path.read_text()
        new = rewrite(old, in_library)
        if new != old:
            path.write_text(new)
            changed += 1
            print(f"rewrote {rel}")
    print(f"{changed} files rewritten")


if __name__ == "__main__":
    main()
