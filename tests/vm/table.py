#!/usr/bin/python3
"""Prints the VM matrix's results.json (tests/vm/matrix.py) as a Markdown table.

    tests/vm/table.py [build/vm-matrix/results.json]
"""
import json
import os
import sys


def esc(s):
    return str(s).replace("|", "\\|")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "vm-matrix", "results.json")
    with open(path) as f:
        res = json.load(f)
    kernels = {k["label"]: k for k in res["kernels"]}
    modes = res.get("modes") or ["full"]
    print(f"| kernel | controller | scheduler | IOs (diskstats) | IOs (iopulse: "
          f"{' / '.join(modes)}) | timed "
          "| latency (blktrace) | fdatasync (fio / iopulse) | passthrough (sent / diskstats) "
          "| iopulsed | result |")
    print("|---|---|---|---:|---:|---:|---|---:|---:|---|---|")
    for c in res["cells"]:
        k = kernels.get(c["kernel"], {})
        kname = f"{c['kernel']} ({k.get('version', '?')})"
        f = c.get("features") or {}
        feat = "-"
        if f.get("attach"):
            feat = f"{f['attach']}, sync {f.get('sync')}"
            if f.get("sync_off_reason"):
                feat += f" ({f['sync_off_reason']})"
        cov = c.get("coverage")
        cov = f"{100 * cov:.2f}%" if cov is not None else "-"
        sync = "-"
        if "fio_sync" in c:
            sync = f"{c['fio_sync']} / {'off' if c.get('sync_off') else c['iopulse_sync']}"
        pt = c.get("passthrough")
        pts = "-"
        if pt:
            pts = f"{pt['sent']} / {pt['diskstats']}"
            if "diskstats_iostats_passthrough" in pt:
                pts += f"; {pt['diskstats_iostats_passthrough']} with iostats_passthrough"
        lat = c.get("latency")
        lats = "-"
        if lat:
            n = sum(d.get("ios", 0) for d in lat.get("disks", {}).values())
            off = [m for m, st in lat.get("modes", {}).items() if st["status"] != "ok"]
            lats = "ok" if lat["status"] == "ok" else \
                "**OFF**" + (f" ({', '.join(off)})" if off else "")
            lats += f", {n} IOs"
        ios = [c.get("iopulse_ios", "-")] + [
            (c.get("modes") or {}).get(m, {}).get("iopulse_ios", "-") for m in modes[1:]]
        result = "pass" if not c["reasons"] else \
            ("known failure: " if c.get("known") else "**FAIL**: ") + "; ".join(c["reasons"])
        ctl = c["controller"]
        if "per_disk" in c:     # the stacked and tuned-queue cells: device > disks
            ctl += f" ({c['disk']})"
            if c.get("requeues"):
                ctl += f", {c['requeues']} requeues"
        print(f"| {esc(kname)} | {esc(ctl)} | {c['scheduler']} "
              f"| {c.get('diskstats_ios', '-')} | {' / '.join(map(str, ios))} | {cov} "
              f"| {lats} | {sync} | {esc(pts)} | {esc(feat)} | {esc(result)} |")
    print()
    print(f"{res.get('passed', '?')} cells passed, {res.get('failed', '?')} failed, "
          f"{res.get('known', 0)} known failures (tests/vm/known-failures.txt); "
          f"fio jobs of {res.get('fio_seconds')} s, all at once, under qemu TCG "
          f"(counts are exact, timings mean nothing); {res.get('seconds', 0):.0f} s in all.")
    # the failed cells once more, last: a log that keeps only its tail still names them
    for c in res["cells"]:
        if c["reasons"] and not c.get("known"):
            print(f"FAILED: {c['kernel']} {c['controller']} ({c.get('disk', '-')}) "
                  f"{c['scheduler']}: {'; '.join(c['reasons'])}")


if __name__ == "__main__":
    main()
