#!/usr/bin/env bash
# Installs the Debian packages lockcheck's real servers and lock libraries come from, if they are
# missing. Takes what to install, so a first run installs only what it uses:
#
#   install-deps.sh [all]          everything below (make test)
#   install-deps.sh redis          redis-server and libfaketime (make run: the main scenario)
#   install-deps.sh KIND...        per service kind: redis, zookeeper, etcd, mariadb, postgres
#                                  (each with libfaketime, which sets a server's clock)
#   install-deps.sh ADAPTER...     per lock adapter (adapters/): redis-py, kazoo, curator, program
#   install-deps.sh images         debootstrap, which makes the docker provider's base image
#                                  (`lockcheck images`; Docker itself is not installed here)
#   install-deps.sh report         chromium, in which the report test opens a run's page
#   install-deps.sh --dry-run ...  only print the packages it would install
#
# Uses sudo when not root. Safe to run again: it installs only what is absent. lockcheck never
# uses the packages' own services: it starts its own servers on free 127.0.0.1 ports.
set -euo pipefail

choices="all redis zookeeper etcd mariadb postgres redis-py kazoo curator program images report"
need=()
add() { # add PACKAGE unless it is listed already
  local p
  for p in "${need[@]+"${need[@]}"}"; do [ "$p" = "$1" ] && return; done
  need+=("$1")
}

faketime() { [ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || add libfaketime; }
python() { [ -x /usr/bin/python3 ] || add python3; }
java() { command -v java >/dev/null 2>&1 || add default-jre-headless; }

want() {
  case "$1" in
  redis)
    command -v redis-server >/dev/null 2>&1 || add redis-server
    faketime ;;
  zookeeper)
    java
    # zookeeper brings the server jar and the slf4j jars it needs (libslf4j-java).
    local jar
    for jar in /usr/share/java/zookeeper.jar /usr/share/java/slf4j-api.jar /usr/share/java/slf4j-simple.jar; do
      [ -e "$jar" ] || { add zookeeper; break; }
    done
    faketime ;;
  etcd)
    command -v etcd >/dev/null 2>&1 || add etcd-server
    # etcdctl, for looking into a run's cluster by hand.
    command -v etcdctl >/dev/null 2>&1 || add etcd-client
    faketime ;;
  mariadb)
    [ -x /usr/sbin/mariadbd ] || add mariadb-server
    faketime ;;
  postgres)
    # Debian keeps PostgreSQL's programs in a versioned folder, off PATH.
    compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || add postgresql
    faketime ;;
  redis-py)
    python
    [ -e /usr/lib/python3/dist-packages/redis/lock.py ] || add python3-redis ;;
  kazoo)
    python
    [ -e /usr/lib/python3/dist-packages/kazoo/recipe/lock.py ] || add python3-kazoo ;;
  curator)
    # Curator's jars bring Guava, Jackson and ZooKeeper's client; javac builds the Java adapter.
    [ -e /usr/share/java/curator-recipes.jar ] || add libcurator-recipes-java
    command -v javac >/dev/null 2>&1 || add default-jdk-headless ;;
  program)
    # jq: the shell template of `lockcheck init --lang program` reads the protocol's JSON with it.
    command -v jq >/dev/null 2>&1 || add jq ;;
  images)
    command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || add debootstrap ;;
  report)
    command -v chromium >/dev/null 2>&1 || add chromium ;;
  all)
    local c
    for c in $choices; do [ "$c" = all ] || want "$c"; done ;;
  *)
    echo "install-deps.sh: unknown choice \"$1\"; choices: $choices" >&2
    exit 2 ;;
  esac
}

dry=""
if [ "${1:-}" = --dry-run ]; then
  dry=1
  shift
fi
[ $# -eq 0 ] && set -- all
for arg in "$@"; do want "$arg"; done

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ -n "$dry" ]; then
  echo "would install: ${need[*]}"
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
