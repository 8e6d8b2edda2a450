"""Produce and consume over TLS against plaintext: one broker, both listeners, one run.

    .venv/bin/python benchmarks/broker_tls.py [--records 500000] [--size 100] [--rounds 3]

The built-in broker (fsync on) listens on PLAINTEXT and on SASL_SSL (TLS 1.2+, SCRAM-
SHA-512 login once per connection); the same librdkafka producer and consumer as
``broker_throughput.py`` write N records to a fresh 3-partition topic and read them
back, through each listener in turn, alternating over the rounds. The figure that
matters is the median ratio TLS/plaintext (goal: at least 0.6).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from broker_throughput import consume, create_topic, free_port, produce, wait_listening

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from certs import make_certificates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headrace-tls-bench-"))
    certs = make_certificates(work / "certs")
    data = work / "data"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "headrace",
            "users",
            "add",
            "bench",
            "--password-stdin",
            "--data-dir",
            str(data),
        ],
        input="bench-pw\n",
        text=True,
        check=True,
        capture_output=True,
    )
    plain, tls = free_port(), free_port()
    config = work / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{tls}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={certs.server_keystore}\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headrace",
            "broker",
            "--config",
            str(config),
            "--data-dir",
            str(data),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    listeners = {
        "plaintext": (f"127.0.0.1:{plain}", {}),
        "tls (SASL_SSL)": (
            f"127.0.0.1:{tls}",
            {
                "security.protocol": "sasl_ssl",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "bench",
                "sasl.password": "bench-pw",
                "ssl.ca.location": str(certs.ca),
            },
        ),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in listeners}
    try:
        wait_listening(plain, proc)
        wait_listening(tls, proc)
        print(f"{args.records:,} records of {args.size} bytes, librdkafka acks=all, fsync on")
        for round_ in range(args.rounds):
            for name, (bs, extra) in listeners.items():
                topic = f"bench-{round_}-{name.split()[0]}"
                create_topic(bs, topic, extra)
                p = produce(bs, args.records, args.size, topic, extra)
                c = consume(bs, args.records, topic, extra)
                results[name].append((args.records / p, args.records / c))
                print(
                    f"{name:<16} produce {args.records / p:>10,.0f} rec/s"
                    f"   consume {args.records / c:>10,.0f} rec/s",
                    flush=True,
                )
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    pairs = list(zip(results["tls (SASL_SSL)"], results["plaintext"], strict=True))
    print(
        f"median ratio tls/plaintext over {args.rounds} rounds:"
        f"   produce {median(t[0] / p[0] for t, p in pairs):.2f}"
        f"   consume {median(t[1] / p[1] for t, p in pairs):.2f}"
    )


if __name__ == "__main__":
    main()
