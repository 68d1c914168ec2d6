#!/usr/bin/env bash
# Gathers what a GPU node needs to build attndev and does not have: the header-only forms of
# CLI11, nlohmann_json, spdlog + fmt (header-only mode), Eigen and Catch2 v2, and a CMake package
# file for each, into one folder (default gpu-bundle/, git-ignored, a few MiB).
#
# Why: a GPU node may have a CUDA toolkit, CMake, Ninja, a C++ compiler and python3 but no
# network and not Debian, so nothing can be installed there. Copy this folder along with the
# working tree; the build finds the dependencies in it when the system has none
# (-DATTNDEV_BUNDLED_DEPS=AUTO, the default; =ON uses the bundle only; see docs/cuda.md).
#
# Run on a Debian machine where scripts/setup.sh has installed the -dev packages (it takes the
# headers from those packages, by their dpkg file lists, so the bundle matches what CI builds
# with). Usage: scripts/gpu-bundle.sh [OUT_DIR]   (default: gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-gpu-bundle}"
limit_mib=64

die() {
  echo "gpu-bundle.sh: $*" >&2
  exit 1
}

command -v dpkg-query >/dev/null || die "needs dpkg (run it on Debian, where scripts/setup.sh ran)"

# package  include root  sub-paths copied from that root
specs=(
  "libcli11-dev       /usr/include        CLI"
  "nlohmann-json3-dev /usr/include        nlohmann"
  "libspdlog-dev      /usr/include        spdlog"
  "libfmt-dev         /usr/include        fmt"
  "libeigen3-dev      /usr/include/eigen3 Eigen"
  "catch2             /usr/include        catch2"
)
missing=()
for spec in "${specs[@]}"; do
  read -r pkg _ <<<"$spec"
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] || die "missing packages: ${missing[*]} (run scripts/setup.sh first)"

tmp="$(mktemp -d "${out%/}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include" "$tmp/cmake" "$tmp/licenses"

# Copies the package's own files under ROOT/SUB (dpkg -L: nothing that another package added).
copy_package() {
  local pkg="$1" root="$2" sub="$3" n=0
  while IFS= read -r f; do
    [[ -f "$f" && ! -L "$f" ]] || continue
    local rel="${f#"$root"/}"
    mkdir -p "$tmp/include/$(dirname "$rel")"
    cp -p "$f" "$tmp/include/$rel"  # -p: an unchanged bundle rebuilds nothing
    n=$((n + 1))
  done < <(dpkg -L "$pkg" | grep -E "^$root/$sub(/|$)")
  [[ $n -gt 0 ]] || die "$pkg: no files under $root/$sub"
  if [[ -f /usr/share/doc/$pkg/copyright ]]; then
    cp "/usr/share/doc/$pkg/copyright" "$tmp/licenses/$pkg.copyright"
  fi
  echo "$pkg $(dpkg-query -W -f='${Version}' "$pkg") $n files" >>"$tmp/MANIFEST"
}
for spec in "${specs[@]}"; do
  # shellcheck disable=SC2086
  copy_package $spec
done

# Versions from the headers themselves (what the compiler will see).
define_of() {  # define_of FILE MACRO
  sed -n -E "s/^#[[:space:]]*define[[:space:]]+$2[[:space:]]+\"?([0-9.]+)\"?.*/\1/p" "$tmp/include/$1" |
    head -n1
}
cli11_version="$(define_of CLI/Version.hpp CLI11_VERSION)"
json_version="$(define_of nlohmann/detail/abi_macros.hpp NLOHMANN_JSON_VERSION_MAJOR).$(
  define_of nlohmann/detail/abi_macros.hpp NLOHMANN_JSON_VERSION_MINOR).$(
  define_of nlohmann/detail/abi_macros.hpp NLOHMANN_JSON_VERSION_PATCH)"
spdlog_version="$(define_of spdlog/version.h SPDLOG_VER_MAJOR).$(
  define_of spdlog/version.h SPDLOG_VER_MINOR).$(define_of spdlog/version.h SPDLOG_VER_PATCH)"
fmt_number="$(define_of fmt/core.h FMT_VERSION)"
fmt_version="$((fmt_number / 10000)).$((fmt_number / 100 % 100)).$((fmt_number % 100))"
eigen_version="$(define_of Eigen/src/Core/util/Macros.h EIGEN_WORLD_VERSION).$(
  define_of Eigen/src/Core/util/Macros.h EIGEN_MAJOR_VERSION).$(
  define_of Eigen/src/Core/util/Macros.h EIGEN_MINOR_VERSION)"
catch2_version="$(define_of catch2/catch.hpp CATCH_VERSION_MAJOR).$(
  define_of catch2/catch.hpp CATCH_VERSION_MINOR).$(define_of catch2/catch.hpp CATCH_VERSION_PATCH)"
for v in cli11 json spdlog fmt eigen catch2; do
  var="${v}_version"
  [[ "${!var}" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || die "could not read the $v version from its headers"
done

# One CMake package per dependency: an INTERFACE IMPORTED target over the bundle's include folder
# (found relative to the package file, so the bundle can be copied anywhere), and a version file
# with same-major compatibility. spdlog is switched to header-only mode over header-only fmt:
# the system's compiled libspdlog/libfmt are exactly what a GPU node lacks.
write_package() {  # write_package NAME VERSION TARGET [COMPILE_DEFINITIONS]
  local name="$1" version="$2" target="$3" defs="${4:-}" dir="$tmp/cmake/$1"
  mkdir -p "$dir"
  cat >"$dir/${name}Config.cmake" <<EOF
# Written by scripts/gpu-bundle.sh: ${name} ${version}, header-only, from this bundle.
get_filename_component(_attndev_bundle_include "\${CMAKE_CURRENT_LIST_DIR}/../../include" ABSOLUTE)
if(NOT TARGET ${target})
  add_library(${target} INTERFACE IMPORTED)
  set_target_properties(${target} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "\${_attndev_bundle_include}"
    INTERFACE_COMPILE_DEFINITIONS "${defs}")
endif()
set(${name}_BUNDLED TRUE)
unset(_attndev_bundle_include)
EOF
  cat >"$dir/${name}ConfigVersion.cmake" <<EOF
# Written by scripts/gpu-bundle.sh: same major version, at least the requested one.
set(PACKAGE_VERSION "${version}")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(NOT PACKAGE_FIND_VERSION OR (PACKAGE_FIND_VERSION_MAJOR EQUAL "${version%%.*}" AND
                                NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
}
write_package CLI11 "$cli11_version" CLI11::CLI11
write_package nlohmann_json "$json_version" nlohmann_json::nlohmann_json
write_package fmt "$fmt_version" fmt::fmt "FMT_HEADER_ONLY"
write_package spdlog "$spdlog_version" spdlog::spdlog \
  "SPDLOG_HEADER_ONLY;SPDLOG_FMT_EXTERNAL;FMT_HEADER_ONLY"
write_package Eigen3 "$eigen_version" Eigen3::Eigen
write_package Catch2 "$catch2_version" Catch2::Catch2
# catch_discover_tests comes from Catch2's own CMake scripts (no absolute paths in them).
for f in Catch.cmake CatchAddTests.cmake; do
  dpkg -L catch2 | grep -q "/$f\$" || die "catch2: $f not in the package"
  cp "$(dpkg -L catch2 | grep "/$f\$" | head -n1)" "$tmp/cmake/Catch2/$f"
done
echo 'list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")  # include(Catch)' \
  >>"$tmp/cmake/Catch2/Catch2Config.cmake"

cat >"$tmp/README" <<EOF
attndev dependency bundle, written by scripts/gpu-bundle.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ).
Header-only CLI11 ${cli11_version}, nlohmann_json ${json_version}, spdlog ${spdlog_version} over
fmt ${fmt_version} (both header-only), Eigen ${eigen_version}, Catch2 ${catch2_version}, taken from
the Debian packages listed in MANIFEST (their copyright files in licenses/). CMake packages in
cmake/; the attndev build uses them when the system has none (docs/cuda.md).
EOF

size_kib="$(du -sk "$tmp" | cut -f1)"
[[ $size_kib -lt $((limit_mib * 1024)) ]] ||
  die "the bundle is ${size_kib} KiB, over the ${limit_mib} MiB a GPU node's copy allows"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "gpu-bundle.sh: wrote $out ($((size_kib / 1024)) MiB; $(sed 's/ [^ ]* files$//' "$out/MANIFEST" | tr '\n' ';' | sed 's/;$//'))"
