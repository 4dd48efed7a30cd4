#!/usr/bin/env bash
# Installs what lockcheck's real ZooKeeper servers need, if it is missing: Debian's zookeeper
# package (the server jar and the jars it depends on, slf4j among them) and a Java runtime.
# Uses sudo when not root. Safe to run again: it installs only what is absent.
#
# lockcheck never uses the package's service: it runs its own servers on free 127.0.0.1 ports
# (`java ... QuorumPeerMain zoo.cfg`, see cluster/zookeeper.go).
set -euo pipefail

need=()
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
for jar in /usr/share/java/zookeeper.jar /usr/share/java/slf4j-api.jar /usr/share/java/slf4j-simple.jar; do
  if [ ! -e "$jar" ]; then
    # slf4j-simple.jar comes from libslf4j-java, which zookeeper depends on.
    need+=(zookeeper)
    break
  fi
done

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
# Debian's zookeeper package ships no running service by itself (zookeeperd does); nothing to stop.
