"""Fixtures for the iopulsed integration tests (root, real BPF, real loop devices).

Nothing is skipped: without root, without the daemon binary, without losetup or fio, every
test fails with a message saying what is missing.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

import pytest

from iopulse_testlib import REPO, Daemon

BACKING_DIRS = ("/dev/shm", "/var/tmp")


def _torn_down_on_signal(signum, frame):
    """A run stopped by SIGTERM or SIGHUP (a CI timeout, a killed process group) ends as an
    interrupted one: pytest still tears the fixtures down, so every loop device is detached
    and every daemon stopped (by default the signal ended the process there and then)."""
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_configure(config):
    config.addinivalue_line("markers", "root: needs root, BPF and loop devices (every test here)")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _torn_down_on_signal)


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.root)


# ------------------------------------------------------------------ prerequisites --

@pytest.fixture(scope="session")
def require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("iopulsed integration tests need root (BPF, loop devices): run as root",
                    pytrace=False)
    for tool in ("losetup", "fio", "mkfs.ext4", "mount", "umount"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} not found in PATH (scripts/install-deps.sh installs it)",
                        pytrace=False)


@pytest.fixture(scope="session")
def daemon_bin(require_root) -> str:
    """The daemon under test: $IOPULSED, else build/iopulsed of this repository."""
    path = os.environ.get("IOPULSED") or str(REPO / "build" / "iopulsed")
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        pytest.fail(f"iopulsed binary not found or not executable at {path} (build it with "
                    f"'meson setup build && ninja -C build', or set IOPULSED=/path)",
                    pytrace=False)
    return path


@pytest.fixture(scope="session")
def default_config() -> str:
    """The repository's example config: tests do not depend on /etc/iopulse."""
    return str(REPO / "etc" / "iopulse.yaml")


# -------------------------------------------------------------------- loop devices --

def _parse_size(size) -> int:
    if isinstance(size, int):
        return size
    s = str(size).strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def _run(cmd: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return r


def _sysfs_read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def _sysfs_write(path: str, value) -> bool:
    try:
        with open(path, "w") as f:
            f.write(f"{value}\n")
        return True
    except OSError:
        return False


def _current_scheduler(name: str) -> str:
    text = _sysfs_read(f"/sys/block/{name}/queue/scheduler")
    for tok in text.split():
        if tok.startswith("["):
            return tok.strip("[]")
    return text


class LoopDev:
    """One attached loop device. path (/dev/loopN), name (loopN), majmin, backing file."""

    def __init__(self, factory: "LoopFactory", path: str, backing: str, size: int):
        self._factory = factory
        self.path = path
        self.name = os.path.basename(path)
        self.backing = backing
        self.size = size
        self.majmin = _sysfs_read(f"/sys/block/{self.name}/dev")
        self.orig_scheduler = _current_scheduler(self.name)
        self.orig_nr_requests = int(_sysfs_read(f"/sys/block/{self.name}/queue/nr_requests"))
        # a loop device keeps its max_sectors_kb across detach: a value another process left
        # (a test killed mid-way, an experiment) would split this test's IOs, so every
        # attach starts from a fresh loop device's (its hardware limit, at most 1280 KiB)
        q = f"/sys/block/{self.name}/queue"
        fresh = min(int(_sysfs_read(f"{q}/max_hw_sectors_kb")), 1280)
        if int(_sysfs_read(f"{q}/max_sectors_kb")) != fresh:
            _sysfs_write(f"{q}/max_sectors_kb", fresh)
        self.orig_max_sectors_kb = int(_sysfs_read(f"{q}/max_sectors_kb"))
        self.scheduler = self.orig_scheduler
        self.nr_requests = self.orig_nr_requests
        self.detached = False

    def __repr__(self) -> str:
        return f"LoopDev({self.path} <- {self.backing})"

    def attached(self) -> bool:
        """Still bound to our backing file (the node may be reused by someone else)."""
        try:
            bf = _sysfs_read(f"/sys/block/{self.name}/loop/backing_file")
        except OSError:
            return False
        return bf == self.backing

    def set_scheduler(self, sched: str) -> None:
        q = f"/sys/block/{self.name}/queue/scheduler"
        if not _sysfs_write(q, sched) or _current_scheduler(self.name) != sched:
            raise AssertionError(f"cannot set scheduler {sched} on {self.name}: "
                                 f"{_sysfs_read(q)}")
        self.scheduler = sched
        self.nr_requests = int(_sysfs_read(f"/sys/block/{self.name}/queue/nr_requests"))

    def set_nr_requests(self, *candidates: int) -> int:
        """Try each value in turn; return the one the kernel kept."""
        p = f"/sys/block/{self.name}/queue/nr_requests"
        for n in candidates:
            if _sysfs_write(p, n) and int(_sysfs_read(p)) == n:
                self.nr_requests = n
                return n
        raise AssertionError(f"{self.name}: nr_requests refused {candidates}, "
                             f"now {_sysfs_read(p)}")

    def set_max_sectors_kb(self, kb: int) -> None:
        """The largest request the block layer builds (larger bios are split); restored at
        detach, as the kernel keeps it for the next user of this loop device."""
        p = f"/sys/block/{self.name}/queue/max_sectors_kb"
        if not _sysfs_write(p, kb) or int(_sysfs_read(p)) != kb:
            raise AssertionError(f"{self.name}: max_sectors_kb {kb} refused, now {_sysfs_read(p)}")

    def mkfs_ext4_and_mount(self) -> str:
        return self.mkfs_and_mount("ext4")

    def mkfs_and_mount(self, fstype: str) -> str:
        """Make an ext4 or btrfs file system on the device and mount it (unmounted at cleanup)."""
        if fstype == "ext4":
            mkfs = ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]
        else:
            mkfs = ["mkfs.btrfs", "-q", "-f"]
        _run(mkfs + [self.path], timeout=120)
        mnt = tempfile.mkdtemp(prefix="iopulse-it-mnt-")
        self._factory._push(lambda: os.rmdir(mnt), f"rmdir {mnt}")
        _run(["mount", "-t", fstype, self.path, mnt])
        self._factory._push(lambda: _umount(mnt), f"umount {mnt}")
        return mnt

    def detach(self) -> None:
        """Restore the queue settings and detach (by exact path). Idempotent."""
        if self.detached:
            return
        if self.attached():
            if _current_scheduler(self.name) != self.orig_scheduler:
                _sysfs_write(f"/sys/block/{self.name}/queue/scheduler", self.orig_scheduler)
            p = f"/sys/block/{self.name}/queue/nr_requests"
            if int(_sysfs_read(p)) != self.orig_nr_requests:
                _sysfs_write(p, self.orig_nr_requests)
            p = f"/sys/block/{self.name}/queue/max_sectors_kb"
            if int(_sysfs_read(p)) != self.orig_max_sectors_kb:
                _sysfs_write(p, self.orig_max_sectors_kb)
            last = None
            for _ in range(50):
                r = _run(["losetup", "-d", self.path], check=False)
                if r.returncode == 0 or not self.attached():
                    break
                last = r.stderr.strip()
                time.sleep(0.1)
            else:
                raise AssertionError(f"cannot detach {self.path}: {last}")
            # losetup -d may only set autoclear if the device is still open: wait.
            deadline = time.monotonic() + 10
            while self.attached():
                if time.monotonic() > deadline:
                    raise AssertionError(f"{self.path} still bound to {self.backing}")
                time.sleep(0.05)
        self.detached = True


def _umount(mnt: str) -> None:
    for _ in range(50):
        r = subprocess.run(["umount", mnt], capture_output=True, text=True)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError(f"umount {mnt} failed: {r.stderr.strip()}")


class LoopFactory:
    """Creates loop devices; undoes everything it did, newest first, even on failure."""

    def __init__(self):
        self._undo: list[tuple[Callable[[], None], str]] = []
        self.devices: list[LoopDev] = []

    def _push(self, fn: Callable[[], None], what: str) -> None:
        self._undo.append((fn, what))

    def __call__(self, size="256M", *, backing_dir: str = "/dev/shm", fill: bool = False,
                 scheduler: Optional[str] = None, nr_requests: Optional[tuple] = None,
                 direct_io: bool = True) -> LoopDev:
        """Attach a loop device on a new sparse file (fill=True writes zeros over it so that
        reads reach the backing store). scheduler: e.g. "mq-deadline"; nr_requests: values
        to try in turn."""
        if backing_dir not in BACKING_DIRS:
            raise ValueError(f"backing_dir must be one of {BACKING_DIRS}")
        nbytes = _parse_size(size)
        fd, backing = tempfile.mkstemp(prefix="iopulse-it-", suffix=".img", dir=backing_dir)
        self._push(lambda: os.unlink(backing), f"rm {backing}")
        try:
            if fill:
                chunk = b"\0" * (1 << 20)
                left = nbytes
                while left > 0:
                    left -= os.write(fd, chunk[:min(left, len(chunk))])
                os.fsync(fd)
            os.ftruncate(fd, nbytes)
        finally:
            os.close(fd)
        cmd = ["losetup", f"--direct-io={'on' if direct_io else 'off'}", "-f", "--show", backing]
        path = _run(cmd).stdout.strip()
        if not path.startswith("/dev/loop"):
            raise AssertionError(f"losetup printed {path!r}")
        dev = LoopDev(self, path, backing, nbytes)
        self._push(dev.detach, f"detach {path}")
        if shutil.which("udevadm"):     # udev's probe of the new device ends before any count
            _run(["udevadm", "settle", "--timeout=30"], check=False)
        if not dev.attached():
            raise AssertionError(f"{path} is not bound to {backing}")
        if direct_io and _sysfs_read(f"/sys/block/{dev.name}/loop/dio") != "1":
            raise AssertionError(f"{path}: direct IO refused on {backing_dir}")
        if scheduler:
            dev.set_scheduler(scheduler)
        if nr_requests:
            dev.set_nr_requests(*nr_requests)
        print(f"loop: {dev.path} ({dev.majmin}) <- {backing} {nbytes} bytes, "
              f"scheduler {dev.scheduler}, nr_requests {dev.nr_requests}", flush=True)
        self.devices.append(dev)
        return dev

    def cleanup(self) -> list[str]:
        errors = []
        while self._undo:
            fn, what = self._undo.pop()
            try:
                fn()
            except Exception as e:  # keep undoing the rest
                errors.append(f"{what}: {e}")
        return errors


@pytest.fixture
def loopdev(require_root):
    """Factory: loopdev(size="1G", scheduler="mq-deadline", nr_requests=(4, 8)) -> LoopDev."""
    f = LoopFactory()
    try:
        yield f
    finally:
        errors = f.cleanup()
        if errors:
            pytest.fail("loop device cleanup failed: " + "; ".join(errors), pytrace=False)


# ---------------------------------------------------------------------- the daemon --

class DaemonFactory:
    def __init__(self, binary: str, workdir: Path, default_config: str):
        self.binary = binary
        self.workdir = workdir
        self.default_config = default_config
        self.started: list[Daemon] = []
        self.sockdir: Optional[str] = None

    def __call__(self, *args: str, config: Optional[str] = "default",
                 wait_ready: bool = True, ready_timeout: float = 20.0,
                 env: Optional[dict[str, str]] = None, prefix: tuple[str, ...] = ()) -> Daemon:
        """Start iopulsed with args (plus -c CONFIG: the repository's example config unless
        config= names another file, or None for none) and wait for 'ready' on stderr.
        env: variables added to this process's environment; prefix: a command that execs
        iopulsed in the same process (("prlimit", "--nofile=1024:1024"))."""
        argv = [*prefix, self.binary]
        if config == "default":
            config = self.default_config
        if config is not None:
            argv += ["-c", config]
        argv += list(args)
        sock = None
        if not any(a in ("--socket", "--no-server") or a.startswith("--socket=") for a in args):
            # every daemon serves on a socket of its own (short path: sun_path is 108 bytes)
            if self.sockdir is None:
                self.sockdir = tempfile.mkdtemp(prefix="iop-", dir="/tmp")
            sock = os.path.join(self.sockdir, f"d{len(self.started)}.sock")
            argv += ["--socket", sock]
        errpath = self.workdir / f"iopulsed-{len(self.started)}.stderr"
        print("+ " + " ".join(argv), flush=True)
        d = Daemon(argv, errpath, env=None if env is None else {**os.environ, **env})
        d.socket = sock
        self.started.append(d)
        if wait_ready:
            d.wait_ready(ready_timeout)
        return d

    def cleanup(self) -> None:
        for d in self.started:
            d.stop(signal.SIGTERM, timeout=10)
        if self.sockdir:
            shutil.rmtree(self.sockdir, ignore_errors=True)


@pytest.fixture
def daemon(daemon_bin, default_config, tmp_path):
    """Factory: daemon("--json", "-i", "1s", "--devices", "loop5") -> Daemon (ready).
    Every daemon started is stopped by PID at teardown (SIGTERM, SIGKILL after 10 s)."""
    f = DaemonFactory(daemon_bin, tmp_path, default_config)
    try:
        yield f
    finally:
        f.cleanup()
