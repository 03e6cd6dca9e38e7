#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# capture-check.py - what a capture of the test bed's link shows of the
# marker streams of the kselftests security.capture_* (visock_security.c).
#
#   capture-check.py [--expect TEST]... PCAP...
#
# PCAP is a capture of the link (vm.sh run --capture: QEMU's filter-dump,
# pcap with Ethernet frames).  The client of each capture test sends a UDP
# datagram to port 7796 before its connection,
#
#   visock-capture begin TEST TRANSFORM MARKER-IN-HEX BYTES
#
# and "visock-capture end TEST" once the server has all BYTES of the
# marker stream.  Per test (and PCAP), one KTAP result:
#
#   TRANSFORM none: the marker is in the payload of RoCEv2 packets (UDP
#       port 4791) between the two datagrams, which carry at least BYTES:
#       the capture shows the stream's bytes, so their absence elsewhere
#       means something;
#   any other TRANSFORM: the marker is nowhere in the capture (any frame,
#       any protocol, any offset: also not on TCP after a fallback), and
#       the RoCEv2 packets between the two datagrams carry at least BYTES
#       of UDP payload (the stream went over RDMA, and was captured).
#
# A test named with --expect whose datagrams are not in the capture fails;
# so does a capture that cannot be read.  Exit status 0 only if every
# result passed.

import argparse
import struct
import sys

ROCE_PORT = 4791
BEACON_PORT = 7796
BEACON_TAG = b"visock-capture "


def frames(path):
    """Yield (number, frame bytes, truncated) of a pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError("%d bytes: no pcap header" % len(data))
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise ValueError("not a pcap file (magic %s)" % magic.hex())
    linktype = struct.unpack(end + "I", data[20:24])[0]
    if linktype != 1:
        raise ValueError("link type %d, expected Ethernet (1)" % linktype)
    off, n = 24, 0
    while off < len(data):
        if off + 16 > len(data):
            raise ValueError("record %d: header cut short" % (n + 1))
        incl, orig = struct.unpack(end + "II", data[off + 8:off + 16])
        off += 16
        if off + incl > len(data):
            raise ValueError("record %d: data cut short" % (n + 1))
        n += 1
        yield n, data[off:off + incl], incl < orig
        off += incl


def udp(frame):
    """(destination port, payload) of a UDP/IPv4 or /IPv6 frame, or None."""
    eth = 14
    if len(frame) < eth:
        return None
    etype = struct.unpack(">H", frame[12:14])[0]
    while etype in (0x8100, 0x88a8) and len(frame) >= eth + 4:
        etype = struct.unpack(">H", frame[eth + 2:eth + 4])[0]
        eth += 4
    ip = frame[eth:]
    if etype == 0x0800 and len(ip) >= 20 and ip[0] >> 4 == 4:
        ihl = (ip[0] & 15) * 4
        frag = struct.unpack(">H", ip[6:8])[0] & 0x1fff
        if ip[9] != 17 or frag or len(ip) < ihl + 8:
            return None
        u = ip[ihl:]
    elif etype == 0x86DD and len(ip) >= 48 and ip[6] == 17:
        u = ip[40:]
    else:
        return None
    return struct.unpack(">H", u[2:4])[0], u[8:]


class Window:
    def __init__(self, name, xform, marker, nbytes):
        self.name, self.xform = name, xform
        self.marker, self.nbytes = marker, nbytes
        self.open = True
        self.roce = self.roce_bytes = self.roce_marked = 0


def check(path, expect, diag):
    """KTAP results (ok, name, text) of one capture; notes into diag."""
    wins, cur = {}, None
    nframes = ntrunc = 0
    with open(path, "rb") as f:
        whole = f.read()
    for n, fr, trunc in frames(path):
        nframes += 1
        ntrunc += trunc
        u = udp(fr)
        if not u:
            continue
        port, pay = u
        if port == BEACON_PORT and pay.startswith(BEACON_TAG):
            w = pay.decode("ascii", "replace").split()
            if len(w) == 6 and w[1] == "begin":
                cur = Window(w[2], w[3], bytes.fromhex(w[4]), int(w[5]))
                wins[cur.name] = cur
            elif len(w) == 3 and w[1] == "end" and cur and cur.name == w[2]:
                cur.open = False
                cur = None
            else:
                raise ValueError("frame %d: bad datagram %r" % (n, pay[:80]))
        elif port == ROCE_PORT and cur:
            cur.roce += 1
            cur.roce_bytes += len(pay)
            cur.roce_marked += cur.marker in pay
    res = []
    diag.append("%s: %d frames, %d cut short; capture tests %s" %
                (path, nframes, ntrunc, " ".join(sorted(wins)) or "none"))
    for name in expect or sorted(wins):
        w = wins.get(name)
        if not w:
            res.append((False, name, "no capture datagrams of %s" % name))
            continue
        if w.open:
            res.append((False, name, "no end datagram of %s" % name))
            continue
        where = "%d RoCE packets, %d bytes between its datagrams" % (
            w.roce, w.roce_bytes)
        if w.xform == "none":
            ok = w.roce_marked > 0 and w.roce_bytes >= w.nbytes
            res.append((ok, name, "transform none: marker in %d of %s, "
                        "stream %d" % (w.roce_marked, where, w.nbytes)))
            continue
        seen = whole.count(w.marker)
        ok = seen == 0 and ntrunc == 0 and w.roce_bytes >= w.nbytes
        res.append((ok, name, "transform %s: marker %d times in the "
                    "capture (%d frames cut short); %s, stream %d" %
                    (w.xform, seen, ntrunc, where, w.nbytes)))
    return res


def main():
    ap = argparse.ArgumentParser(description="what a capture of the link shows of the marker streams")
    ap.add_argument("--expect", action="append", default=[],
                    help="a capture test that must be in every capture")
    ap.add_argument("pcap", nargs="+")
    a = ap.parse_args()
    out, diag = [], []
    for p in a.pcap:
        # .../a/link.pcap: results of host a's capture
        tag = p.rsplit("/", 2)[-2] if "/" in p else p
        try:
            r = check(p, a.expect, diag)
        except (OSError, ValueError) as e:
            diag.append("%s: %s" % (p, e))
            r = [(False, n, "capture %s unreadable" % p)
                 for n in (a.expect or ["read"])]
        out += [(ok, "capture.%s.%s" % (tag, n), t) for ok, n, t in r]
    print("TAP version 13")
    print("1..%d" % len(out))
    for d in diag:
        print("# " + d)
    for i, (ok, name, text) in enumerate(out, 1):
        print("# %s: %s" % (name, text))
        print("%sok %d %s" % ("" if ok else "not ", i, name))
    return 0 if out and all(ok for ok, _, _ in out) else 1


if __name__ == "__main__":
    sys.exit(main())
