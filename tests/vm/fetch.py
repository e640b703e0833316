"""The kernels the VM matrix boots: tests/vm/kernels.txt read, each kernel's Debian packages
downloaded with an apt state of its own and unpacked where virtme-ng boots them (nothing is
installed on this machine).

Up to Debian 13 a kernel is one package, linux-image-RELEASE, with boot/vmlinuz-RELEASE and
its modules. Debian 14 split it: linux-image-RELEASE is an empty package that depends on
linux-binary-RELEASE (the image, as usr/lib/modules/RELEASE/vmlinuz), linux-modules-RELEASE
and linux-base-RELEASE. fetch_kernel() unpacks whichever of these the image package depends
on into one directory, lays the image and config out as the single package did (boot/) and
builds the modules' index (depmod) that the split packages leave to their postinst.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

ARCHIVE = {"": "http://deb.debian.org/debian",
           "-security": "http://deb.debian.org/debian-security"}
SPLIT_PARTS = ("linux-binary-", "linux-modules-", "linux-base-")


def log(msg: str) -> None:
    print(f"[vm {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, **kw)


def read_kernels(path: str) -> list[dict]:
    """kernels.txt's rows: label, package, version, suite and the expect column."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) not in (4, 5):
                raise ValueError(f"{path}:{n}: want 'label package version suite [expect]', "
                                 f"got {len(fields)} fields")
            label, pkg, ver, suite, *expect = fields
            out.append({"label": label, "package": pkg, "version": ver, "suite": suite,
                        "expect": expect[0] if expect else ""})
    return out


class Apt:
    """apt-get with a state, cache and sources.list of its own: the machine's apt config
    and lists stay untouched."""

    def __init__(self, root: str, suites: list[str]):
        self.root = root
        for d in ("state/lists/partial", "cache/archives/partial", "etc/sources.list.d",
                  "etc/preferences.d"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        status = os.path.join(root, "state/status")
        if not os.path.exists(status):
            open(status, "w").close()
        lines = []
        for s in sorted(set(suites)):
            uri = ARCHIVE["-security" if s.endswith("-security") else ""]
            lines.append(f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                         f"{uri} {s} main\n")
        src = os.path.join(root, "etc/sources.list")
        old = open(src).read() if os.path.exists(src) else None
        self.updated: bool | None
        if old != "".join(lines):
            with open(src, "w") as f:
                f.writelines(lines)
            self.updated = False
        else:
            self.updated = None     # lists may be there already
        self.opts = ["-o", "APT::Sandbox::User=root"]   # the cache is root's: no _apt
        for k, v in (("Dir::State", "state"), ("Dir::State::status", "state/status"),
                     ("Dir::Cache", "cache"), ("Dir::Etc::SourceList", "etc/sources.list"),
                     ("Dir::Etc::SourceParts", "etc/sources.list.d"),
                     ("Dir::Etc::Preferences", "etc/preferences"),
                     ("Dir::Etc::PreferencesParts", "etc/preferences.d")):
            self.opts += ["-o", f"{k}={os.path.join(root, v)}"]

    def show(self, pkg: str, ver: str) -> str | None:
        """apt-cache show of pkg=ver, None when the lists do not have it (apt-cache exits 0
        with no record for a package only named in another's Depends)."""
        r = subprocess.run(["apt-cache"] + self.opts + ["show", f"{pkg}={ver}"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return r.stdout if r.returncode == 0 and r.stdout.strip() else None

    def update(self) -> None:
        log("apt-get update (own state under the cache)")
        run(["apt-get"] + self.opts + ["update", "-qq"])
        self.updated = True

    def ensure(self, pkg: str, ver: str) -> str:
        """pkg=ver's record, the lists updated once if they lack it."""
        rec = self.show(pkg, ver)
        if rec is None and not self.updated:
            self.update()
            rec = self.show(pkg, ver)
        if rec is None:
            raise RuntimeError(f"{pkg}={ver} is not in the archive any more: "
                               f"pick a current version in tests/vm/kernels.txt")
        return rec

    def has(self, pkg: str, ver: str) -> bool:
        """Whether the archive has pkg=ver (the lists updated once if they lack it)."""
        try:
            self.ensure(pkg, ver)
        except RuntimeError:
            return False
        return True

    def download(self, pkg: str, ver: str, dest: str) -> None:
        self.ensure(pkg, ver)
        argv = ["apt-get"] + self.opts + ["download", "-qq", f"{pkg}={ver}"]
        if subprocess.run(argv, cwd=dest).returncode == 0:
            return
        if self.updated:
            raise RuntimeError(f"apt-get download {pkg}={ver} failed")
        self.update()               # lists older than the archive: once more with new ones
        run(argv, cwd=dest)


def split_parts(record: str, version: str) -> list[str]:
    """The packages of a split kernel an image package's record depends on at its own
    version (linux-binary-*, linux-modules-*, linux-base-*); [] for a whole one."""
    m = re.search(r"^Depends: (.*)$", record, re.M)
    parts = []
    for alt in (m.group(1).split(",") if m else []):
        name = alt.split("|")[0].strip()
        pm = re.match(r"(\S+) \(= (\S+)\)", name)
        if pm and pm.group(2) == version and pm.group(1).startswith(SPLIT_PARTS):
            parts.append(pm.group(1))
    return parts


def deb_path(debs: str, pkg: str, ver: str) -> str:
    return os.path.join(debs, f"{pkg}_{ver.replace(':', '%3a')}_amd64.deb")


def holds_kernel(deb: str, release: str) -> bool:
    """Whether the package deb carries the kernel image itself (a whole image package, not
    the empty one of a split kernel)."""
    r = subprocess.run(["dpkg-deb", "-c", deb], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return any(line.endswith((f"/boot/vmlinuz-{release}", f"/modules/{release}/vmlinuz"))
               for line in r.stdout.splitlines())


def fetch_kernel(k: dict, cache: str, apt: Apt) -> tuple[str, str, str, str]:
    """(unpacked dir, kernel image, its config, release) of kernels.txt's row k, downloaded
    and unpacked into the cache unless there already."""
    release = k["package"][len("linux-image-"):]
    unpacked = os.path.join(cache, "kernels", f"{k['package']}_{k['version']}")
    kimg = os.path.join(unpacked, "boot", f"vmlinuz-{release}")
    config = os.path.join(unpacked, "boot", f"config-{release}")
    if not os.path.exists(kimg):
        debs = os.path.join(cache, "debs")
        os.makedirs(debs, exist_ok=True)
        # the image package's record names the parts of a split kernel (lists updated once
        # if they lack it, even when its .deb is cached)
        pkgs = [k["package"]] + split_parts(apt.ensure(k["package"], k["version"]),
                                            k["version"])
        for i, p in enumerate(list(pkgs)):
            if i and holds_kernel(deb_path(debs, pkgs[0], k["version"]), release) and \
                    not apt.has(p, k["version"]):
                # trixie-backports' 6.18 images hold the kernel, its modules and config, and
                # depend on a linux-base part the archive dropped when backports moved on
                log(f"{p}={k['version']} is not in the archive; {pkgs[0]} holds the kernel "
                    f"itself: going on without it")
                pkgs.remove(p)
                continue
            if not os.path.exists(deb_path(debs, p, k["version"])):
                log(f"downloading {p}={k['version']}")
                apt.download(p, k["version"], debs)
            if not os.path.exists(deb_path(debs, p, k["version"])):
                raise RuntimeError(f"apt-get download left no {deb_path(debs, p, k['version'])}")
        tmp = unpacked + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "boot"))
        for p in pkgs:
            run(["dpkg-deb", "-x", deb_path(debs, p, k["version"]), tmp])
        moddir = os.path.join(tmp, "usr", "lib", "modules", release)
        for name in ("vmlinuz", "config", "System.map"):
            src = os.path.join(moddir, name)
            if os.path.exists(src) and not os.path.exists(
                    os.path.join(tmp, "boot", f"{name}-{release}")):
                os.rename(src, os.path.join(tmp, "boot", f"{name}-{release}"))
        if len(pkgs) > 1 and os.path.isdir(moddir):
            run(["depmod", "-b", os.path.join(tmp, "usr"), release])
        if not os.path.exists(os.path.join(tmp, "boot", f"vmlinuz-{release}")):
            raise RuntimeError(f"no kernel image in {', '.join(pkgs)}={k['version']}")
        shutil.rmtree(unpacked, ignore_errors=True)
        os.rename(tmp, unpacked)
    return unpacked, kimg, config, release


def kernel_config(path: str) -> dict[str, str]:
    cfg = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("CONFIG_") and "=" in line:
                    key, val = line.strip().split("=", 1)
                    cfg[key] = val
    except OSError:
        pass
    return cfg
