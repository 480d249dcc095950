#!/usr/bin/env bash
# Installs what ssdlab needs on a Debian machine (run as root): system packages, a Rust
# toolchain if none is present, the Python virtual environment in .venv with the Python
# dependencies, and the native simulator module (built in release mode by maturin).
# Idempotent: a second run only rebuilds the native module if its sources changed.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_pkgs=()
have() { command -v "$1" >/dev/null 2>&1; }
have fio || apt_pkgs+=(fio)
have cc || apt_pkgs+=(build-essential)
have losetup || apt_pkgs+=(util-linux)
have blkdiscard || apt_pkgs+=(util-linux)
have mkfs.ext4 || apt_pkgs+=(e2fsprogs)
have wipefs || apt_pkgs+=(util-linux)
have pvs || apt_pkgs+=(lvm2)      # the safety gate asks LVM about physical volumes; tests make some
have mdadm || apt_pkgs+=(mdadm)   # the safety gate examines md RAID superblocks; tests make some
have nvme || apt_pkgs+=(nvme-cli)
have smartctl || apt_pkgs+=(smartmontools)
have chromium || apt_pkgs+=(chromium)
have chromedriver || apt_pkgs+=(chromium-driver)
have python3 || apt_pkgs+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_pkgs+=(python3-venv)
have cargo || apt_pkgs+=(cargo rustc)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "bootstrap: missing system packages (${apt_pkgs[*]}); run as root or install them with apt-get" >&2
        exit 1
    fi
    echo "bootstrap: installing ${apt_pkgs[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
stamp=.venv/.ssdlab-deps
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q "maturin>=1.5,<2" numpy pyarrow matplotlib tqdm pytest pytest-timeout pytest-xdist selenium dask distributed
    touch "$stamp"
fi
# cargo-nextest (`make test-rust` then gives each Rust test a time limit) is not installed here:
# building it takes minutes. `cargo install cargo-nextest --locked` adds it.
# Build the native module and install the package (editable: python/ is used in place).
.venv/bin/maturin develop --release -q >/dev/null
