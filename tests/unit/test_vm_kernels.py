#!/usr/bin/env python3
"""tests/vm/kernels.txt parses, and the VM matrix finds the parts of Debian 14's split kernel
packages in an image package's record (tests/vm/fetch.py), without the network: records as
apt-cache shows them for a whole package (Debian 13) and a split one (Debian 14)."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
import fetch  # noqa: E402

WHOLE = """Package: linux-image-6.18.15+deb13-amd64
Version: 6.18.15-1~bpo13+1
Depends: kmod, linux-base (>= 4.12~), initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool
"""
SPLIT = """Package: linux-image-7.2.13+deb14-amd64
Version: 7.2.13-1
Depends: dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool, linux-base-7.2.13+deb14-amd64 (= 7.2.13-1), linux-binary-7.2.13+deb14-amd64 (= 7.2.13-1), linux-modules-7.2.13+deb14-amd64 (= 7.2.13-1)
Description: Linux 7.2.13 for 64-bit PCs
"""


def main() -> int:
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    check("a whole package has no parts", fetch.split_parts(WHOLE, "6.18.15-1~bpo13+1"), [])
    check("a split package's parts", fetch.split_parts(SPLIT, "7.2.13-1"),
          ["linux-base-7.2.13+deb14-amd64", "linux-binary-7.2.13+deb14-amd64",
           "linux-modules-7.2.13+deb14-amd64"])
    check("parts of another version are not its own", fetch.split_parts(SPLIT, "7.2.12-1"), [])

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm", "kernels.txt")
    rows = fetch.read_kernels(here)
    labels = [r["label"] for r in rows]
    check("labels are unique", len(set(labels)), len(labels))
    for r in rows:
        if not r["package"].startswith("linux-image-"):
            failures.append(f"kernels.txt {r['label']}: {r['package']} is not an image package")
        for item in filter(None, r["expect"].split(",")):
            if item.partition(":")[0] not in ("attach", "atomics", "sync", "flush_seq"):
                failures.append(f"kernels.txt {r['label']}: unknown expect key in {item}")
    if not any(r["label"].startswith("7.") for r in rows):
        failures.append("kernels.txt has no 7.x kernel")

    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write("# comment\n6.1 linux-image-6.1.0-56-amd64 6.1.192-2\n")
        f.flush()
        try:
            fetch.read_kernels(f.name)
            failures.append("a row of three fields was accepted")
        except ValueError as e:
            check("the error names the file and line", f"{f.name}:2:" in str(e), True)

    for x in failures:
        print("FAIL", x)
    print(f"test_vm_kernels: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
