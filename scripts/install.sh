#!/usr/bin/env bash
# Installs the C library of bmrm into a prefix:
#
#   PREFIX/include/bmrm.h
#   PREFIX/lib/libbmrm.so.A.V  (A: BMRM_ABI_VERSION, V: the crate version)
#   PREFIX/lib/libbmrm.so.A -> libbmrm.so.A.V   (the SONAME: what programs load)
#   PREFIX/lib/libbmrm.so   -> libbmrm.so.A     (what `-lbmrm` finds)
#                              (macOS: libbmrm.dylib, no links)
#   PREFIX/lib/libbmrm.a
#   PREFIX/lib/pkgconfig/bmrm.pc
#
# Usage: scripts/install.sh PREFIX
#   It runs `cargo build --release --lib` first. Environment:
#   LIBDIR        where the libraries go (default PREFIX/lib)
#   DESTDIR       staging root prepended to every installed path (packaging)
#   BMRM_LIB_DIR  take libbmrm.{so,a} from this directory instead of building
#
# Then: cc prog.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs bmrm)
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
# Relative paths are taken from the directory the script is called from.
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
prefix=$(absolute "$1")
libdir=$(absolute "${LIBDIR:-$prefix/lib}")
if [ -n "${BMRM_LIB_DIR:-}" ]; then BMRM_LIB_DIR=$(absolute "$BMRM_LIB_DIR"); fi
cd "$(dirname "$0")/.."
destdir=${DESTDIR:-}

case "$(uname -s)" in
  Darwin) shared=libbmrm.dylib; libs_private="-lSystem -lc -lm" ;;
  *) shared=libbmrm.so; libs_private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc" ;;
esac

if [ -n "${BMRM_LIB_DIR:-}" ]; then
  built=$BMRM_LIB_DIR
else
  cargo build --release --lib
  target=${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')}
  built=$target/release
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
abi=$(sed -n 's/^#define BMRM_ABI_VERSION \([0-9]*\)/\1/p' include/bmrm.h)
if [ -z "$abi" ]; then echo "no BMRM_ABI_VERSION in include/bmrm.h" >&2; exit 1; fi
for f in "$shared" libbmrm.a; do
  [ -f "$built/$f" ] || { echo "no $built/$f" >&2; exit 1; }
done

install -d "$destdir$prefix/include" "$destdir$libdir/pkgconfig"
install -m 644 include/bmrm.h "$destdir$prefix/include/bmrm.h"
if [ "$shared" = libbmrm.so ]; then
  # The library's SONAME is libbmrm.so.$abi (build.rs); the usual links.
  real="libbmrm.so.$abi.$version"
  install -m 755 "$built/$shared" "$destdir$libdir/$real"
  ln -sfn "$real" "$destdir$libdir/libbmrm.so.$abi"
  ln -sfn "libbmrm.so.$abi" "$destdir$libdir/libbmrm.so"
else
  install -m 755 "$built/$shared" "$destdir$libdir/$shared"
fi
install -m 644 "$built/libbmrm.a" "$destdir$libdir/libbmrm.a"
if [ "$shared" = libbmrm.dylib ] && command -v install_name_tool >/dev/null; then
  install_name_tool -id "$libdir/$shared" "$destdir$libdir/$shared"
fi
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" -e "s|@VERSION@|$version|" \
    -e "s|@ABI@|$abi|" -e "s|@LIBS_PRIVATE@|$libs_private|" \
    bmrm.pc.in > "$destdir$libdir/pkgconfig/bmrm.pc"
chmod 644 "$destdir$libdir/pkgconfig/bmrm.pc"
echo "installed bmrm $version (C ABI $abi) into $destdir$prefix"
