"""Runs llama.cpp's own HTTP server (through the xllamacpp wheel) on a
loopback port, for `make demo` and `make e2e`.

    model_server.py MODEL.gguf PORT TEMPLATE.jinja ALIAS SLOTS

It serves the OpenAI (/v1/chat/completions), Anthropic (/v1/messages) and
OpenAI Responses (/v1/responses, since the pinned xllamacpp's llama.cpp)
wire formats with the chat template given (see examples/demo/chat-template.jinja),
SLOTS requests at once, and says `listening <url>` on stdout when ready.
It runs until SIGTERM or SIGINT.
"""

import os
import signal
import sys
import threading

import xllamacpp


def die_with_parent():
    # If the script that started us is killed outright (SIGKILL, no trap),
    # the kernel sends us SIGTERM: the server never outlives its caller.
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:
        sys.exit(0)  # the caller was gone before prctl


def main():
    die_with_parent()
    model, port, template, alias, slots = sys.argv[1:6]
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {alias}
    params.hostnames = ["127.0.0.1"]
    params.port = int(port)
    params.n_parallel = int(slots)
    # Context shared by the slots: 4096 tokens each.
    params.n_ctx = 4096 * int(slots)
    params.use_jinja = True
    with open(template, encoding="utf-8") as f:
        params.chat_template = f.read()
    params.cpuparams.n_threads = os.cpu_count() or 2
    params.cpuparams_batch.n_threads = os.cpu_count() or 2
    server = xllamacpp.Server(params)
    print("listening", server.listening_address, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
