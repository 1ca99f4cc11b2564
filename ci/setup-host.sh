#!/usr/bin/env bash
# Install what patchbench needs on a Debian 12 host: QEMU, the kernel source,
# the kernel build toolchain, busybox for the guest image, and ccache.
# Idempotent: when everything is installed it only checks.
set -euo pipefail

packages=(
  qemu-system-x86   # boots the kernels (TCG everywhere, KVM where usable)
  linux-source-6.12 # /usr/src/linux-source-6.12.tar.xz, the default tree
  build-essential   # gcc and make
  flex bison bc     # kernel build tools
  libelf-dev        # objtool
  libssl-dev        # certificate tooling in the kernel build
  cpio xz-utils     # extracting the tree, kernel headers archive
  busybox-static    # the guest's mkswap (the initramfs needs a static one)
  ccache            # makes rebuilds of the same sources near free
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup-host: all ${#packages[@]} packages are installed"
  exit 0
fi
echo "setup-host: installing ${missing[*]}"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
