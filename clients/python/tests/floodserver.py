"""A daemon that floods: `python floodserver.py SOCKET DEVICES` serves Subscribe on a unix
socket, sending the same Update of DEVICES devices (29,000: 3.9 MB, under gRPC's 4 MiB limit)
back to back, as fast as the client takes them. Prints 'ready' once it serves."""
from __future__ import annotations

import sys
import time
from typing import Any

from fakes import FakeTelemetry, make_update, serve


class Flood(FakeTelemetry):
    def __init__(self, devices: int) -> None:
        super().__init__(period=0.0)
        self.msg = make_update(1, devices=("sd0",))
        one = self.msg.devices[0]
        for i in range(1, devices):
            d = self.msg.devices.add()
            d.CopyFrom(one)
            d.name, d.minor = f"sd{i}", i % 1024
        self.size = self.msg.ByteSize()

    def Subscribe(self, request: Any, context: Any) -> Any:
        context.send_initial_metadata(())
        seq = 0
        while context.is_active():
            seq += 1
            self.msg.seq = self.msg.first_seq = seq
            yield self.msg


def main() -> None:
    fake = Flood(int(sys.argv[2]))
    server = serve(fake, f"unix:{sys.argv[1]}")
    print(f"ready {fake.size}", flush=True)
    try:
        time.sleep(3600)
    finally:
        server.stop(None)


if __name__ == "__main__":
    main()
