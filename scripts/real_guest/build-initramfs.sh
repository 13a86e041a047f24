#!/usr/bin/env bash
# Build a tiny initramfs whose /init prints a marker on the serial console, then answers each line
# typed on it with "<MARKER>-ECHO <line>" (a serial console to talk to through the console proxy).
#   scripts/real_guest/build-initramfs.sh OUT_FILE [MARKER]
# Needs busybox-static (the Makefile's real-guest packages).
set -euo pipefail
OUT=${1:?usage: $0 OUT_FILE [MARKER]}
MARKER=${2:-CLOUDCORE-GUEST-OK}
BUSYBOX=$(command -v busybox || echo /bin/busybox)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin" "$WORK/proc" "$WORK/sys" "$WORK/dev"
cp "$BUSYBOX" "$WORK/bin/busybox"
for tool in sh echo mount poweroff sleep cat; do ln -s busybox "$WORK/bin/$tool"; done
cat > "$WORK/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
echo "$MARKER" > /dev/ttyS0 2>/dev/null || echo "$MARKER"
while true; do
  if read -r line < /dev/ttyS0; then echo "$MARKER-ECHO \$line" > /dev/ttyS0; else sleep 1; fi
done
INIT
chmod +x "$WORK/init"
(cd "$WORK" && find . | cpio -o -H newc 2>/dev/null | gzip -9 > "$OUT")
echo "$OUT"
