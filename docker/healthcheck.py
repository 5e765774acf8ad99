"""Container health check: exit 0 when the server's ``/ready`` answers 200, 1 otherwise.

Runs inside the container (the image has no curl). It reads the same ``THOUGHTVEC_*`` variables as
the server: the port, the bind address, and the first API key when keys are configured (``/ready``
needs one then; only ``/health`` does not).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def main() -> int:
    host = os.environ.get("THOUGHTVEC_HOST", "127.0.0.1")
    if host in ("0.0.0.0", "::", ""):  # bound to every address: loopback is one of them
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    port = os.environ.get("THOUGHTVEC_PORT", "8000")
    request = urllib.request.Request(f"http://{host}:{port}/ready")
    keys = [k.strip() for k in os.environ.get("THOUGHTVEC_API_KEYS", "").split(",") if k.strip()]
    if keys:
        request.add_header("Authorization", f"Bearer {keys[0]}")
    try:
        with urllib.request.urlopen(request, timeout=4) as response:
            return 0 if response.status == 200 else 1
    except urllib.error.HTTPError as e:  # 503 while loading: say what is pending
        print(f"/ready: {e.code} {e.read(500).decode('utf-8', 'replace')}", file=sys.stderr)
        return 1
    except OSError as e:  # not listening yet
        print(f"/ready: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
