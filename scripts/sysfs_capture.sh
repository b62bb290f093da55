#!/usr/bin/env bash
# scripts/sysfs_capture.sh OUT.tgz [SYSFS_ROOT] - copies what cclab's topology detection reads
# (runtime/graph/detect.h, "What is read") from this machine's sysfs into a tarball laid out as
# /sys is, so that a fake tree of this machine can be made for tests/graph (CCLAB_SYSFS_ROOT points
# detection at an unpacked copy). Taken: the PCI path of every GPU (class 0x03), NVSwitch/bridge
# (0x068000), NIC (0x02) and InfiniBand HCA (0x0207) with each ancestor's attribute files,
# bus/pci/devices links to them, class/infiniband and class/net entries, NUMA nodes' cpumap/cpulist,
# the GPUDirect modules, and /proc/cpuinfo's first processor as cpuinfo. Also `nvidia-smi nvlink -s`
# and `-c` (what NVML says of NVLink) beside them, as nvlink.txt. Serial numbers and MAC addresses
# are not among the files read.
set -uo pipefail
out="${1:?usage: sysfs_capture.sh OUT.tgz [SYSFS_ROOT]}"
sys="${2:-/sys}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dst="$tmp/sys"
mkdir -p "$dst/bus/pci/devices"

attrs=(class vendor device subsystem_vendor subsystem_device max_link_speed max_link_width current_link_speed
       current_link_width numa_node local_cpulist)
copy_attrs() {  # copy_attrs REAL_DIR: the attribute files of one PCI function (those that exist)
  local d=$1 rel a
  rel=${d#"$sys"/}
  mkdir -p "$dst/$rel"
  for a in "${attrs[@]}"; do
    [ -r "$d/$a" ] && cat "$d/$a" >"$dst/$rel/$a" 2>/dev/null
  done
}
add_pci() {  # add_pci BDF: the function, every PCI ancestor, and the bus/pci/devices link
  local b=$1 real p rel
  [ -e "$sys/bus/pci/devices/$b" ] || return
  real=$(readlink -f "$sys/bus/pci/devices/$b") || return
  case "$real" in "$sys"/devices/*) ;; *) return ;; esac
  p=$real
  while [ "$p" != "$sys/devices" ] && [ "$p" != "$sys" ] && [ "$p" != "/" ] && [ -n "$p" ]; do
    case "$(basename "$p")" in
      [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:*) copy_attrs "$p" ;;
      *) mkdir -p "$dst/${p#"$sys"/}" ;;
    esac
    p=$(dirname "$p")
  done
  rel=${real#"$sys"/}
  ln -sfn "../../../$rel" "$dst/bus/pci/devices/$b"
}

n=0
for dev in "$sys"/bus/pci/devices/*; do
  b=$(basename "$dev")
  cls=$(cat "$dev/class" 2>/dev/null)
  case "$cls" in
    0x03*|0x068000|0x02*) add_pci "$b"; n=$((n + 1)) ;;
  esac
done
for kind in infiniband net; do
  for e in "$sys"/class/$kind/*; do
    [ -e "$e" ] || continue
    name=$(basename "$e")
    mkdir -p "$dst/class/$kind/$name"
    for a in speed operstate; do [ -r "$e/$a" ] && cat "$e/$a" >"$dst/class/$kind/$name/$a" 2>/dev/null; done
    for p in "$e"/ports/*; do
      [ -d "$p" ] || continue
      mkdir -p "$dst/class/$kind/$name/ports/$(basename "$p")"
      for a in state rate link_layer; do
        [ -r "$p/$a" ] && cat "$p/$a" >"$dst/class/$kind/$name/ports/$(basename "$p")/$a"
      done
    done
    if [ -e "$e/device" ]; then
      real=$(readlink -f "$e/device")
      # The device may sit below its PCI function (virtio2 below 0000:00:03.0): add that function.
      p=$real
      while [ "$p" != "$sys" ] && [ "$p" != "/" ]; do
        case "$(basename "$p")" in [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:*) add_pci "$(basename "$p")"; break ;; esac
        p=$(dirname "$p")
      done
      case "$real" in
        "$sys"/devices/*) mkdir -p "$dst/${real#"$sys"/}"
                          ln -sfn "../../../${real#"$sys"/}" "$dst/class/$kind/$name/device" ;;
      esac
    fi
  done
done
for nd in "$sys"/devices/system/node/node*; do
  [ -d "$nd" ] || continue
  mkdir -p "$dst/devices/system/node/$(basename "$nd")"
  for a in cpumap cpulist; do cat "$nd/$a" >"$dst/devices/system/node/$(basename "$nd")/$a" 2>/dev/null; done
done
for m in nvidia_peermem nv_peer_mem; do [ -d "$sys/module/$m" ] && mkdir -p "$dst/module/$m"; done
awk 'NF == 0 { exit } { print }' /proc/cpuinfo >"$dst/cpuinfo" 2>/dev/null
{ echo "# nvidia-smi nvlink -s"; nvidia-smi nvlink -s 2>&1; echo "# nvidia-smi nvlink -c"; nvidia-smi nvlink -c 2>&1
  echo "# nproc $(nproc)"; } >"$tmp/nvlink.txt"
(cd "$sys" && find devices -maxdepth 2 -name 'pci*' 2>/dev/null) >"$tmp/pci-roots.txt"
tar -czf "$out" -C "$tmp" sys nvlink.txt pci-roots.txt
echo "sysfs_capture: $n PCI functions (GPUs, NICs, NVSwitches) and their paths in $out"
(cd "$dst" && find . | sort | head -200)
