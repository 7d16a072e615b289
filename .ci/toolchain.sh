# Sourced by serve.sh and test.sh (from the repository root): makes sure a C compiler and a
# Rust toolchain at least as new as the workspace's `rust-version` are there, installing
# what is missing: build-essential from apt, Rust through rustup (minimal profile, stable).

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v cc >/dev/null; then
  echo "installing build-essential (a C compiler for SQLite and the TLS library)" >&2
  apt_install build-essential
fi

rust_wanted="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
# at_least WANTED HAVE: whether version HAVE is WANTED or newer.
at_least() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
rust_recent_enough() {
  command -v cargo >/dev/null && command -v rustc >/dev/null || return 1
  at_least "$rust_wanted" "$(rustc --version | cut -d' ' -f2 | cut -d- -f1)"
}
if ! rust_recent_enough; then
  if command -v rustup >/dev/null; then
    echo "updating the stable Rust toolchain (Rust $rust_wanted or newer is needed)" >&2
    rustup toolchain install stable --profile minimal >/dev/null
    export RUSTUP_TOOLCHAIN=stable
  else
    echo "installing Rust $rust_wanted or newer with rustup (minimal profile)" >&2
    command -v curl >/dev/null || apt_install curl ca-certificates
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs \
      | sh -s -- -y --no-modify-path --profile minimal --default-toolchain stable >/dev/null
    . "$HOME/.cargo/env"
  fi
  rust_recent_enough || { echo "Rust $rust_wanted or newer is required; found: $(rustc --version 2>&1)" >&2; exit 1; }
fi
