"""The load agent (`bench` / `compare`): a short, bounded load against a ready server, from the host itself.

Sent on stdin to the host's python after common.py: `python3 - '<json args>'`. Args: {"port": 30000, "model":
"Qwen3.6-27B", "levels": [1, 8], "requests_per_level": 8, "max_tokens": 64, "timeout_s": 60}. For each concurrency
level, `level` threads send `requests_per_level` OpenAI-compatible completions (`stream: true`) to
http://127.0.0.1:PORT/v1/completions and time the first token and each later one (server-sent events); a server
that answers with one JSON body counts it as one chunk (first token = the whole answer, no inter-token times).
Bounded: at most 64 requests a level, max_tokens at most 512, every request under timeout_s.
Prints one JSON object: {"levels": [{"concurrency", "requests", "ok", "errors", "wall_s", "output_tokens",
"ttft_s": [...], "itl_s": [...]}]}. Standard library only.
"""

import json
import sys
import threading
import time
import urllib.request

PROMPT = "Explain, in a few sentences, why the sky looks blue during the day and red at sunset."


def one_request(port, model, max_tokens, timeout_s):
    body = json.dumps({"model": model, "prompt": PROMPT, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=body,
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    stamps, tokens = [], 0
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        if "event-stream" not in (response.headers.get("Content-Type") or ""):
            answer = json.loads(response.read().decode("utf-8", "replace"))
            stamps.append(time.perf_counter())
            tokens = int((answer.get("usage") or {}).get("completion_tokens") or 1)
        else:
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                if any(c.get("text") for c in chunk.get("choices") or []):
                    stamps.append(time.perf_counter())
                    tokens += 1
    ttft = stamps[0] - started if stamps else None
    itl = [b - a for a, b in zip(stamps, stamps[1:])]
    return ttft, itl, tokens


def run_level(port, model, concurrency, count, max_tokens, timeout_s):
    results, errors, lock = [], [], threading.Lock()
    todo = list(range(count))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            try:
                outcome = one_request(port, model, max_tokens, timeout_s)
                with lock:
                    results.append(outcome)
            except Exception as exc:  # noqa: BLE001 - refused, reset, timeout, bad JSON: said as it is
                with lock:
                    errors.append("%s: %s" % (exc.__class__.__name__, str(exc)[:200]))

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "concurrency": concurrency,
        "requests": count,
        "ok": len(results),
        "errors": errors[:5],
        "wall_s": time.perf_counter() - started,
        "output_tokens": sum(r[2] for r in results),
        "ttft_s": [r[0] for r in results if r[0] is not None],
        "itl_s": [x for r in results for x in r[1]],
    }


def main():
    args = json.loads(sys.argv[1])
    port, model = int(args["port"]), str(args["model"])
    max_tokens = max(1, min(512, int(args.get("max_tokens", 64))))
    timeout_s = max(1.0, min(600.0, float(args.get("timeout_s", 60))))
    levels = []
    for level in [int(x) for x in args.get("levels", [1, 8])][:4]:
        level = max(1, min(64, level))
        count = max(level, min(64, int(args.get("requests_per_level", 2 * level))))
        levels.append(run_level(port, model, level, count, max_tokens, timeout_s))
    sys.stdout.write(json.dumps({"levels": levels}))


if __name__ == "__main__":
    main()
