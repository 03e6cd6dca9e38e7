#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run a command (QEMU) with the test bed's virtual link already open.

udp-link.py MY_PORT PEER_PORT FD COMMAND [ARGS...]

Opens a UDP socket on 127.0.0.1:MY_PORT connected to 127.0.0.1:PEER_PORT,
places it on descriptor FD and executes COMMAND, which finds it there
(QEMU: -netdev dgram,id=n0,local.type=fd,local.str=FD).

Why not let QEMU open the socket itself: a guest's link is one UDP
socket on the host, and a TCG guest that is busy does not drain it for
a while.  With the default receive buffer (212992 bytes) the host drops
datagrams then (UdpRcvbufErrors: ~70 in one stress.mix run); a dropped
TCP reset leaves the server's socket in FIN_WAIT2 and a later SYN on
the same ports is answered with a reset (ECONNREFUSED), and Soft-RoCE
retransmissions fail QPs.  QEMU has no option for the buffer size, so
the socket is made here, with SO_RCVBUFFORCE (root) or else SO_RCVBUF.
"""

import os
import socket
import sys

RCVBUF = 8 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: udp-link.py MY_PORT PEER_PORT FD COMMAND [ARGS...]")
    my_port, peer_port, fd = (int(a) for a in sys.argv[1:4])
    argv = sys.argv[4:]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    s.bind(("127.0.0.1", my_port))
    s.connect(("127.0.0.1", peer_port))
    if s.fileno() != fd:
        os.dup2(s.fileno(), fd, inheritable=True)
        s.close()
    else:
        os.set_inheritable(fd, True)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
