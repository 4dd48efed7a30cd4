#!/usr/bin/env bash
# Installs the Debian packages lockcheck's real servers come from, if they are missing:
# redis-server, libfaketime (Redis nodes' clocks), zookeeper and a Java runtime, etcd-server (and
# etcd-client's etcdctl, for looking into a run's cluster by hand); mariadb-server and postgresql
# (the database locks); chromium, in which the report test opens a run's page; debootstrap, which
# makes the docker provider's base image from Debian's packages (`lockcheck images`; Docker itself
# is not installed here); and the lock libraries the adapters in adapters/ run as they are
# (python3-redis, python3-kazoo, libcurator-recipes-java with javac to build its adapter). Uses
# sudo when not root. Safe to run again: it
# installs only what is absent. lockcheck never uses the packages' own services: it starts its
# own servers on free 127.0.0.1 ports.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need+=(libfaketime)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
# chromium: the report test opens a run's report.html in it, headless.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# debootstrap: the docker provider's base image (providers/docker/images).
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
# The database locks' servers. Debian keeps PostgreSQL's programs in a versioned folder, off PATH.
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || need+=(postgresql)
# zookeeper brings the server jar and the slf4j jars it needs (libslf4j-java).
for jar in /usr/share/java/zookeeper.jar /usr/share/java/slf4j-api.jar /usr/share/java/slf4j-simple.jar; do
  if [ ! -e "$jar" ]; then
    need+=(zookeeper)
    break
  fi
done

# The adapters' libraries (adapters/): Debian's Python and its python3-* modules, Curator's jars
# (which bring Guava, Jackson and ZooKeeper's client) and a JDK's javac for the Java adapter.
[ -x /usr/bin/python3 ] || need+=(python3)
[ -e /usr/lib/python3/dist-packages/redis/lock.py ] || need+=(python3-redis)
[ -e /usr/lib/python3/dist-packages/kazoo/recipe/lock.py ] || need+=(python3-kazoo)
[ -e /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
# jq: the shell template of `lockcheck init --lang program` reads the protocol's JSON with it.
command -v jq >/dev/null 2>&1 || need+=(jq)

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
