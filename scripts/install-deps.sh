#!/bin/sh
# Installs what building and testing iopulse needs on Debian 12 (run as root).
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
	clang libclang-rt-14-dev llvm libbpf-dev bpftool libyaml-dev libelf-dev zlib1g-dev check \
	meson ninja-build pkgconf gcc libc6-dev scdoc \
	libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libmicrohttpd-dev \
	fio e2fsprogs btrfs-progs util-linux fdisk python3 python3-pytest valgrind \
	python3-grpcio python3-protobuf python3-rich python3-venv python3-pip python3-hatchling \
	protobuf-compiler python3-pandas python3-matplotlib python3-yaml chromium fonts-dejavu-core \
	prometheus python3-prometheus-client openssl bpftrace \
	qemu-system-x86 kmod busybox-static file debian-archive-keyring lvm2 mdadm blktrace >/dev/null
