#!/usr/bin/env bash
# Installs the Debian packages lockcheck's real servers come from, if they are missing.
# Uses sudo when not root. Safe to run again: it installs only what is absent.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# Lock nodes' clocks (clock faults on servers) run through libfaketime's preload library.
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need+=(libfaketime)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "need root or sudo to install: ${need[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The package may start a system-wide redis-server on port 6379; lockcheck never uses it
# (it starts its own on free ports), so leave it be.
