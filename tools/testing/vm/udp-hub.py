#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""One Ethernet segment for several test bed guests (vm.sh --hosts 4).

udp-hub.py HUB_PORT GUEST_PORT...

Each guest's link is a UDP socket on 127.0.0.1:GUEST_PORT connected to
127.0.0.1:HUB_PORT (udp-link.py); every datagram is one Ethernet frame.
The hub learns which port each source MAC address comes from and sends a
frame to the port of its destination, or to every other guest when the
destination is a broadcast, multicast or not yet learned address: a
learning switch in user space, no root and no host interfaces needed.
Frames from ports that are not guests of this bed are dropped.

Its socket gets the same large receive buffer as udp-link.py gives the
guests (SO_RCVBUFFORCE as root, else SO_RCVBUF), so that a burst from
three guests at once is not dropped while the hub waits for the CPU.
"""

import socket
import sys

RCVBUF = 8 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: udp-hub.py HUB_PORT GUEST_PORT...")
    hub_port = int(sys.argv[1])
    guests = [("127.0.0.1", int(p)) for p in sys.argv[2:]]
    known = set(guests)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (SO_RCVBUFFORCE, socket.SO_RCVBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, RCVBUF)
            break
        except OSError:
            continue
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, RCVBUF)
    s.bind(("127.0.0.1", hub_port))
    where = {}
    buf = bytearray(65536)
    view = memoryview(buf)
    while True:
        try:
            n, src = s.recvfrom_into(buf)
        except OSError:
            continue
        if src not in known or n < 14:
            continue
        frame = view[:n]
        where[bytes(buf[6:12])] = src
        dst = where.get(bytes(buf[0:6]))
        if dst is not None and not buf[0] & 1:
            if dst != src:
                try:
                    s.sendto(frame, dst)
                except OSError:
                    pass
            continue
        for g in guests:
            if g != src:
                try:
                    s.sendto(frame, g)
                except OSError:
                    pass


if __name__ == "__main__":
    main()
