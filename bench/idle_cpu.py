"""CPU an idle mail server costs: the ``mailserver serve`` process and RabbitMQ's ``beam.smp``.

    .venv/bin/python bench/idle_cpu.py [--settle 10] [--seconds 20] [--threads]

Starts a world of its own as ``bench/smtp_intake.py`` does (keyspace, RabbitMQ vhost, bucket,
``mailserver serve`` with every role and the shipped mailetcontainer.yaml), creates one domain and
one user, lets it settle, then reads the CPU time of both processes over ``--seconds`` with
nothing sent to it. Figures are percent of one core. ``beam.smp`` serves every vhost of the broker:
on a shared machine its figure includes the other users' servers and tests, so it is also read
over the same span before the server starts (``beam before``), and the difference is what this
server adds. ``--threads`` lists the busiest threads of the server by CPU time (Linux thread ids;
the server logs the thread names with ``MAILSERVER_LOG_FORMAT=json``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from smtp_intake import World


def beam() -> psutil.Process | None:
    for process in psutil.process_iter(["name", "cmdline"]):
        if process.info["name"] == "beam.smp" or "beam.smp" in " ".join(process.info["cmdline"] or []):
            return process
    return None


def cpu_seconds(process: psutil.Process | None) -> float:
    if process is None:
        return float("nan")
    times = process.cpu_times()
    return times.user + times.system


def percent_over(processes: dict[str, psutil.Process | None], seconds: float) -> dict[str, float]:
    before = {name: cpu_seconds(p) for name, p in processes.items()}
    start = time.monotonic()
    time.sleep(seconds)
    span = time.monotonic() - start
    return {name: 100 * (cpu_seconds(p) - before[name]) / span for name, p in processes.items()}


def busiest_threads(process: psutil.Process, seconds: float) -> list[tuple[int, float]]:
    before = {t.id: t.user_time + t.system_time for t in process.threads()}
    time.sleep(seconds)
    after = {t.id: t.user_time + t.system_time for t in process.threads()}
    used = [(tid, 100 * (spent - before.get(tid, 0.0)) / seconds) for tid, spent in after.items()]
    return sorted(used, key=lambda x: -x[1])[:8]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", action="store_true")
    args = parser.parse_args()
    broker = beam()
    beam_before = percent_over({"beam": broker}, args.seconds)["beam"]
    tag = uuid.uuid4().hex[:8]
    world = World(tag, Path(tempfile.mkdtemp(prefix="idle-cpu-")), keep_log=False)
    try:
        world.open("idle.bench.test", "idle")
        time.sleep(args.settle)
        server = psutil.Process(world.pid)
        figures = percent_over({"mailserver": server, "beam": broker}, args.seconds)
        print(f"idle over {args.seconds:.0f} s (after {args.settle:.0f} s settling), percent of one core: "
              f"mailserver {figures['mailserver']:.2f} %, beam.smp {figures['beam']:.2f} % "
              f"(beam before the server started {beam_before:.2f} %), threads {server.num_threads()}, "
              f"AMQP connections {sum(1 for c in server.net_connections('tcp') if c.raddr and c.raddr.port == 5672)}")
        if args.threads:
            for tid, percent in busiest_threads(server, args.seconds):
                print(f"  thread {tid}: {percent:.2f} %")
    finally:
        world.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
