#!/usr/bin/env python3
"""Writes the fuzz seed corpora (tests/fuzz/corpus/{control,frame}/) from scratch, reproducibly.

    python3 tests/fuzz/make_corpus.py

File names say what the parsers must do with a seed, and the replay test (test_fuzz_replay.cpp)
holds them to it: accept-* decodes (and its role / metric rows, if any, are accepted too),
refuse-* gets an error. The byte formats are documented in fuzz_control.cpp (byte 0: frame count,
length-prefixed frames) and fuzz_frame.cpp (byte 0: mesh size + 1, then the header frame).
Every file stays far below 64 KiB.
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"  # a valid Z85 public key (libzmq's test vector)


def control(*frames):
    """Frames in fuzz_control.cpp's scheme: count byte, then 2-byte lengths for all but the last."""
    frames = [f.encode() if isinstance(f, str) else f for f in frames]
    assert 1 <= len(frames) <= 8
    out = bytes([len(frames) - 1])
    for f in frames[:-1]:
        out += struct.pack("<H", len(f)) + f
    return out + frames[-1]


def header(kind, **body):
    return json.dumps({"v": 1, "kind": kind, **body}, separators=(",", ":"))


def role(**over):
    r = {"name": "replica-1.1", "kind": "full", "replica": 1, "replicas": 2, "rank": 1, "replica_nodes": 2,
         "stage": -1, "mesh_endpoints": ["tcp://10.0.0.1:5601", "tcp://10.0.0.2:5601"], "mesh_rank": 1,
         "mesh_keys": [KEY, KEY], "mesh_token": "0123456789abcdef",
         "grad_group": {"host": "10.0.0.1", "port": 29500, "rank": 1, "size": 2, "keys": [KEY, KEY]}}
    r.update(over)
    return r


TOML = '[model]\nd_model = 64\nn_layer = 2\n\n[train]\nsteps = 10\n'

CONTROL = {
    "accept-hello": control(header("hello", id=1)),
    "accept-capabilities": control(header("capabilities", id=1, node_version="0.1", protocol=1, threads=2,
                                          memory_bytes=1 << 33, device="cpu", host="n1", pid=42, state="idle")),
    "accept-configure": control(header("configure", id=2, role=role(), config_toml=TOML, heartbeat_s=0.5,
                                       heartbeat_timeout_s=5)),
    "accept-configure-pipeline": control(header("configure", id=3, config_toml="", role=role(
        name="replica-0.1", kind="pipeline", replica=0, replicas=1, stage=1, mesh_keys=[],
        grad_group={"host": "", "port": 0, "rank": 0, "size": 1, "keys": []}))),
    # The protocol layer accepts these; the node server refuses them naming "heartbeat_s".
    "accept-configure-heartbeat-abc": control(header("configure", id=4, role=role(), config_toml="",
                                                     heartbeat_s="abc")),
    "accept-configure-heartbeat-null": control(header("configure", id=5, role=role(), config_toml="",
                                                      heartbeat_s=None)),
    "accept-start": control(header("start", id=6)),
    "accept-pause": control(header("pause", id=7)),
    "accept-resume": control(header("resume", id=8)),
    "accept-stop": control(header("stop", id=9)),
    "accept-shutdown": control(header("shutdown", id=10)),
    "accept-status": control(header("status", id=11)),
    "accept-ok": control(header("ok", id=6, token="00000000deadbeef")),
    "accept-heartbeat-token": control(header("heartbeat", token="0123456789abcdef")),
    "accept-heartbeat-stream": control(header("heartbeat", name="replica-0", state="running", step=12)),
    "accept-metrics": control(header("metrics", name="replica-0", rows=[
        [1, 0, 0.25, 1.5, "loss", 4.17], [2, 0, 0.5, 3.0, "loss", None], [2, 1, 0.5, 3.0, "bytes_sent", 1048576]])),
    "accept-event": control(header("event", name="replica-0", wall_s=1.5, level="warn", event="straggler",
                                   text="step 3 took 2.1 s")),
    "accept-done": control(header("done", name="replica-0", ok=True, error="", summary={"loss": 3.9, "steps": 10})),
    "accept-error": control(header("error", id=3, error="configure: role: \"rank\" must be an integer in [0, 1]")),
    "accept-blobs": control(header("configure", id=12, role=role(), config_toml=""), b"\x00\x01\x02\x03", b"",
                            bytes(range(256))),
    # Reproductions. The 100,000-level id that killed a node is 200 KB; 2,000 levels (4 KB) already
    # exceed the 32-level bound, which is all the fuzzer needs to start from.
    "refuse-deep-id": control('{"v":1,"kind":"hello","id":' + "[" * 2000 + "1" + "]" * 2000 + "}"),
    "refuse-deep-object": control('{"v":1,"kind":"hello","x":' + '{"a":' * 40 + "1" + "}" * 40 + "}"),
    "accept-brackets-in-string": control(header("hello", id=1, note='[[[{{{\\"]]]')),
    "accept-array-id": control(header("hello", id=[1])),  # decodes; the node answers "\"id\" must be an integer"
    "refuse-role-double-replica": control(header("configure", id=13, config_toml="", role=role(replica=1.5))),
    "refuse-role-huge-port": control(header("configure", id=14, config_toml="",
                                            role=role(grad_group={"host": "h", "port": 4294967297, "rank": 0,
                                                                  "size": 1, "keys": []}))),
    "refuse-role-bad-endpoint": control(header("configure", id=15, config_toml="",
                                               role=role(mesh_endpoints=["http://x", "tcp://y:1"]))),
    "refuse-role-bad-key": control(header("configure", id=16, config_toml="", role=role(mesh_keys=[KEY, KEY[:-1] + " "]))),
    "accept-configure-fingerprint": control(header("configure", id=17, config_toml="", role=role(
        data_fingerprint="none:0123456789abcdef:fedcba9876543210"))),
    "refuse-role-bad-fingerprint": control(header("configure", id=18, config_toml="",
                                                  role=role(data_fingerprint="none:0123456789abcdef"))),
    "refuse-metrics-double-step": control(header("metrics", name="r", rows=[[1.5, 0, 0, 0, "loss", 1]])),
    "refuse-metrics-huge-step": control('{"v":1,"kind":"metrics","rows":[[1e300,0,0,0,"loss",1]]}'),
    "refuse-not-json": control("{garbage"),
    "refuse-not-object": control("[1,2]"),
    "refuse-no-kind": control('{"v":1}'),
    "refuse-unknown-kind": control('{"v":1,"kind":"explode"}'),
    "refuse-version-2": control('{"v":2,"kind":"hello"}'),
    "refuse-empty": b"",
    # HDEE scores (kind 17): one domain of 1 eval + 1 prior window of 2 tokens, 4 fp32 values.
    "accept-scores": control(header("scores", name="homogeneous.news", seq_len=2, sets=[[1, 1, 1, 1]], unigram=6.5,
                                    train_tokens=1000), struct.pack("<4f", -1.0, -2.0, -0.5, -3.0)),
    "refuse-scores-short-frame": control(header("scores", name="e", seq_len=2, sets=[[1, 1, 1, 1]], unigram=6.5,
                                                train_tokens=1000), struct.pack("<3f", -1.0, -2.0, -0.5)),
    "refuse-scores-no-frame": control(header("scores", name="e", seq_len=2, sets=[[1, 1, 1, 1]], unigram=6.5,
                                             train_tokens=1000)),
    "refuse-scores-huge-set": control(header("scores", name="e", seq_len=2, sets=[[2 ** 62, 1, 1, 1]], unigram=6.5,
                                             train_tokens=1000), b""),
}

MAGIC = b"TWAG"


def frame(kind, link=0, counted=True, rank=0, rnd=0, clock=0.0, token=0x0123456789ABCDEF, aux=0, version=7,
          members=4):
    """A mesh-size byte (members + 1, see fuzz_frame.cpp) and a 48-byte v7 header (v4's layout; v5 adds
    the abandon kind, 5; v6 the ready kind, 6; v7 the commit kind, 7)."""
    h = MAGIC + struct.pack("<BBBBH6xQdQQ", version, kind, link | (0 if counted else 0x80), 0, rank, rnd, clock,
                            token, aux)
    assert len(h) == 48
    return bytes([members + 1]) + h


FRAME = {
    "accept-round": frame(0, link=0, rank=1, rnd=7, clock=12.5),
    "accept-p2p": frame(1, link=1, rank=3, clock=0.25),
    "accept-heartbeat": frame(2, link=2, rank=2, clock=3.0),
    "accept-bye": frame(3, rank=0, clock=99.0),
    "accept-agree": frame(4, rank=1, rnd=7, clock=12.5, aux=0xFEEDFACECAFEBEEF),
    "accept-uncounted": frame(0, link=2, counted=False, rank=0, rnd=1),
    "accept-any-rank": bytes([255]) + frame(0, rank=65535)[1:],
    "accept-abandon": frame(5, rank=2, rnd=48, aux=0b1000),
    "accept-ready": frame(6, rank=3, aux=30),
    "accept-commit": frame(7, rank=1, rnd=7, aux=0xFEEDFACECAFEBEEF),
    # Reproductions.
    "refuse-4-bytes": bytes([5]) + b"TWAG",
    "refuse-wrong-magic": bytes([5]) + b"TWAX" + frame(0)[5:],
    # Version 3 headers were 24 bytes: magic, u8 version, u8 link, u16 rank, u64 round, f64 clock.
    "refuse-version-3": bytes([5]) + MAGIC + struct.pack("<BBHQd", 3, 0, 1, 7, 1.5),
    "refuse-version-3-padded": frame(0, version=3),
    "refuse-kind-8": frame(8),
    "refuse-version-6": frame(0, version=6),
    "refuse-version-5": frame(0, version=5),
    "refuse-version-4": frame(0, version=4),
    "refuse-link-3": frame(0, link=3),
    "refuse-rank-outside": frame(0, rank=4, members=4),
    "refuse-no-members": frame(0, members=-1),
    "refuse-negative-clock": frame(0, clock=-1.0),
    "refuse-nan-clock": frame(0, clock=float("nan")),
    "refuse-reserved": frame(0)[:12] + b"\x01" + frame(0)[13:],
}


def write(name, seeds):
    d = os.path.join(HERE, "corpus", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for stem, data in seeds.items():
        assert len(data) < 64 * 1024, stem
        with open(os.path.join(d, stem + ".bin"), "wb") as f:
            f.write(data)
    print(f"{d}: {len(seeds)} seeds")


if __name__ == "__main__":
    write("control", CONTROL)
    write("frame", FRAME)
