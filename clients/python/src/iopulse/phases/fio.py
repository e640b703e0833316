"""fio: phases from its jobs and stonewall groups.

Live (iopulse record -- fio ...): every job gets exec_prerun/exec_postrun hooks that mark its
begin and end through the recorder. fio runs exec_prerun in the job's thread right before its
first IO and exec_postrun after its last completion (backend.c, thread_main), so the edges are
exact.

fio runs a hook as system("HOOK > JOBNAME.prerun.txt 2>&1") with the job name unquoted, so a
job named `x$(cmd)` would run cmd. Our hook command therefore ends in a shell comment: the
shell never reads what fio appends, the job name is never interpreted and no output file is
made. fio cuts job-file lines at '#' and ';', so in a job file the '#' comes from fio's own
${VAR} substitution of FIO_COMMENT_VAR, which the recorder sets to '#'; on the command line
(not cut there) it is written as is. A comment ends at a line break, so a command-line job
name holding one is refused (a job-file section name cannot hold one). Where the job has a
hook of its own, ours runs first and the user's follows unchanged, with fio's redirection
applying to it as it would under plain fio.

Clones of a job (numjobs) share one phase, from the first clone's start to the last clone's
end; a stonewall group of several jobs gets a phase around them.

After the fact (iopulse phases import run.json): from fio's JSON output. fio >= 3.36 writes
each job's start (job_start, ms) and run time (job_runtime, ms): edges accurate to 1 ms plus
clock offset. Older fio (Debian 12 has 3.33) writes only the time the report was made and
each job's run time: edges are reconstructed backwards from the end, accurate to 0.5 s for
the last stonewall group plus 0.5 s for each group after a phase's.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .fio_devices import job_devices
from .model import DEVICES_LABEL

# Options that take their value as the next argument on fio's command line.
_ARG_OPTS = {"--output", "--output-format", "--runtime", "--section", "--alloc-size",
             "--max-jobs", "--client", "--server", "--remote-config", "--idle-prof",
             "--inflate-log", "--trigger-file", "--trigger-timeout", "--trigger",
             "--trigger-remote", "--aux-path", "--debug", "--status-interval",
             "--merge-blktrace-file", "--eta", "--eta-interval", "--eta-newline",
             "--latency-log", "--bandwidth-log", "--cmdhelp", "--enghelp", "--crctest"}
LABEL_DEFAULTS = {"rw": "read", "bs": "4k", "iodepth": "1", "numjobs": "1", "ioengine": "psync"}
_ALIASES = {"readwrite": "rw", "blocksize": "bs"}


FIO_COMMENT_VAR = "IOPULSE_FIO_COMMENT"     # set to '#' in fio's environment by record


class FioJobFileError(ValueError):
    pass


def chain_hook(ours: str, user: Optional[str], comment: str) -> str:
    """The exec_postrun value: our end mark with its output discarded, then either the user's
    own hook (which gets fio's redirection, as under plain fio) or a shell comment that hides
    what fio appends (the job name) from the shell."""
    if user:
        return f"{ours} >/dev/null && {user}"
    return f"{ours} >/dev/null {comment}"


def chain_prerun(ours: str, user: Optional[str], comment: str, job: str) -> str:
    """The exec_prerun value: the user's own preparation first (dropping caches,
    preconditioning, a trim: its IO stays out of the job's phase), its output where fio puts
    it (JOB.prerun.txt), and only if it succeeded, as fio runs the job only then, our begin
    mark; then the comment that hides what fio appends."""
    if user:
        out = shlex.quote(f"{job}.prerun.txt")
        return f"( {user} ) >{out} 2>&1 && {ours} >/dev/null {comment}"
    return f"{ours} >/dev/null {comment}"


# Hooks given on fio's command line before a job file reach that file's jobs through these
# variables (fio expands ${VAR} in job files; a value written into the file could hold the
# ';' or '#' that end a job-file line).
CMD_HOOK_VARS = {"exec_prerun": "IOPULSE_FIO_PRERUN", "exec_postrun": "IOPULSE_FIO_POSTRUN"}
_HOOKS = ("exec_prerun", "exec_postrun")
_SPACED = ("name",) + _HOOKS     # options record reads that fio also takes as "-opt value"


def job_name_from_header(line: str) -> str:
    """A section header's job name as fio takes it: the line cut at ';'/'#' and stripped,
    then everything between its first and last character ('[job#1]' is job 'jo')."""
    return line[1:-1] if len(line) >= 2 else ""


@dataclass
class Job:
    index: int
    name: str
    group: int
    labels: dict[str, str]


@dataclass
class Plan:
    """What record does to a fio command: its new argv and the phases of each hook key."""
    argv: list[str]
    jobs: list[Job] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)   # for fio's environment (CMD_HOOK_VARS)

    def phases_of(self, key: str) -> list[tuple[str, str, dict[str, str]]]:
        """(phase id, name, labels) the hook key enters, outermost first."""
        j = self.jobs[int(key[3:])]
        members = [x for x in self.jobs if x.group == j.group]
        out = []
        if len(members) > 1:
            out.append((f"group{j.group}", f"group{j.group + 1}",
                        {"jobs": ",".join(x.name for x in members),
                         "group": str(j.group + 1)}))
        out.append((key, j.name, dict(j.labels, group=str(j.group + 1))))
        return out

    def ends_before(self, key: str) -> list[str]:
        """The phase ids that are over once hook key enters, innermost first: fio starts a
        stonewall group only when every job before it is done, so a phase of an earlier group
        still open then is a job's that died without running its exec_postrun (and its
        group's)."""
        g = self.jobs[int(key[3:])].group
        earlier = [x for x in self.jobs if x.group < g]
        return [f"job{x.index}" for x in earlier] + \
            [f"group{n}" for n in sorted({x.group for x in earlier})]


def _option(line: str) -> tuple[str, str]:
    k, sep, v = line.partition("=")
    return _ALIASES.get(k.strip(), k.strip()), v.strip() if sep else ""


def _strip(line: str) -> str:
    """A job-file line as fio reads it: comments (from ';' or '#') and blanks removed."""
    for c in ";#":
        i = line.find(c)
        if i >= 0:
            line = line[:i]
    return line.strip()


def _labels(opts: dict[str, str]) -> dict[str, str]:
    return {k: opts.get(k, d) or d for k, d in LABEL_DEFAULTS.items()}


# iopulsed takes label values of up to 1,024 characters; a job on more devices than that
# names keeps every device's rows (no label)
DEVICES_LABEL_MAX = 1000


def _job_labels_with_devices(opts: dict[str, str]) -> dict[str, str]:
    """A job phase's labels: its options', and the devices its files are on (fio_devices)
    where they resolve here."""
    out = _labels(opts)
    devs = ",".join(job_devices(opts))
    if devs and len(devs) <= DEVICES_LABEL_MAX:
        out[DEVICES_LABEL] = devs
    return out


def _new_group(opts: dict[str, str]) -> bool:
    return any(k in opts and opts[k].lower() not in ("0", "false") for k in
               ("stonewall", "wait_for_previous"))


def _resolve_include(name: str, jobfile: str) -> str:
    """As fio does: relative to the working directory, else to the job file's directory."""
    if os.path.exists(name) or "/" not in jobfile:
        return os.path.abspath(name)
    return os.path.join(os.path.dirname(os.path.abspath(jobfile)), name)


def rewrite_job_file(path: str, hook: Callable[[str, str], str], first_index: int,
                     first_group: int, out_dir: str,
                     inherited: Optional[dict[str, str]] = None) -> tuple[str, list[Job]]:
    """A copy of job file path in out_dir with hooks added to every job section. hook(kind,
    key) gives the command for exec_prerun (kind "enter") / exec_postrun ("leave").
    inherited: options every job starts with (fio's command line before the file)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FioJobFileError(f"fio job file {path}: {e.strerror}") from None
    glob: dict[str, str] = dict(inherited or {})
    sections: list[tuple[str, int, dict[str, str]]] = []    # name, header line, options
    cur: Optional[dict[str, str]] = None
    for n, raw in enumerate(lines):
        line = _strip(raw)
        if not line:
            continue
        if line.startswith("["):
            name = job_name_from_header(line)
            if name.startswith("global"):       # fio: strncmp(name, "global", 6)
                cur = glob
            else:
                cur = dict(glob)
                sections.append((name, n, cur))
            continue
        if line.startswith("include ") or line.startswith("include\t"):
            continue
        if cur is None:
            raise FioJobFileError(f"fio job file {path}:{n + 1}: option before any [section]")
        k, v = _option(line)
        cur[k] = v
    jobs: list[Job] = []
    group = first_group
    inserts: dict[int, list[str]] = {}
    for i, (name, at, opts) in enumerate(sections):
        if (jobs or first_index) and _new_group(opts):
            group += 1
        idx = first_index + i
        jobs.append(Job(idx, opts.get("name") or name, group, _job_labels_with_devices(opts)))
        comment = "${" + FIO_COMMENT_VAR + "}"
        pre = chain_prerun(hook("enter", f"job{idx}"), opts.get("exec_prerun"), comment,
                           opts.get("name") or name)
        post = chain_hook(hook("leave", f"job{idx}"), opts.get("exec_postrun"), comment)
        inserts[at] = [f"exec_prerun={pre}", f"exec_postrun={post}"]
    out = []
    for n, raw in enumerate(lines):
        s = _strip(raw)
        if s.startswith("include ") or s.startswith("include\t"):
            raw = "include " + _resolve_include(s[len("include"):].strip(), path)
        elif s.startswith("exec_prerun") or s.startswith("exec_postrun"):
            raw = "; " + raw            # chained into ours above
        out.append(raw)
        out.extend(inserts.get(n, []))
    dst = os.path.join(out_dir, f"{len(os.listdir(out_dir))}-{os.path.basename(path)}")
    with open(dst, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(out) + "\n")
    return dst, jobs


def plan(argv: list[str], hook: Callable[[str, str], str], out_dir: str) -> Plan:
    """Hooks for every job of `fio ARGS...`: job files are copied into out_dir with hooks;
    jobs given on the command line (--name=...) get --exec_prerun/--exec_postrun."""
    new = [argv[0]]
    p = Plan(new)
    i = 1
    cmd_glob: dict[str, str] = {}
    cmd_job: Optional[dict[str, str]] = None
    files: list[str] = []
    group = 0

    def close_cmd_job() -> None:
        nonlocal group
        if cmd_job is None:
            return
        idx = len(p.jobs)
        if p.jobs and _new_group(cmd_job):
            group += 1
        name = cmd_job["name"]
        if "\n" in name or "\r" in name:
            raise FioJobFileError(f"fio job name {name!r} (--name on the command line) holds a "
                                  "line break: record cannot mark it safely (fio would hand "
                                  "it to the shell); rename the job or use --no-detect")
        p.jobs.append(Job(idx, name, group, _job_labels_with_devices(cmd_job)))
        key = f"job{idx}"
        pre = chain_prerun(hook("enter", key), cmd_job.get("exec_prerun"), "#", name)
        post = chain_hook(hook("leave", key), cmd_job.get("exec_postrun"), "#")
        new.extend([f"--exec_prerun={pre}", f"--exec_postrun={post}"])

    after_file: Optional[str] = None    # the job file given last, while no job follows it
    while i < len(argv):
        a = argv[i]
        if a in _ARG_OPTS and i + 1 < len(argv):
            new.extend(argv[i:i + 2])
            i += 2
            continue
        k0 = a.lstrip("-").partition("=")[0]
        if a.startswith("-") and k0 in _SPACED:
            # fio takes -opt=value, --opt value and -opt value as --opt=value
            if "=" not in a:
                if i + 1 >= len(argv):
                    raise FioJobFileError(f"fio: {a} without a value")
                a = f"--{k0}={argv[i + 1]}"
                i += 1
            else:
                a = "--" + a.lstrip("-")
            if k0 in _HOOKS and cmd_job is None and after_file is not None:
                raise FioJobFileError(
                    f"fio: {a.partition('=')[0]} after job file {after_file} applies to its "
                    "last job only (fio); record cannot chain it there: put it in the job "
                    "file, or before the job file for all its jobs, or use --no-detect")
        if a.startswith("--name="):
            close_cmd_job()
            cmd_job = dict(cmd_glob, name=a[len("--name="):])
        elif a.startswith("--") and "=" in a or a.startswith("--") and a[2:] in (
                "stonewall", "wait_for_previous"):
            k, v = _option(a[2:])
            (cmd_job if cmd_job is not None else cmd_glob)[k] = v
            if k in ("exec_prerun", "exec_postrun"):
                i += 1          # chained into ours when the job closes, not passed on
                continue
        elif not a.startswith("-") and os.path.isfile(a):
            close_cmd_job()
            cmd_job = None
            # the command line's options before the first job file are its jobs' defaults
            # (fio resets them for a later file): its hooks reach them through variables
            inherited = {}
            if not files:
                for k, var in CMD_HOOK_VARS.items():
                    if cmd_glob.get(k):
                        p.env[var] = cmd_glob[k]
                        inherited[k] = "${" + var + "}"
            files.append(a)
            dst, jobs = rewrite_job_file(a, hook, len(p.jobs),
                                         group + 1 if p.jobs else 0, out_dir, inherited)
            after_file = a
            if jobs:
                group = jobs[-1].group
            p.jobs.extend(jobs)
            new.append(dst)
            i += 1
            continue
        if a.startswith("--name="):
            after_file = None
        new.append(a)
        i += 1
    close_cmd_job()
    if not p.jobs:
        p.notes.append("fio: no jobs found in the command line; only the command is a phase")
    return p


def hook_command(python: str, hook_path: str, sock: str) -> Callable[[str, str], str]:
    def cmd(kind: str, key: str) -> str:
        return " ".join(shlex.quote(x) for x in (python, "-I", "-S", hook_path, sock, kind, key))
    return cmd


# ------------------------------------------------------------------ JSON import --

def _job_labels(job: dict[str, Any]) -> dict[str, str]:
    opts = {**{k: str(v) for k, v in job.get("job options", {}).items()}}
    opts = {_ALIASES.get(k, k): v for k, v in opts.items()}
    return _labels(opts)


def phases_from_json(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Phase records (run-file 'phase' events) from a parsed fio JSON output."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("no 'jobs' list: not fio --output-format=json output")
    glob = {_ALIASES.get(k, k): str(v) for k, v in doc.get("global options", {}).items()}
    out: list[dict[str, Any]] = []
    if all(j.get("job_start") for j in jobs):
        for j in jobs:
            start = int(j["job_start"]) * 1_000_000
            end = start + int(j.get("job_runtime", 0)) * 1_000_000
            out.append(_event(j, glob, start, end, 0.001, "fio-json"))
        return out
    # fio < 3.36: the report's time is the end of the last group; walk back one stonewall
    # group after another by its longest job_runtime ("elapsed" is the whole run's seconds,
    # the same in every job). What fio spends between groups is not in the output: edges
    # drift by that much per group (measured 0.3-0.4 s on a loop device), stated as 0.5 s
    # for the last group plus 0.5 s for each group after it.
    end_ms = int(doc.get("timestamp_ms") or int(doc["timestamp"]) * 1000)
    groups: dict[int, list[dict[str, Any]]] = {}
    for j in jobs:
        groups.setdefault(int(j.get("groupid", 0)), []).append(j)
    t = end_ms * 1_000_000
    for after, gid in enumerate(sorted(groups, reverse=True)):
        members = groups[gid]
        longest = max(int(j.get("job_runtime", 0)) for j in members) * 1_000_000
        start = t - longest
        for j in members:
            run = int(j.get("job_runtime", 0)) * 1_000_000
            out.append(_event(j, glob, start, start + run, 0.5 + 0.5 * after, "fio-json"))
        t = start
    out.sort(key=lambda e: e["start_realtime_ns"])
    return out


def _event(job: dict[str, Any], glob: dict[str, str], start: int, end: int, acc: float,
           source: str) -> dict[str, Any]:
    opts = dict(glob)
    opts.update({_ALIASES.get(k, k): str(v) for k, v in job.get("job options", {}).items()})
    labels = _job_labels_with_devices(opts)
    labels["group"] = str(int(job.get("groupid", 0)) + 1)
    return {"type": "phase", "name": str(job.get("jobname", "job")), "labels": labels,
            "source": source, "accuracy_s": acc, "start_realtime_ns": start,
            "end_realtime_ns": end}
