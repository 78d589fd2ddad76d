#!/usr/bin/python3
"""One-way ZeroMQ throughput between two processes, the data plane's pattern (PUSH to a bound PULL),
for benchmarks whose two ends sit on different machines or network namespaces (scripts/bench_relay_hosts.sh).

  zmq_throughput.py recv BIND COUNT BYTES [SERVER_SECRET_Z85 SERVER_PUBLIC_Z85]
      binds a PULL at BIND (CurveZMQ server when keys are given), takes COUNT messages of BYTES each,
      checks their size and edge bytes, and prints one line: "bytes_per_s=<B/s> msgs=<n> seconds=<s>",
      timed from the first message to the last (the first one's bytes are not counted);
  zmq_throughput.py send CONNECT COUNT BYTES [SERVER_PUBLIC_Z85]
      connects a PUSH to CONNECT (a CurveZMQ client of that server key when given) and sends COUNT
      messages of BYTES each.

Exit status 1 with a message when a message is missing, late past 60 s, or changed.
"""
import sys
import time

import zmq


def fail(text):
    print(f"zmq_throughput: {text}", file=sys.stderr)
    sys.exit(1)


def payload(size):
    body = bytearray(size)
    body[0], body[-1] = 0x5A, 0xA5
    return bytes(body)


def open_socket(kind, timeout_option, linger_ms):
    """A socket of `kind` on a context of its own: waits past 60 s fail, closing lingers `linger_ms`."""
    sock = zmq.Context().socket(kind)
    sock.setsockopt(timeout_option, 60000)
    sock.setsockopt(zmq.LINGER, linger_ms)
    return sock


def recv(bind, count, size, keys):
    sock = open_socket(zmq.PULL, zmq.RCVTIMEO, 0)
    if keys:
        sock.curve_secretkey, sock.curve_publickey = keys[0].encode(), keys[1].encode()
        sock.curve_server = True
    sock.bind(bind)
    print("ready", flush=True)
    first = None
    for i in range(count):
        try:
            msg = sock.recv(copy=False)
        except zmq.Again:
            fail(f"message {i + 1} of {count} did not arrive within 60 s")
        buf = msg.buffer
        if len(buf) != size or buf[0] != 0x5A or buf[-1] != 0xA5:
            fail(f"message {i + 1} arrived changed ({len(buf)} B)")
        if first is None:
            first = time.monotonic()
    seconds = time.monotonic() - first
    rate = (count - 1) * size / seconds if seconds > 0 else float("inf")
    print(f"bytes_per_s={rate:.0f} msgs={count} seconds={seconds:.4f}", flush=True)


def send(connect, count, size, server_key):
    sock = open_socket(zmq.PUSH, zmq.SNDTIMEO, 60000)  # the last messages leave before it closes
    if server_key:
        public, secret = zmq.curve_keypair()
        sock.curve_publickey, sock.curve_secretkey = public, secret
        sock.curve_serverkey = server_key.encode()
    sock.connect(connect)
    body = payload(size)
    for _ in range(count):
        sock.send(body, copy=False)
    sock.context.destroy(linger=60000)


def main(argv):
    if len(argv) < 5 or argv[1] not in ("recv", "send"):
        fail("usage: zmq_throughput.py recv BIND COUNT BYTES [SECRET PUBLIC] | send CONNECT COUNT BYTES [SERVER_PUBLIC]")
    count, size = int(argv[3]), int(argv[4])
    if count < 2 or size < 2:
        fail("COUNT and BYTES must be at least 2")
    if argv[1] == "recv":
        recv(argv[2], count, size, argv[5:7] if len(argv) >= 7 else None)
    else:
        send(argv[2], count, size, argv[5] if len(argv) >= 6 else None)


if __name__ == "__main__":
    main(sys.argv)
