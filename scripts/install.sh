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
#   PREFIX/include/bmrm.hpp    (the header-only C++17 wrapper)
#   PREFIX/lib/cmake/bmrm/bmrmConfig.cmake, bmrmConfigVersion.cmake
#                              (find_package(bmrm CONFIG): bmrm::bmrm, the
#                               shared library; bmrm::bmrm_static, the static)
#
# Usage: scripts/install.sh PREFIX
#   It runs `cargo build --release --lib` first. Environment:
#   LIBDIR        where the libraries go (default PREFIX/lib)
#   DESTDIR       staging root prepended to every installed path (packaging)
#   BMRM_LIB_DIR  take libbmrm.{so,a} from this directory instead of building
#
# Then: cc prog.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs bmrm)
#   or in CMake: find_package(bmrm CONFIG REQUIRED) (with -DCMAKE_PREFIX_PATH=PREFIX)
#   and target_link_libraries(prog PRIVATE bmrm::bmrm)
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
  Darwin) shared=libbmrm.dylib; libs_private="-lSystem -lc -lm"; cmake_libs="m" ;;
  *) shared=libbmrm.so; libs_private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
     cmake_libs="m;dl;rt;util" ;;
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

install -d "$destdir$prefix/include" "$destdir$libdir/pkgconfig" "$destdir$libdir/cmake/bmrm"
install -m 644 include/bmrm.h "$destdir$prefix/include/bmrm.h"
install -m 644 bindings/cpp/bmrm.hpp "$destdir$prefix/include/bmrm.hpp"
real=$shared
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

# The CMake package: imported targets with the installed paths (like bmrm.pc).
soname_property=""
if [ "$shared" = libbmrm.so ]; then soname_property="IMPORTED_SONAME \"libbmrm.so.$abi\""; fi
cat > "$destdir$libdir/cmake/bmrm/bmrmConfig.cmake" <<CMAKE
# bmrm $version (C ABI $abi), written by scripts/install.sh.
#   find_package(bmrm CONFIG REQUIRED)
#   target_link_libraries(prog PRIVATE bmrm::bmrm)         # libbmrm shared
#   target_link_libraries(prog PRIVATE bmrm::bmrm_static)  # libbmrm.a
# Both carry the include directory of bmrm.h and bmrm.hpp (C++17).
include(CMakeFindDependencyMacro)
find_dependency(Threads)
set(bmrm_ABI_VERSION $abi)
if(NOT TARGET bmrm::bmrm)
  add_library(bmrm::bmrm SHARED IMPORTED)
  set_target_properties(bmrm::bmrm PROPERTIES
    IMPORTED_LOCATION "$libdir/$real"
    $soname_property
    INTERFACE_INCLUDE_DIRECTORIES "$prefix/include")
endif()
if(NOT TARGET bmrm::bmrm_static)
  add_library(bmrm::bmrm_static STATIC IMPORTED)
  set_target_properties(bmrm::bmrm_static PROPERTIES
    IMPORTED_LOCATION "$libdir/libbmrm.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "$prefix/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;$cmake_libs")
endif()
CMAKE
cat > "$destdir$libdir/cmake/bmrm/bmrmConfigVersion.cmake" <<CMAKE
# bmrm $version: compatible with a request of the same major version (and,
# while the major version is 0, the same minor version) not above it.
set(PACKAGE_VERSION "$version")
string(REPLACE "." ";" _bmrm_parts "\${PACKAGE_VERSION}")
list(GET _bmrm_parts 0 _bmrm_major)
list(GET _bmrm_parts 1 _bmrm_minor)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
   OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _bmrm_major
   OR (_bmrm_major EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR STREQUAL _bmrm_minor))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
CMAKE
chmod 644 "$destdir$libdir/cmake/bmrm/bmrmConfig.cmake" "$destdir$libdir/cmake/bmrm/bmrmConfigVersion.cmake"
echo "installed bmrm $version (C ABI $abi) into $destdir$prefix"
