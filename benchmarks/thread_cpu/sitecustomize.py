"""CPU seconds so far of each Python thread of a process (``sbert serve`` only), written as JSON
every 0.25 s to ``$SBERT_THREAD_CPU.PID.json``: ``benchmarks/serve_engine.py --threads`` puts this
folder first on the server's ``PYTHONPATH`` and reads the file before and after each phase. Python 3.11 gives its threads no OS name, so /proc
cannot tell the batcher from the event loop; ``time.pthread_getcpuclockid`` of each
``threading.Thread`` can. A thread that ended keeps its last reading.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

OUTPUT = os.environ.get("SBERT_THREAD_CPU")


def _watch() -> None:
    seconds: dict[str, float] = {}
    path = f"{OUTPUT}.{os.getpid()}.json"
    while True:
        for thread in threading.enumerate():
            if thread.ident is None:
                continue
            try:
                clock = time.pthread_getcpuclockid(thread.ident)
                seconds[thread.name] = time.clock_gettime(clock)
            except (OSError, ProcessLookupError):  # it ended meanwhile
                continue
        with open(f"{path}.part", "w") as file:
            json.dump(seconds, file)
        os.replace(f"{path}.part", path)  # a reader never sees half a file
        time.sleep(0.25)


if OUTPUT and sys.argv[1:2] == ["serve"]:
    threading.Thread(target=_watch, name="thread-cpu", daemon=True).start()
