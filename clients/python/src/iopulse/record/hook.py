"""A tool's hook into a running `iopulse record`: `python3 hook.py SOCKET enter|leave KEY`.

Run as a plain script (standard library only, so it starts in milliseconds without grpc): it
asks the recorder to mark the phases of KEY on every daemon and returns once they are marked,
so IO the tool starts afterwards is counted inside the phase. It always exits 0: a failed mark
must not fail the benchmark (fio aborts a job whose exec_prerun fails); it says so on stderr.
It prints nothing on success (fio's stdout may be its JSON report).
"""
import json
import socket
import sys


def _printable(s: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def main(argv: list) -> int:
    if len(argv) != 4 or argv[2] not in ("enter", "leave"):
        sys.stderr.write("usage: hook.py SOCKET enter|leave KEY\n")
        return 0
    sock_path, op, key = argv[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(60)
            s.connect(sock_path)
            s.sendall(json.dumps({"op": op, "key": key}).encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        r = json.loads(reply or b"{}")
        if not r.get("ok"):
            why = _printable(str(r.get("error", "no reply")))
            sys.stderr.write(f"iopulse record: phase {op} {key}: {why}\n")
    except (OSError, ValueError) as e:
        sys.stderr.write(f"iopulse record: phase {op} {key}: the recorder is not reachable "
                         f"at {_printable(sock_path)}: {e}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
