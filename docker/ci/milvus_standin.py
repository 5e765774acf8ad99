"""Entry point of the CI's Milvus stand-in image: a Milvus 2.3.5 standalone server from PyPI's ``milvus`` package.

    python3 milvus_standin.py --data /var/lib/milvus --port 19530 --http-port 9091

CI reaches no image registry, so docker/ci/balancer-run.sh cannot pull ``milvusdb/milvus``; this
runs the same server binary (embedded etcd, local storage) that the PyPI package ships. Under host
networking every port must be free on the host, so its embedded etcd gets its client and peer ports
from ``--etcd-port``/``--etcd-peer-port`` (free ones by default) instead of the fixed 2379/2380 the
package leaves it. The health endpoint is ``http://127.0.0.1:<http-port>/healthz``; SIGTERM stops
the server. Standard library plus the ``milvus`` package.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("/var/lib/milvus"))
    p.add_argument("--port", type=int, default=19530, help="the gRPC port clients use")
    p.add_argument("--http-port", type=int, default=9091, help="/healthz and metrics")
    p.add_argument("--etcd-port", type=int, default=0, help="embedded etcd's client port (0: a free one)")
    p.add_argument("--etcd-peer-port", type=int, default=0, help="embedded etcd's peer port (0: a free one)")
    args = p.parse_args()

    from milvus import MilvusServer  # the PyPI package ``milvus`` (2.3.5)

    etcd_port = args.etcd_port or free_port()
    peer_port = args.etcd_peer_port or free_port()
    args.data.mkdir(parents=True, exist_ok=True)
    etcd_conf = args.data / "embed-etcd.yaml"
    etcd_conf.write_text(
        f"name: standin\n"
        f"listen-client-urls: http://127.0.0.1:{etcd_port}\n"
        f"advertise-client-urls: http://127.0.0.1:{etcd_port}\n"
        f"listen-peer-urls: http://127.0.0.1:{peer_port}\n"
        f"initial-advertise-peer-urls: http://127.0.0.1:{peer_port}\n"
        f"initial-cluster: standin=http://127.0.0.1:{peer_port}\n"
    )

    server = MilvusServer(wait_for_started=False)
    server.set_base_dir(str(args.data))
    server.listen_port = args.port
    server.webservice_port = args.http_port
    server.config.set("etcd_port", etcd_port)
    # The package's template has no etcd.config.path; the server reads it (embed.ConfigFromFile).
    server.config.template_text = server.config.template_text.replace("etcd:\n", f"etcd:\n  config:\n    path: {etcd_conf}\n", 1)
    # Strong reads wait for the next time tick: 200 ms by default, 20 ms here, as in the tests.
    server.config.set("proxy.timeTickInterval", 20)

    def stop(signum: int, _frame: object) -> None:
        print(f"milvus stand-in: signal {signum}, stopping", flush=True)
        server.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.start()
    log = args.data / "logs" / "milvus-stdout.log"
    print(
        f"milvus stand-in: pid {server.server_proc.pid}, gRPC 127.0.0.1:{args.port}, http {server.webservice_port}, "
        f"etcd {etcd_port}/{peer_port}, data {args.data}, log {log}",
        flush=True,
    )
    while (code := server.server_proc.poll()) is None:
        time.sleep(1)
    print(f"milvus stand-in: the server exited with code {code}; last lines of {log}:", flush=True)
    print("\n".join(log.read_text(errors="replace").splitlines()[-40:]), flush=True)
    return code or 1


if __name__ == "__main__":
    sys.exit(main())
