#!/usr/bin/env bash
# All the tests, on a fresh machine: installs what they need, then checks
# formatting and lints and runs every test (unit, integration, doc, examples).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)   # the C ABI's install test
command -v cmake >/dev/null || need_apt+=(cmake)             # find_package(bmrm) of the install test
command -v valgrind >/dev/null || need_apt+=(valgrind)       # the C ABI's memcheck run
command -v c++ >/dev/null || need_apt+=(g++)                 # the C++ front end's tests
command -v octave-cli >/dev/null || need_apt+=(octave)       # the MATLAB/Octave front end's tests
command -v mkoctfile >/dev/null || need_apt+=(liboctave-dev) # ... and its MEX build
# The `mpi` feature (src/distributed, tests/mpi.rs): Open MPI, and libclang
# for the bindgen run of the mpi-sys crate.
command -v mpirun >/dev/null || need_apt+=(openmpi-bin)
# mpicc alone may come without the headers (Octave's packages pull in
# openmpi-bin): ask for mpi.h itself.
echo '#include <mpi.h>' | mpicc -x c -E - >/dev/null 2>&1 || need_apt+=(libopenmpi-dev)
ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || need_apt+=(libclang-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "missing packages: ${need_apt[*]} (run as root or install them)" >&2
    exit 1
  fi
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --all-targets --release -- -D warnings
echo "== cargo test"
export BMRM_REQUIRE_OCTAVE=1   # tests/octave.rs fails instead of skipping without Octave
# Not --all-targets: that would also run the benchmark programs (minutes each).
cargo test --release --lib --bins --tests --examples
cargo test --release --doc
echo "== C ABI under valgrind (memcheck: no error, no definite leak)"
cargo test --release --test ffi -- --ignored
echo "== C++ front end under valgrind"
cargo test --release --test cpp -- --ignored
echo "== MPI (feature mpi): the distributed solvers under mpirun -np 3"
cargo clippy --all-targets --release --features mpi -- -D warnings
cargo test --release --features mpi --test mpi
# --- Attacks that stay (docs/reliability.md) ----------------------------------
# The fuzzers (tests/fuzz_readers.rs, src/bin/bmrm/model_fuzz.rs) and the
# randomized C-ABI call sequences (tests/attack.rs) ran with the tests above;
# here the C test programs, the attack program and the C example run under
# AddressSanitizer and UndefinedBehaviorSanitizer.
echo "== C ABI under AddressSanitizer + UBSan, randomized call sequences"
cargo test --release --test attack -- --ignored

# ---- boundaries: the C library alone, its SONAME, the docs ----
echo "== C library without the cli feature (no clap/indicatif/serde_json/plotters)"
cargo build --release --lib --no-default-features
if cargo tree --no-default-features -e normal --prefix none |
  grep -E '^(clap|indicatif|serde_json|plotters) '; then
  echo "the C library depends on a command-line crate" >&2
  exit 1
fi
if command -v readelf >/dev/null && [ "$(uname -s)" = Linux ]; then
  abi=$(sed -n 's/^#define BMRM_ABI_VERSION \([0-9]*\)/\1/p' include/bmrm.h)
  readelf -d target/release/libbmrm.so | grep -q "Library soname: \[libbmrm.so.$abi\]" ||
    { echo "libbmrm.so has no SONAME libbmrm.so.$abi" >&2; exit 1; }
fi
echo "== cargo doc (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --lib
echo "== cargo publish --dry-run (the packaged crate builds from what it holds)"
# --allow-dirty only for a work tree with uncommitted changes (CI's clone has none).
dirty=$([ -n "$(git status --porcelain 2>/dev/null)" ] && echo --allow-dirty || true)
cargo publish --dry-run $dirty
echo "== no reference to a document outside the repository"
# (the pattern is split so that this file does not match itself)
if git grep -n "DESIGN""[.]md" -- . ; then
  echo "a file refers to the design document outside the repository (see docs/)" >&2
  exit 1
fi

echo "== Python bindings (bindings/python): a binary wheel, installed without Rust, pytest"
# The Rust CLI is the reference of the bit-identity test (BMRM_CLI).
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
fi
cargo fmt --manifest-path bindings/python/Cargo.toml -- --check
cargo build --release --bin bmrm
py_tmp=$(mktemp -d)
python3 -m venv "$py_tmp/build"
"$py_tmp/build/bin/pip" install -q maturin twine auditwheel
# One abi3 wheel (CPython >= 3.8). --compatibility pypi: maturin reads the
# glibc symbol versions the library needs and tags the wheel with the
# manylinux policy they allow (manylinux_2_34 on Debian 12), refusing a
# plain linux tag; auditwheel checks that tag independently.
"$py_tmp/build/bin/maturin" build --release --compatibility pypi \
  -m bindings/python/Cargo.toml -o "$py_tmp/dist"
"$py_tmp/build/bin/twine" check --strict "$py_tmp"/dist/*
wheel=$(ls "$py_tmp"/dist/bmrm-*-cp38-abi3-manylinux_*.whl) ||
  { echo "maturin built no abi3 manylinux wheel: $(ls "$py_tmp/dist")" >&2; exit 1; }
platform=${wheel##*-}
"$py_tmp/build/bin/auditwheel" show "$wheel" | tr '\n' ' ' |
  grep -q "consistent with the following platform tag: \"${platform%.whl}\"" ||
  { echo "auditwheel does not confirm the tag of $wheel" >&2; exit 1; }
# The wheel in a fresh environment whose PATH has no cargo or rustc, and
# pip allowed binary packages only: nothing is compiled.
no_rust_path=$(IFS=:; for d in $PATH; do
  [ -x "$d/cargo" ] || [ -x "$d/rustc" ] || printf '%s:' "$d"; done)
no_rust_path=${no_rust_path%:}
if env PATH="$no_rust_path" /bin/sh -c 'command -v cargo || command -v rustc'; then
  echo "the test PATH still finds a Rust toolchain" >&2
  exit 1
fi
python3 -m venv "$py_tmp/test"
PATH="$py_tmp/test/bin:$no_rust_path" "$py_tmp/test/bin/pip" install -q --only-binary :all: \
  "$wheel" numpy scipy scikit-learn pytest
PATH="$py_tmp/test/bin:$no_rust_path" BMRM_CLI="$PWD/target/release/bmrm" \
  "$py_tmp/test/bin/python" -m pytest -q -p no:cacheprovider bindings/python/tests
rm -rf "$py_tmp"
