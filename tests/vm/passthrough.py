"""Passthrough commands on a test disk, as the tools a storage node runs send them (smartctl,
sg_turs, nvme-cli, a read of virtio-blk's serial): requests on the disk's own queue that are
not reads or writes of data. Whether /proc/diskstats counts them depends on the kernel (5.5 to
5.17 count every one, later kernels none unless the disk's iostats_passthrough is set), and
iopulsed must count exactly what diskstats counts.

send(disk, controller, n) sends n of them and returns what each one was.
"""
import ctypes
import fcntl
import mmap
import os
import struct

SG_IO = 0x2285
SG_DXFER_NONE = -1
DRIVER_SENSE = 0x08
# struct sg_io_hdr (scsi/sg.h), native alignment, padded to its 88 bytes
SG_IO_HDR = "iiBBHIPPPIIiPBBBBHHiII4x"
# struct nvme_passthru_cmd (linux/nvme_ioctl.h): 72 bytes
NVME_CMD = "<BBHIIIQQII6III"
NVME_IOCTL_ID = 0x4E40                                          # _IO('N', 0x40)
NVME_IOCTL_IO_CMD = (3 << 30) | (struct.calcsize(NVME_CMD) << 16) | (ord("N") << 8) | 0x43


def scsi_test_unit_ready(fd):
    """TEST UNIT READY through SG_IO: the sd disk's queue carries it as a passthrough
    request (libata translates it for a SATA disk)."""
    cdb = ctypes.create_string_buffer(6)
    sense = ctypes.create_string_buffer(32)
    hdr = bytearray(struct.pack(
        SG_IO_HDR, ord("S"), SG_DXFER_NONE, 6, len(sense), 0, 0, 0,
        ctypes.addressof(cdb), ctypes.addressof(sense), 10000, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0))
    fcntl.ioctl(fd, SG_IO, hdr)
    out = struct.unpack(SG_IO_HDR, hdr)
    status, host, driver = out[13], out[17], out[18]
    # GOOD, or CHECK CONDITION with sense (the unit attention a disk reports once after a
    # reset): either way the command went to the disk and came back
    if status not in (0, 2) or host or driver & ~DRIVER_SENSE:
        raise OSError(f"TEST UNIT READY: status {status} host {host} driver {driver}")


def nvme_flush(fd):
    """An NVMe Flush (opcode 0) through the namespace's IO passthrough ioctl."""
    nsid = fcntl.ioctl(fd, NVME_IOCTL_ID)
    cmd = bytearray(struct.pack(NVME_CMD, 0x00, 0, 0, nsid, 0, 0, 0, 0, 0, 0,
                                0, 0, 0, 0, 0, 0, 10000, 0))
    rc = fcntl.ioctl(fd, NVME_IOCTL_IO_CMD, cmd)
    if rc:
        raise OSError(f"NVMe flush: status {rc:#x}")


def nvme_read(fd):
    """An NVMe Read of logical block 0 (one block: 512 bytes here) through the namespace's IO
    passthrough ioctl: a passthrough request that moves whole sectors, the kind 6.13+ counts
    on a disk whose queue/iostats_passthrough is 1."""
    nsid = fcntl.ioctl(fd, NVME_IOCTL_ID)
    buf = mmap.mmap(-1, 4096)                       # page-aligned for the mapping
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    cmd = bytearray(struct.pack(NVME_CMD, 0x02, 0, 0, nsid, 0, 0, 0, addr, 0, 512,
                                0, 0, 0, 0, 0, 0, 10000, 0))   # SLBA 0, NLB 0 (one block)
    rc = fcntl.ioctl(fd, NVME_IOCTL_IO_CMD, cmd)
    if rc:
        raise OSError(f"NVMe read: status {rc:#x}")


def send(disk, controller, n):
    """n passthrough commands on /dev/DISK; the kind sent."""
    if controller == "virtio-blk":
        for _ in range(n):
            with open(f"/sys/block/{disk}/serial") as f:     # VIRTIO_BLK_T_GET_ID
                f.read()
        return "virtio-blk GET_ID (serial)"
    fd = os.open(f"/dev/{disk}", os.O_RDONLY | os.O_NONBLOCK)
    try:
        if controller == "nvme":
            for i in range(n):
                (nvme_read if i % 2 else nvme_flush)(fd)
            return "NVMe Flush and 512-byte Read (IO passthrough)"
        for _ in range(n):
            scsi_test_unit_ready(fd)
        return "SCSI TEST UNIT READY (SG_IO)"
    finally:
        os.close(fd)
