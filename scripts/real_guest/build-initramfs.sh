#!/usr/bin/env bash
# Build a tiny initramfs whose /init prints a marker on the serial console, then what the guest
# finds: its NICs' MAC addresses, its root disk's size and first line, each virtio disk's size
# (GUEST-BLOCK) and, when a config drive (label config-2) is attached, its
# meta_data.json and user_data, each between BEGIN/END lines (user data that is a #!/bin/sh
# script is then run: GUEST-USER-DATA-RAN; the first port's fixed IP from network_data.json
# then goes on its first NIC: "GUEST-IP <ip>"), and its volumes' serials and first
# lines (also of those hot-plugged in its first two minutes); a line "CLOUDCORE-PING <ip>" in the user data
# makes it ping that address every second and print "GUEST-PING <n> <ip> ok|fail"; then it answers each line typed on
# its serial console with "<MARKER>-ECHO <line>" (a console to talk to through the console proxy).
#   scripts/real_guest/build-initramfs.sh OUT_FILE [MARKER] [KERNEL_VERSION]
# KERNEL_VERSION (the kernel the guest boots) names the /lib/modules tree the cdrom, iso9660 and
# virtio drivers are copied from (the cloud kernel builds them as modules); without it the guest
# only prints the marker. Needs busybox-static (the Makefile's real-guest packages).
set -euo pipefail
OUT=${1:?usage: $0 OUT_FILE [MARKER] [KERNEL_VERSION]}
MARKER=${2:-CLOUDCORE-GUEST-OK}
KVER=${3:-}
BUSYBOX=$(command -v busybox || echo /bin/busybox)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin" "$WORK/proc" "$WORK/sys" "$WORK/dev" "$WORK/mnt" "$WORK/modules"
cp "$BUSYBOX" "$WORK/bin/busybox"
for tool in sh echo mount poweroff sleep cat insmod ls head seq dd sync grep cut ifconfig ping; do ln -s busybox "$WORK/bin/$tool"; done
# in load order (each after what it depends on)
MODULES="drivers/scsi/scsi_common drivers/scsi/scsi_mod drivers/ata/libata drivers/ata/ata_piix
drivers/cdrom/cdrom drivers/scsi/sr_mod fs/isofs/isofs drivers/virtio/virtio_ring drivers/virtio/virtio
drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci
net/core/failover drivers/net/net_failover drivers/net/virtio_net drivers/block/virtio_blk"
n=0
if [ -n "$KVER" ] && [ -d "/lib/modules/$KVER/kernel" ]; then
  for m in $MODULES; do
    for f in "/lib/modules/$KVER/kernel/$m.ko" "/lib/modules/$KVER/kernel/$m.ko.xz"; do
      if [ -f "$f" ]; then n=$((n + 1)); cp "$f" "$WORK/modules/$(printf %02d $n)-$(basename "$f")"; fi
    done
  done
fi
cat > "$WORK/init" <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
[ -c /dev/ttyS0 ] && exec >/dev/ttyS0 2>&1
echo "$MARKER"
for m in /modules/*.ko*; do [ -f "\$m" ] && insmod "\$m" 2>/dev/null; done
sleep 2
for nic in /sys/class/net/eth*; do [ -e "\$nic/address" ] && echo "GUEST-NIC \$(cat \$nic/address)"; done
if [ -b /dev/vda ]; then echo "GUEST-DISK sectors=\$(cat /sys/block/vda/size) head=\$(head -c 32 /dev/vda | head -n 1)"; fi
for blk in /sys/block/vd*; do [ -e "\$blk/size" ] && echo "GUEST-BLOCK \${blk##*/} sectors=\$(cat \$blk/size)"; done
for dev in /dev/sr0 /dev/sr1 /dev/hdd; do
  if [ -b "\$dev" ] && mount -t iso9660 -o ro "\$dev" /mnt 2>/dev/null; then
    echo "GUEST-CONFIG-DRIVE \$dev"
    echo "BEGIN meta_data.json"; cat /mnt/openstack/latest/meta_data.json; echo; echo "END meta_data.json"
    if [ -f /mnt/openstack/latest/user_data ]; then
      echo "BEGIN user_data"; cat /mnt/openstack/latest/user_data; echo; echo "END user_data"
      # a shell script as user data runs (what cloud-init does with one), after the reports above
      if [ "\$(head -c 9 /mnt/openstack/latest/user_data)" = "#!/bin/sh" ]; then
        sh /mnt/openstack/latest/user_data; echo "GUEST-USER-DATA-RAN rc=\$?"
      fi
      PING_TARGET=\$(grep -o 'CLOUDCORE-PING [0-9.]*' /mnt/openstack/latest/user_data | head -n 1 | cut -d' ' -f2)
    fi
    # the first port's fixed IP (network_data.json) on the first NIC
    IP=\$(grep -o '"ip_address": "[0-9.]*"' /mnt/openstack/latest/network_data.json | head -n 1 | cut -d'"' -f4)
    MASK=\$(grep -o '"netmask": "[0-9.]*"' /mnt/openstack/latest/network_data.json | head -n 1 | cut -d'"' -f4)
    if [ -n "\$IP" ] && [ -e /sys/class/net/eth0 ]; then
      ifconfig lo 127.0.0.1 up
      ifconfig eth0 "\$IP" netmask "\${MASK:-255.255.255.0}" up && echo "GUEST-IP \$IP"
    fi
    break
  fi
done
report_volumes() {  # each virtio disk with a serial (a volume: the serial is its id) not reported yet
  for blk in /sys/block/vd*; do
    name=\${blk##*/}
    case " \$SEEN " in *" \$name "*) continue ;; esac
    SEEN="\$SEEN \$name"
    serial=\$(cat \$blk/serial 2>/dev/null)
    [ -n "\$serial" ] && echo "\$1 serial=\$serial head=\$(head -c 32 /dev/\$name | head -n 1)"
  done
}
SEEN=""
report_volumes GUEST-VOLUME
echo "GUEST-DONE"
# user data "CLOUDCORE-PING <ip>": ping it every second for ever, each result numbered on the console
if [ -n "\$PING_TARGET" ]; then
  (n=0; while true; do
    n=\$((n + 1))
    if ping -c 1 -W 2 "\$PING_TARGET" >/dev/null 2>&1; then r=ok; else r=fail; fi
    echo "GUEST-PING \$n \$PING_TARGET \$r"; sleep 1
  done) &
fi
# volumes attached to the running guest (hot-plugged) are reported as they appear
(for i in \$(seq 1 120); do report_volumes GUEST-HOTPLUGGED; sleep 1; done) &
while true; do
  if read -r line < /dev/ttyS0; then echo "$MARKER-ECHO \$line" > /dev/ttyS0; else sleep 1; fi
done
INIT
chmod +x "$WORK/init"
(cd "$WORK" && find . | cpio -o -H newc 2>/dev/null | gzip -9 > "$OUT")
echo "$OUT"
