#!/bin/bash
# fetch-oras.sh: brings oras 1.3 (Debian unstable's build) onto this Debian 12 host, without touching the
# system's apt configuration, and prints the path of its binary.
#   fetch-oras.sh            -> /var/cache/skiff-oras/usr/bin/oras
#   CACHE=DIR fetch-oras.sh  -> the same under DIR
# oras is a static Go binary: unstable's build runs on Debian 12 as it is.
set -euo pipefail
CACHE=${CACHE:-/var/cache/skiff-oras}
VERSION=${ORAS_VERSION:-}
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"; flock -w 600 9
if [ -x "$CACHE/usr/bin/oras" ] && { [ -z "$VERSION" ] || [ "$(cat "$CACHE/.version" 2>/dev/null)" = "$VERSION" ]; }; then
  echo "$CACHE/usr/bin/oras"; exit 0
fi
# The Debian mirror this machine already uses, read from its own apt sources.
uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$uri" ] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$uri" ] || { echo "fetch-oras.sh: no Debian mirror found in /etc/apt sources" >&2; exit 1; }
A=$(mktemp -d)
trap 'rm -rf "$A"' EXIT
mkdir -p "$A/lists/partial" "$A/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri sid main" > "$A/sources.list"
opts=(-o "Dir::Etc::SourceList=$A/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update -q >/dev/null
(cd "$A" && apt-get "${opts[@]}" download -q "oras${VERSION:+=$VERSION}" >/dev/null)
rm -rf "$CACHE/usr"; dpkg -x "$A"/oras_*.deb "$CACHE"
"$CACHE/usr/bin/oras" version >&2
dpkg-deb -f "$A"/oras_*.deb Version > "$CACHE/.version"
echo "$CACHE/usr/bin/oras"
