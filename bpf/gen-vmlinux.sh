#!/bin/sh
# gen-vmlinux.sh OUT BUNDLED BPFTOOL MODE
# Writes vmlinux.h: from the running kernel's BTF when MODE is "auto" and
# /sys/kernel/btf/vmlinux is readable, otherwise a copy of the bundled header.
set -eu
out=$1; bundled=$2; bpftool=$3; mode=$4
btf=/sys/kernel/btf/vmlinux
if [ "$mode" = auto ] && [ -r "$btf" ] && "$bpftool" btf dump file "$btf" format c > "$out.tmp" 2>/dev/null; then
	mv "$out.tmp" "$out"
	echo "vmlinux.h: generated from $btf"
else
	rm -f "$out.tmp"
	cp "$bundled" "$out"
	echo "vmlinux.h: bundled copy $bundled"
fi
