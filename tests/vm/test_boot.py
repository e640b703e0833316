"""When the VM matrix boots a guest again: only when its kernel died before the guest script
printed anything (matrix.died_before_script), never when the script ran."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from matrix import died_before_script  # noqa: E402

BOOT = "[    1.98] virtme initramfs: loading netfs.ko.xz...\n"
OOPS = ("[    2.83] Oops: int3: 0000 [#1] SMP NOPTI\n"
        "[    2.83] RIP: 0010:sched_clock_cpu+0x9/0x230\n"
        "[    2.84] Kernel panic - not syncing: Fatal exception in interrupt\n")
RAN = "[guest     62.0] kernel 7.2.13+deb14-amd64; loading drivers\n"


def test_a_kernel_that_died_booting_is_named_by_its_first_line():
    assert died_before_script(BOOT + OOPS) == "Oops: int3: 0000 [#1] SMP NOPTI"
    assert died_before_script(BOOT + OOPS.split("\n", 2)[2]) == \
        "Kernel panic - not syncing: Fatal exception in interrupt"


def test_a_guest_whose_script_ran_is_not_booted_again():
    assert died_before_script(BOOT + RAN + OOPS) == ""


def test_a_boot_without_a_panic_is_not_booted_again():
    assert died_before_script(BOOT) == "" and died_before_script("") == ""
