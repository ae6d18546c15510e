"""The metrics agent (`status`, and the follower's periodic read after ready): the engines' own Prometheus figures.

Sent on stdin to the host's python after common.py: `python3 - '<json args>'`. Args: {"ports": [30000, ...],
"names": ["sglang:num_running_reqs", ...], "interval_s": 1.0}. GETs http://127.0.0.1:PORT/metrics for every port,
waits interval_s, and GETs them again (a counter's rate needs two points: vLLM publishes generated tokens only as
a counter). Only the lines of the wanted metric families travel back (a vLLM scrape is mostly histogram buckets).
Prints one JSON object: {"PORT": {"a": TEXT, "b": TEXT, "dt": SECONDS} | {"error": WHY}}. Standard library only.
"""

import json
import sys
import time
import urllib.error
import urllib.request

MAX_BYTES = 4 << 20


def scrape(port, names):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=3) as response:
            text = response.read(MAX_BYTES).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return None, "HTTP %d from /metrics" % exc.code
    except Exception as exc:  # noqa: BLE001 - refused, reset, timeout: said as it is
        return None, "no answer from /metrics (%s)" % exc.__class__.__name__
    kept = []
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            name = line.split(" ", 3)[2] if len(line.split(" ")) > 2 else ""
        elif line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
        else:
            continue
        if any(name == n or name.startswith(n + "_") for n in names):
            kept.append(line)
    return "\n".join(kept) + "\n", None


def main():
    args = json.loads(sys.argv[1])
    ports, names = [int(p) for p in args["ports"]], list(args["names"])
    first = {}
    started = time.time()
    for port in ports:
        first[port] = scrape(port, names)
    time.sleep(float(args.get("interval_s", 1.0)))
    dt = time.time() - started
    out = {}
    for port in ports:
        text_a, error = first[port]
        text_b, error_b = scrape(port, names) if error is None else (None, error)
        out[str(port)] = {"error": error or error_b} if (error or error_b) else {"a": text_a, "b": text_b, "dt": dt}
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
