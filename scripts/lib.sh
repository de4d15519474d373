# Shared by scripts/demo and scripts/test: install what is missing, configure once per build
# type, build with ccache.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGES=(g++ cmake ninja-build ccache python3 dpkg-dev man-db libsqlite3-dev nlohmann-json3-dev libcli11-dev
          libgtest-dev libbenchmark-dev libspdlog-dev libtomlplusplus-dev
          libcpp-httplib-dev libboost-dev pkg-config libpq-dev postgresql-15 faketime tzdata git bubblewrap podman runc busybox-static)
# The shells tx completion is tested in: without their recommendations (fish's pull in X tools).
SHELLS=(zsh fish)

install_deps() {
  local missing=() shells=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  for p in "${SHELLS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || shells+=("$p")
  done
  if ((${#missing[@]} + ${#shells[@]})); then
    echo "== installing: ${missing[*]} ${shells[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    if ((${#missing[@]})); then
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if ((${#shells[@]})); then
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${shells[@]}" >/dev/null
    fi
  fi
}

# What scripts/thread_safety adds to each compile command of the sources (clang), and what
# tests/thread_safety_test.sh checks its snippet with: the analysis only, its findings errors.
# shellcheck disable=SC2034
THREAD_SAFETY_FLAGS=(-fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror)

# build TYPE: release | asan. Configures build/TYPE once, then builds it. The release build uses
# g++; the sanitizer build clang, which compiled it in ~40 % less time than g++ did.
build() {
  local type="$1" dir="$ROOT/build/$1"
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release) compilers=()
  if [ "$type" = asan ]; then
    args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTX_SANITIZE=ON -DTX_BUILD_BENCH=OFF)
    compilers=(CC=clang CXX=clang++)
    # A build directory configured with another compiler cannot switch: it starts again.
    if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++$' "$dir/CMakeCache.txt"; then
      rm -rf "$dir"
    fi
  fi
  if [ ! -f "$dir/build.ninja" ]; then
    env "${compilers[@]}" cmake -S "$ROOT" -B "$dir" "${args[@]}" >/dev/null
  fi
  echo "== building $type"
  # The progress lines left out; a failed build fails here (pipefail), whatever it left behind.
  cmake --build "$dir" -- -j"$(nproc)" | { grep -Ev '^\[[0-9]+/[0-9]+\] ' || true; } || return 1
  test -x "$dir/tx" && test -f "$dir/libtx_http.so"
}
