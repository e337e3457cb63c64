#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""rsh.py - a remote shell for the VM pair of tests/nodes (vm-pair.sh),
whose VMs have no ssh: what MPI launchers need of ssh and no more.

  rsh.py serve PORT              run commands for clients until one sends
                                 the command "exit" (as root, in /)
  rsh.py [-x|-o OPT|...] HOST COMMAND...
                                 as ssh: run COMMAND (its words joined by
                                 spaces) through sh on HOST:$COOP_RSH_PORT
                                 (default 7022) in $HOME, with a login's
                                 environment; its stdout and stderr come
                                 back, its exit status is ours; killing
                                 us (or losing the connection) kills it

No authentication: the server listens on the VM pair's private link only.
Frames both ways: 1 byte channel (1 stdout, 2 stderr, 3 exit status),
4 bytes big-endian length, payload.
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import threading

PORT = int(os.environ.get("COOP_RSH_PORT", "7022"))
LOGIN_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "HOME": "/root", "USER": "root", "LOGNAME": "root",
             "SHELL": "/bin/sh", "LANG": "C.UTF-8"}


def send_frame(sock, lock, chan, data):
    with lock:
        sock.sendall(struct.pack(">BI", chan, len(data)) + data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            return None
        buf += part
    return buf


def recv_frame(sock):
    head = recv_exact(sock, 5)
    if head is None:
        return None, None
    chan, n = struct.unpack(">BI", head)
    return chan, recv_exact(sock, n)


def pump(pipe, sock, lock, chan):
    for data in iter(lambda: os.read(pipe.fileno(), 65536), b""):
        try:
            send_frame(sock, lock, chan, data)
        except OSError:
            return


def serve_one(conn):
    lock = threading.Lock()
    chan, cmd = recv_frame(conn)
    if chan != 0 or cmd is None:
        conn.close()
        return False
    if cmd == b"exit":
        send_frame(conn, lock, 3, b"0")
        conn.close()
        return True
    proc = subprocess.Popen(["sh", "-c", 'cd "$HOME" && eval "$1"', "sh",
                             cmd.decode()], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=LOGIN_ENV, start_new_session=True)
    pumps = [threading.Thread(target=pump, args=(p, conn, lock, c))
             for p, c in ((proc.stdout, 1), (proc.stderr, 2))]
    for t in pumps:
        t.start()

    def watch():  # the client went away: so does the command
        if recv_frame(conn)[0] is None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    threading.Thread(target=watch, daemon=True).start()
    rc = proc.wait()
    for t in pumps:
        t.join()
    try:
        send_frame(conn, lock, 3, str(rc if rc >= 0 else 128 - rc).encode())
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    return False


def serve(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(64)
    done = threading.Event()

    def one(conn):
        if serve_one(conn):
            done.set()
            srv.shutdown(socket.SHUT_RDWR)  # ends the accept()
    while not done.is_set():
        try:
            conn, _ = srv.accept()
        except OSError:
            break
        threading.Thread(target=one, args=(conn,), daemon=True).start()


def client(args):
    while args and args[0].startswith("-"):
        # ssh's options with an argument, the others are flags
        skip = 2 if args[0] in ("-o", "-p", "-l", "-i", "-F") else 1
        args = args[skip:]
    if len(args) < 2:
        sys.exit("usage: rsh.py [options] HOST COMMAND...")
    host = args[0].split("@")[-1]
    sock = socket.create_connection((host, PORT))
    send_frame(sock, threading.Lock(), 0, " ".join(args[1:]).encode())
    signal.signal(signal.SIGTERM, lambda *_: os._exit(255))
    out = {1: sys.stdout.buffer, 2: sys.stderr.buffer}
    while True:
        chan, data = recv_frame(sock)
        if chan is None:
            sys.exit(255)
        if chan == 3:
            sys.exit(int(data))
        out[chan].write(data)
        out[chan].flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]) if len(sys.argv) > 2 else PORT)
    else:
        client(sys.argv[1:])
