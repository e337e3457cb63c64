#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""mpi4py_suite.py - an equivalent of mpi4py's test suite for the UCX
transport coop: unittest + mpi4py only (no numpy; buffers are bytearray,
array.array and memoryview), every received byte and value checked.

    scripts/coopmpi-run mpirun.openmpi --allow-run-as-root --oversubscribe \\
        -np 2 /usr/bin/python3 tests/ucx/mpi4py_suite.py [unittest options]

Any rank count >= 2 works (tests/ucx/mpi4py-suite.sh runs 2 and 3; 4 is
fine too); unittest's options select tests the same way on every rank, e.g.
"-k Truncat" or "PointToPoint.test_ssend", "-q" for less output.  Every
line is printed with a "[rank R/N] " prefix, a failure's traceback at once;
each rank ends with unittest's summary ("Ran N tests", "OK" or
"FAILED (...)").  The exit status is 0 only when every test passed on every
rank.  A failed check is reported and the test goes on (the checks are
subtests), so the ranks stay in step; after each test they allgather their
outcome: a test that failed on one rank is failed on all ("failed on
rank(s) [...]").  A rank that failed while its peers still wait inside the
test (an exception made it leave early) does not hang with them: after 10 s
it calls MPI.COMM_WORLD.Abort(1).  A test that does not end within
MPI4PY_SUITE_TEST_TIMEOUT seconds (default 60) dumps the Python stacks and
exits the rank with status 1, so a lost message is a failure, not a hang.

What a transport can break, and so what is covered (sizes straddle the
eager/rendezvous switch; coop carries rendezvous >= ~64 KiB by GET_ZCOPY):
  PointToPoint    Send/Recv, Isend/Irecv+Waitall, Ssend, Bsend, Rsend,
                  Sendrecv(_replace), both directions at once, many tags in
                  flight received out of order, 32 x 256 KiB to and from
                  every peer at once, non-overtaking order on one tag,
                  ANY_SOURCE/ANY_TAG + Status, Probe/Iprobe, Mprobe/Mrecv,
                  Improbe/Imrecv, persistent requests, Cancel, truncation
                  (ERR_TRUNCATE), odd buffer offsets, fresh buffers at
                  re-used addresses - at 0 B .. 4 MiB + 3
  Datatypes       vector and indexed types, large, to contiguous and to
                  other layouts (the bytes between blocks must stay)
  Pickle          send/recv/isend/irecv/sendrecv, bcast/gather/scatter/
                  allgather/alltoall of dicts holding 2 MiB bytes objects
  Collectives     Bcast, Reduce, Allreduce, Gather(v), Scatter(v),
                  Allgather(v), Alltoall(v), Reduce_scatter_block, Scan,
                  Exscan, Barrier, Ibcast/Iallreduce - small and 1-4 MiB
  Communicators   Split, Dup (its messages do not match the original's),
                  Create_group, Create
  RMA             Win.Create/Allocate/Allocate_shared: Put, Get,
                  Accumulate under Fence and Lock/Unlock, up to 1 MiB

Data patterns are SHAKE-128 streams keyed by what the message is (test,
source, destination, tag, size, ...): they never repeat, so a chunk placed
at a wrong offset, a message matched to the wrong receive and a stale
buffer all show as a difference, reported with its first offset.
"""

import array
import faulthandler
import hashlib
import os
import random
import reprlib
import sys
import time
import unittest

from mpi4py import MPI

WORLD = MPI.COMM_WORLD
KiB, MiB = 1 << 10, 1 << 20
# Below, at and above UCX's eager/rendezvous switch and coop's 64 KiB
# COOP_MIN; 4 MiB + 3 is an odd length split among several copiers.
SIZES = (0, 1, 7, 4095, 64 * KiB, 64 * KiB + 1, MiB, 4 * MiB + 3)
SENTINEL = 0xA5  # fills receive buffers: bytes MPI must not touch keep it
TEST_TIMEOUT = float(os.environ.get("MPI4PY_SUITE_TEST_TIMEOUT", "60"))
GRACE = 10  # seconds a failed rank waits for its peers to end the test too


# -- patterns ---------------------------------------------------------------

def pattern(n, *key):
    """n bytes determined by key and by the offset (a SHAKE-128 stream)."""
    return bytearray(hashlib.shake_128(repr(key).encode()).digest(n))


def ipattern(n, *key):
    """n int64 values in [0, 2**32): sums over a few ranks cannot overflow."""
    return array.array("q", array.array("I", pattern(4 * n, *key)))


def isum(arrays):
    """The element-wise sum of int64 arrays (what MPI.SUM must produce)."""
    return array.array("q", map(sum, zip(*arrays)))


def filled(n, byte=SENTINEL):
    return bytearray([byte]) * n


def gather_blocks(src, count, blocklen, stride):
    """The bytes a vector type (count, blocklen, stride in bytes) selects."""
    out = bytearray(count * blocklen)
    for j in range(blocklen):  # one extended slice per byte column: fast
        out[j::blocklen] = src[j:j + stride * count:stride][:count]
    return out


def scatter_blocks(dst, data, count, blocklen, stride):
    """Place contiguous data into dst as a vector type would (in place)."""
    for j in range(blocklen):
        dst[j:j + stride * count:stride] = data[j::blocklen]


def first_difference(a, b):
    """Offset of the first byte where a and b (bytes) differ."""
    lo, hi = 0, min(len(a), len(b))
    while hi - lo > 64:  # a[:lo] == b[:lo] holds throughout
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    for i in range(lo, hi):
        if a[i] != b[i]:
            return i
    return hi


# -- the base class ---------------------------------------------------------

def agree(failed, what):
    """Every rank's failure flag, allgathered over COMM_WORLD.  A rank that
    failed may have left a test early while its peers still wait for its
    messages: it waits GRACE seconds for them, then prints why and calls
    MPI.COMM_WORLD.Abort(1) instead of hanging with them."""
    flags = array.array("i", [0]) * WORLD.Get_size()
    req = WORLD.Iallgather(array.array("i", [int(failed)]), flags)
    if failed:
        deadline = time.monotonic() + GRACE
        while not req.Test():
            if time.monotonic() > deadline:
                STREAM.write(f"{what} failed here and the other ranks did "
                             f"not finish it within {GRACE} s: Abort\n")
                STREAM.close()
                sys.stderr.flush()
                WORLD.Abort(1)
            time.sleep(0.001)
    else:
        req.Wait()  # the watchdog ends a wait that never returns
    return [r for r, f in enumerate(flags) if f]


class MPITestCase(unittest.TestCase):
    """Per test: a fresh duplicate of COMM_WORLD (a failed test's stray
    messages cannot match the next test's receives), its ring neighbours,
    and a watchdog that ends the rank if the test hangs.

    After each test the ranks agree on its outcome (agree()): a test that
    failed on one rank fails on all (so each rank's summary tells), and
    the ranks stay in step for the next test; or the job is aborted.

    Tests free their communicators, windows and types on the normal path
    only, never in try/finally: a collective Free while the peers are still
    inside the test would hang before unittest could report the error."""

    failed_here = False  # set by Result when this rank's test failed

    def setUp(self):
        faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True)
        self.comm = WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.next = (self.rank + 1) % self.size
        self.prev = (self.rank - 1) % self.size

    def tearDown(self):
        failed = agree(self.failed_here, self.id())
        self.comm.Free()
        faulthandler.cancel_dump_traceback_later()
        if failed and not self.failed_here:
            self.fail(f"failed on rank(s) {failed}, see their report")

    def need_peers(self):
        if self.size < 2:
            self.skipTest("needs 2 or more ranks")

    # The checks run as subtests: a failed one is reported and the test
    # goes on, so this rank keeps sending what its peers wait for.

    def assertBytes(self, got, want, what):
        """got == want byte for byte; on failure say where they differ."""
        got, want = memoryview(got).tobytes(), memoryview(want).tobytes()
        if got == want:
            return
        i = first_difference(got, want)
        diff = [k for k in range(min(len(got), len(want)))
                if got[k] != want[k]]
        with self.subTest(what):
            self.fail(f"rank {self.rank}: {what}: got {len(got)} bytes, "
                      f"want {len(want)}; first difference at offset {i} "
                      f"(got {got[i:i + 8].hex()}, want "
                      f"{want[i:i + 8].hex()}); {len(diff)} bytes differ"
                      + (f", last at {diff[-1]}" if diff else ""))

    def assertReceived(self, buf, n, want, what):
        """buf starts with the n bytes want; the rest still SENTINEL."""
        self.assertBytes(memoryview(buf)[:n], want, what)
        self.assertBytes(memoryview(buf)[n:], filled(len(buf) - n),
                         what + " (bytes past the message)")

    def assertEqual(self, first, second, msg=None):
        with self.subTest(msg):
            super().assertEqual(first, second, msg)

    def assertObject(self, got, want, what):
        """got == want for received Python objects, a difference described
        briefly: unittest's diff of a 2 MiB bytes object would take ages."""
        if got == want:
            return
        if (isinstance(got, list) and isinstance(want, list)
                and len(got) == len(want)):
            for i, (g, w) in enumerate(zip(got, want)):
                self.assertObject(g, w, f"{what}[{i}]")
        elif (isinstance(got, dict) and isinstance(want, dict)
              and got.keys() == want.keys()):
            for k, w in want.items():
                if isinstance(got[k], bytes) and isinstance(w, bytes):
                    self.assertBytes(got[k], w, f"{what}[{k!r}]")
                else:
                    self.assertObject(got[k], w, f"{what}[{k!r}]")
        else:
            with self.subTest(what):
                self.fail(f"rank {self.rank}: {what}: got "
                          f"{reprlib.repr(got)}, want {reprlib.repr(want)}")

    def assertStatus(self, st, source, tag, count, what):
        with self.subTest(what):
            self.assertEqual((st.Get_source(), st.Get_tag(),
                              st.Get_count(MPI.BYTE)), (source, tag, count),
                             f"rank {self.rank}: {what}: status "
                             "(source, tag, count)")

    def ring(self, send, recv):
        """Blocking send to next / receive from prev without deadlock at any
        rank count: even ranks send first, odd ranks receive first."""
        if self.rank % 2 == 0:
            send()
            recv()
        else:
            recv()
            send()


# -- point to point ---------------------------------------------------------

class PointToPoint(MPITestCase):
    """Each rank sends to the next and receives from the previous rank of
    the ring (with 2 ranks: both directions at once), at every size."""

    def msg(self, what, src, dst, tag, n):
        return pattern(n, what, src, dst, tag, n)

    def test_send_recv(self):
        self.need_peers()
        for tag, n in enumerate(SIZES):
            out = self.msg("send", self.rank, self.next, tag, n)
            buf = filled(n + 16)  # room past the end: must stay untouched
            st = MPI.Status()
            self.ring(lambda: self.comm.Send(out, self.next, tag),
                      lambda: self.comm.Recv(buf, self.prev, tag, st))
            self.assertStatus(st, self.prev, tag, n, f"Recv {n} B")
            self.assertReceived(buf, n, self.msg("send", self.prev, self.rank,
                                                 tag, n), f"Recv {n} B")

    def test_isend_irecv_waitall(self):
        # All sizes in flight at once, receives posted before the sends.
        self.need_peers()
        bufs = [filled(n) for n in SIZES]
        outs = [self.msg("isend", self.rank, self.next, t, n)
                for t, n in enumerate(SIZES)]
        reqs = [self.comm.Irecv(b, self.prev, t) for t, b in enumerate(bufs)]
        reqs += [self.comm.Isend(o, self.next, t) for t, o in enumerate(outs)]
        sts = [MPI.Status() for _ in reqs]
        MPI.Request.Waitall(reqs, sts)
        for t, n in enumerate(SIZES):
            self.assertStatus(sts[t], self.prev, t, n, f"Irecv {n} B")
            self.assertBytes(bufs[t], self.msg("isend", self.prev, self.rank,
                                               t, n), f"Irecv {n} B")

    def test_unaligned(self):
        # Send from and receive into slices at odd offsets of larger
        # buffers: transfers whose ends fall inside pages and cache lines;
        # the bytes around the receive slice must stay SENTINEL.
        self.need_peers()
        for n in (4095, 64 * KiB + 1, MiB + 5, 4 * MiB + 3):
            for soff, roff in ((1, 3), (7, 4094), (4095, 1)):
                what = f"{n} B from offset {soff} into offset {roff}"
                out = pattern(soff + n + 9, "unal", self.rank, n, soff)
                buf = filled(roff + n + 11)
                sview = memoryview(out)[soff:soff + n]
                rview = memoryview(buf)[roff:roff + n]
                self.ring(lambda: self.comm.Send(sview, self.next, 2),
                          lambda: self.comm.Recv(rview, self.prev, 2))
                sview.release()
                rview.release()
                prev = pattern(soff + n + 9, "unal", self.prev, n, soff)
                exp = filled(len(buf))
                exp[roff:roff + n] = prev[soff:soff + n]
                self.assertBytes(buf, exp, what)

    def test_fresh_buffers(self):
        # A new buffer per message, same size: freed and re-mapped memory
        # often gets the old address back, so a transport that caches
        # registrations or mappings by address would deliver stale bytes.
        self.need_peers()
        for n in (64 * KiB + 1, MiB, 4 * MiB + 3):
            for i in range(6):
                out = pattern(n, "fresh", self.rank, i)
                buf = filled(n)
                self.ring(lambda: self.comm.Send(out, self.next, i),
                          lambda: self.comm.Recv(buf, self.prev, i))
                self.assertBytes(buf, pattern(n, "fresh", self.prev, i),
                                 f"fresh buffer {i} of {n} B")
                out = buf = None  # the memory goes back before the next

    def test_ssend(self):
        self.need_peers()
        for tag, n in enumerate(SIZES):
            out = self.msg("ssend", self.rank, self.next, tag, n)
            buf = filled(n)
            self.ring(lambda: self.comm.Ssend(out, self.next, tag),
                      lambda: self.comm.Recv(buf, self.prev, tag))
            self.assertBytes(buf, self.msg("ssend", self.prev, self.rank,
                                           tag, n), f"Ssend {n} B")

    def test_bsend(self):
        # Bsend copies into the attached buffer and returns: all sends
        # first, then the receives, needs no ordering.
        self.need_peers()
        MPI.Attach_buffer(bytearray(sum(n + MPI.BSEND_OVERHEAD
                                        for n in SIZES)))
        for tag, n in enumerate(SIZES):
            out = self.msg("bsend", self.rank, self.next, tag, n)
            self.comm.Bsend(out, self.next, tag)
            out[:] = filled(n, 0)  # the buffered copy is what goes out
        for tag, n in enumerate(SIZES):
            buf = filled(n)
            self.comm.Recv(buf, self.prev, tag)
            self.assertBytes(buf, self.msg("bsend", self.prev, self.rank,
                                           tag, n), f"Bsend {n} B")
        MPI.Detach_buffer()  # waits until the buffered messages left

    def test_rsend(self):
        # Rsend is only valid with the receive already posted: Irecv, then a
        # barrier, then Rsend.
        self.need_peers()
        bufs = [filled(n) for n in SIZES]
        reqs = [self.comm.Irecv(b, self.prev, t) for t, b in enumerate(bufs)]
        self.comm.Barrier()
        for tag, n in enumerate(SIZES):
            self.comm.Rsend(self.msg("rsend", self.rank, self.next, tag, n),
                            self.next, tag)
        MPI.Request.Waitall(reqs)
        for tag, n in enumerate(SIZES):
            self.assertBytes(bufs[tag], self.msg("rsend", self.prev,
                                                 self.rank, tag, n),
                             f"Rsend {n} B")

    def test_sendrecv(self):
        self.need_peers()
        for tag, n in enumerate(SIZES):
            buf = filled(n + 5)
            st = MPI.Status()
            self.comm.Sendrecv(self.msg("sr", self.rank, self.next, tag, n),
                               self.next, tag, buf, self.prev, tag, st)
            self.assertStatus(st, self.prev, tag, n, f"Sendrecv {n} B")
            self.assertReceived(buf, n, self.msg("sr", self.prev, self.rank,
                                                 tag, n), f"Sendrecv {n} B")

    def test_sendrecv_replace(self):
        self.need_peers()
        for tag, n in enumerate(SIZES):
            buf = self.msg("srr", self.rank, self.next, tag, n)
            self.comm.Sendrecv_replace(buf, self.next, tag, self.prev, tag)
            self.assertBytes(buf, self.msg("srr", self.prev, self.rank,
                                           tag, n), f"Sendrecv_replace {n} B")

    def test_both_directions(self):
        # To both neighbours and from both at once (with 2 ranks the same
        # peer twice, told apart by the tag): each rank is reader and writer
        # of concurrent rendezvous transfers.
        self.need_peers()
        for n in SIZES:
            peers = ((self.next, 1), (self.prev, 2))  # (peer, tag towards)
            bufs = {}
            reqs = []
            for peer, tag in peers:  # receive what peer sends towards me
                back = 3 - tag
                bufs[peer, back] = filled(n)
                reqs.append(self.comm.Irecv(bufs[peer, back], peer, back))
            for peer, tag in peers:
                reqs.append(self.comm.Isend(
                    self.msg("both", self.rank, peer, tag, n), peer, tag))
            MPI.Request.Waitall(reqs)
            for (peer, tag), buf in bufs.items():
                want = self.msg("both", peer, self.rank, tag, n)
                self.assertBytes(buf, want, f"both ways {n} B tag {tag}")

    def test_many_tags_out_of_order(self):
        # 64 messages in flight, received in a shuffled tag order with
        # blocking Recv: most arrive unexpected and wait for their match.
        self.need_peers()
        sizes = [(0, 1, 7, 4095, 64 * KiB, 64 * KiB + 1, 200003, MiB)[k % 8]
                 for k in range(64)]
        reqs = [self.comm.Isend(self.msg("many", self.rank, self.next, t, n),
                                self.next, t) for t, n in enumerate(sizes)]
        order = list(range(len(sizes)))
        random.Random(self.rank).shuffle(order)
        for t in order:
            buf = filled(sizes[t])
            st = MPI.Status()
            self.comm.Recv(buf, self.prev, t, st)
            self.assertStatus(st, self.prev, t, sizes[t], f"tag {t}")
            self.assertBytes(buf, self.msg("many", self.prev, self.rank, t,
                                           sizes[t]), f"tag {t} {sizes[t]} B")
        MPI.Request.Waitall(reqs)

    def test_many_rendezvous_at_once(self):
        # 32 rendezvous messages to and from every other rank, all receives
        # posted first: many GETs in flight at once, more than a transport
        # has work slots or copy channels, so its queueing is exercised.
        self.need_peers()
        peers = [r for r in range(self.size) if r != self.rank]
        count = 32
        bufs = {(p, t): filled(256 * KiB + t) for p in peers
                for t in range(count)}
        reqs = [self.comm.Irecv(b, p, t) for (p, t), b in bufs.items()]
        reqs += [self.comm.Isend(self.msg("burst", self.rank, p, t,
                                          256 * KiB + t), p, t)
                 for p in peers for t in range(count)]
        MPI.Request.Waitall(reqs)
        for (p, t), buf in bufs.items():
            self.assertBytes(buf, self.msg("burst", p, self.rank, t,
                                           256 * KiB + t),
                             f"burst message {t} from {p}")

    def test_same_tag_in_order(self):
        # MPI's non-overtaking rule: eager and rendezvous messages on one
        # (source, tag) are matched in send order.
        self.need_peers()
        sizes = (MiB, 7, 64 * KiB + 1, 0, 4095, 4 * MiB + 3, 1)
        reqs = [self.comm.Isend(self.msg("order", self.rank, self.next, i, n),
                                self.next, 5) for i, n in enumerate(sizes)]
        for i, n in enumerate(sizes):
            buf = filled(max(sizes))
            st = MPI.Status()
            self.comm.Recv(buf, self.prev, 5, st)
            self.assertStatus(st, self.prev, 5, n, f"message {i}")
            self.assertReceived(buf, n, self.msg("order", self.prev, self.rank,
                                                 i, n), f"message {i} {n} B")
        MPI.Request.Waitall(reqs)

    def test_any_source_any_tag(self):
        # Each rank in turn collects messages from every other rank with
        # ANY_SOURCE/ANY_TAG: per sender one per size class, the size and tag
        # depending on sender and class.  Senders race each other, so only
        # the Status tells which message came (one sender's arrive in order).
        self.need_peers()
        bases = (0, 7, 64 * KiB, MiB)
        for root in range(self.size):
            if self.rank != root:
                for i, base in enumerate(bases):
                    n, tag = base + self.rank, 100 * i + self.rank
                    self.comm.Send(self.msg("any", self.rank, root, tag, n),
                                   root, tag)
                continue
            seen = []
            for _ in range((self.size - 1) * len(bases)):
                buf = filled(bases[-1] + self.size + 1)
                st = MPI.Status()
                self.comm.Recv(buf, MPI.ANY_SOURCE, MPI.ANY_TAG, st)
                src, tag = st.Get_source(), st.Get_tag()
                i = tag // 100
                n = bases[i] + src
                self.assertStatus(st, src, 100 * i + src, n, "ANY_SOURCE")
                self.assertReceived(buf, n, self.msg("any", src, root, tag,
                                                     n),
                                    f"ANY_SOURCE from {src} {n} B")
                self.assertEqual([k for s, k in seen if s == src],
                                 list(range(i)), f"order of {src}'s messages")
                seen.append((src, i))
            self.assertEqual(sorted(seen), [(s, i) for s in range(self.size)
                                            if s != root
                                            for i in range(len(bases))])

    def test_probe_then_recv(self):
        # Probe/Iprobe report the size; the receive buffer is exactly that.
        self.need_peers()
        for tag, n in enumerate(SIZES):
            req = self.comm.Isend(self.msg("probe", self.rank, self.next, tag,
                                           n), self.next, tag)
            st = MPI.Status()
            if tag % 2:
                self.comm.Probe(MPI.ANY_SOURCE, MPI.ANY_TAG, st)
            else:
                while not self.comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, st):
                    pass
            self.assertStatus(st, self.prev, tag, n, f"Probe {n} B")
            buf = filled(st.Get_count(MPI.BYTE))
            self.comm.Recv(buf, st.Get_source(), st.Get_tag())
            req.Wait()
            self.assertBytes(buf, self.msg("probe", self.prev, self.rank, tag,
                                           n), f"Recv after Probe {n} B")

    def test_mprobe_mrecv(self):
        # Two messages on one tag: the first is taken by Mprobe, so the
        # plain Recv gets the second; then Mrecv delivers the first.
        self.need_peers()
        for n in SIZES:
            reqs = [self.comm.Isend(self.msg("mprobe", self.rank, self.next,
                                             i, n + i), self.next, 9)
                    for i in (0, 1)]
            st = MPI.Status()
            msg = self.comm.Mprobe(self.prev, 9, st)
            self.assertStatus(st, self.prev, 9, n, f"Mprobe {n} B")
            second = filled(n + 1)
            self.comm.Recv(second, self.prev, 9)
            first = filled(n)
            msg.Recv(first, st)
            self.assertStatus(st, self.prev, 9, n, f"Mrecv {n} B")
            MPI.Request.Waitall(reqs)
            self.assertBytes(first, self.msg("mprobe", self.prev, self.rank,
                                             0, n), f"Mrecv {n} B")
            self.assertBytes(second, self.msg("mprobe", self.prev, self.rank,
                                              1, n + 1), f"Recv after Mprobe "
                             f"{n + 1} B")

    def test_improbe_imrecv(self):
        self.need_peers()
        for tag, n in enumerate(SIZES):
            req = self.comm.Isend(self.msg("improbe", self.rank, self.next,
                                           tag, n), self.next, tag)
            st = MPI.Status()
            msg = None
            while msg is None:
                msg = self.comm.Improbe(self.prev, tag, st)
            self.assertStatus(st, self.prev, tag, n, f"Improbe {n} B")
            buf = filled(n)
            msg.Irecv(buf).Wait()
            req.Wait()
            self.assertBytes(buf, self.msg("improbe", self.prev, self.rank,
                                           tag, n), f"Imrecv {n} B")

    def test_persistent_requests(self):
        # The same requests restarted with new contents each round: stale
        # data from an earlier round (or a cached registration) shows.
        self.need_peers()
        outs = [filled(n) for n in SIZES]
        bufs = [filled(n) for n in SIZES]
        reqs = [self.comm.Recv_init(b, self.prev, t)
                for t, b in enumerate(bufs)]
        reqs += [self.comm.Send_init(o, self.next, t)
                 for t, o in enumerate(outs)]
        for rnd in range(4):
            for t, n in enumerate(SIZES):
                outs[t][:] = self.msg(f"persist{rnd}", self.rank, self.next,
                                      t, n)
                bufs[t][:] = filled(n)
            MPI.Prequest.Startall(reqs)
            MPI.Request.Waitall(reqs)
            for t, n in enumerate(SIZES):
                self.assertBytes(bufs[t], self.msg(f"persist{rnd}", self.prev,
                                                   self.rank, t, n),
                                 f"persistent round {rnd} {n} B")
        for r in reqs:
            r.Free()

    def test_cancel_unmatched_irecv(self):
        # A cancelled receive must neither complete with data nor consume
        # the message sent later on its tag.
        self.need_peers()
        buf = filled(MiB)
        req = self.comm.Irecv(buf, self.prev, 77)
        req.Cancel()
        st = MPI.Status()
        req.Wait(st)
        self.assertTrue(st.Is_cancelled(), "Irecv not cancelled")
        self.assertBytes(buf, filled(MiB), "cancelled Irecv's buffer")
        self.comm.Barrier()  # nobody sends on tag 77 before all cancelled
        for n in (7, MiB):
            out = self.msg("cancel", self.rank, self.next, 77, n)
            got = filled(n)
            self.ring(lambda: self.comm.Send(out, self.next, 77),
                      lambda: self.comm.Recv(got, self.prev, 77))
            self.assertBytes(got, self.msg("cancel", self.prev, self.rank, 77,
                                           n), f"after Cancel {n} B")

    def test_truncation(self):
        # A too small receive buffer: MPI.Exception with ERR_TRUNCATE (under
        # ERRORS_RETURN mpi4py raises), the sender completes, and the
        # communicator still works afterwards.
        self.need_peers()
        self.comm.Set_errhandler(MPI.ERRORS_RETURN)
        for tag, n in enumerate(SIZES):
            if n < 2:
                continue
            req = self.comm.Isend(self.msg("trunc", self.rank, self.next, tag,
                                           n), self.next, tag)
            small = filled(n // 2)
            with self.assertRaises(MPI.Exception, msg=f"Recv {n} B into "
                                   f"{n // 2} B") as cm:
                if tag % 2:
                    self.comm.Recv(small, self.prev, tag)
                else:
                    self.comm.Irecv(small, self.prev, tag).Wait()
            self.assertEqual(cm.exception.Get_error_class(), MPI.ERR_TRUNCATE,
                             f"rank {self.rank}: {n} B into {n // 2} B: "
                             f"{cm.exception}")
            req.Wait()
            # the next message on the same tag arrives intact
            buf = filled(n)
            self.comm.Sendrecv(self.msg("after", self.rank, self.next, tag, n),
                               self.next, tag, buf, self.prev, tag)
            self.assertBytes(buf, self.msg("after", self.prev, self.rank, tag,
                                           n), f"after truncation {n} B")


# -- derived datatypes ------------------------------------------------------

class Datatypes(MPITestCase):
    """Non-contiguous layouts: UCX packs and unpacks them through Open MPI's
    convertor (generic datatypes), a path apart from the zero-copy one."""

    def exchange(self, out, stype, scount, inbuf, rtype, rcount):
        self.ring(lambda: self.comm.Send([out, scount, stype], self.next, 3),
                  lambda: self.comm.Recv([inbuf, rcount, rtype], self.prev, 3))

    def test_vector(self):
        self.need_peers()
        # (count, blocklen, stride) in bytes: 3 blocks .. ~1 MiB .. ~4 MiB
        for count, blk, stride in ((3, 5, 9), (87382, 12, 20),
                                   (262147, 16, 17)):
            what = f"vector {count}x{blk}/{stride}"
            extent = stride * (count - 1) + blk
            vec = MPI.BYTE.Create_vector(count, blk, stride).Commit()
            src = pattern(extent, "vec", self.rank, count)
            want = gather_blocks(pattern(extent, "vec", self.prev, count),
                                 count, blk, stride)
            # vector -> contiguous
            got = filled(count * blk)
            self.exchange(src, vec, 1, got, MPI.BYTE, count * blk)
            self.assertBytes(got, want, what + " to contiguous")
            # vector -> vector of another stride: gaps stay SENTINEL
            stride2 = stride + 3
            vec2 = MPI.BYTE.Create_vector(count, blk, stride2).Commit()
            got = filled(stride2 * (count - 1) + blk)
            self.exchange(src, vec, 1, got, vec2, 1)
            vec2.Free()
            exp = filled(len(got))
            scatter_blocks(exp, want, count, blk, stride2)
            self.assertBytes(got, exp, what + f" to stride {stride2}")
            # contiguous -> vector
            got = filled(extent)
            self.exchange(pattern(count * blk, "vc", self.rank), MPI.BYTE,
                          count * blk, got, vec, 1)
            exp = filled(extent)
            scatter_blocks(exp, pattern(count * blk, "vc", self.prev),
                           count, blk, stride)
            self.assertBytes(got, exp, "contiguous to " + what)
            vec.Free()

    def test_vector_int64_count(self):
        # count > 1 of a vector of int64: the type's extent places the
        # second element right after the last block.
        self.need_peers()
        count, blk, stride, reps = 4096, 3, 5, 8  # ~800 KiB of data
        vec = MPI.INT64_T.Create_vector(count, blk, stride).Commit()
        elems = (stride * (count - 1) + blk) * reps
        src = ipattern(elems, "qvec", self.rank)
        got = array.array("q", bytes(8 * count * blk * reps))
        self.exchange(src, vec, reps, got, MPI.INT64_T,
                      count * blk * reps)
        prev = ipattern(elems, "qvec", self.prev)
        ext = stride * (count - 1) + blk
        want = array.array("q")
        for r in range(reps):
            for i in range(count):
                base = r * ext + i * stride
                want.extend(prev[base:base + blk])
        self.assertBytes(got, want, f"{reps} x int64 vector")
        vec.Free()

    def test_indexed(self):
        self.need_peers()
        for nblocks in (4, 150001):
            # irregular blocks (1..13 B) and gaps (0..4 B): ~1 MiB at 150001
            lens = [1 + (i * 7) % 13 for i in range(nblocks)]
            disps, pos = [], 0
            for i, ln in enumerate(lens):
                pos += i % 5
                disps.append(pos)
                pos += ln
            extent, total = pos, sum(lens)
            what = f"indexed {nblocks} blocks {total} B"
            idx = MPI.BYTE.Create_indexed(lens, disps).Commit()
            # the receiving layout: the same blocks in reverse order
            rdisps = [extent - d - ln for d, ln in zip(disps, lens)]
            ridx = MPI.BYTE.Create_indexed(lens, rdisps).Commit()
            src = pattern(extent, "idx", self.rank, nblocks)
            prev = pattern(extent, "idx", self.prev, nblocks)
            want = b"".join(prev[d:d + ln] for d, ln in zip(disps, lens))
            got = filled(total)
            self.exchange(src, idx, 1, got, MPI.BYTE, total)
            self.assertBytes(got, want, what + " to contiguous")
            got = filled(extent)
            self.exchange(src, idx, 1, got, ridx, 1)
            exp = filled(extent)
            for d, rd, ln in zip(disps, rdisps, lens):
                exp[rd:rd + ln] = prev[d:d + ln]
            self.assertBytes(got, exp, what + " to reversed indexed")
            idx.Free()
            ridx.Free()


# -- pickled objects (lowercase API) ----------------------------------------

def obj(what, rank, *key, blob=2 * MiB):
    """A dict with a large bytes object: pickled, it goes by rendezvous."""
    return {"what": what, "rank": rank, "key": key,
            "list": [rank, what, 3.25, None, (1, 2)],
            "blob": bytes(pattern(blob, what, rank, *key))}


class Pickle(MPITestCase):

    def test_send_recv(self):
        self.need_peers()
        for blob in (0, 100, 2 * MiB):
            out = obj("send", self.rank, self.next, blob=blob)
            got = {}
            st = MPI.Status()

            def recv():
                got["v"] = self.comm.recv(source=self.prev, tag=4, status=st)
            self.ring(lambda: self.comm.send(out, self.next, 4), recv)
            self.assertObject(got["v"], obj("send", self.prev, self.rank,
                                            blob=blob), f"recv {blob} B blob")
            self.assertEqual((st.Get_source(), st.Get_tag()), (self.prev, 4))

    def test_isend_irecv_sendrecv(self):
        self.need_peers()
        small = {"rank": self.rank, "to": self.next, "x": list(range(50))}
        big = obj("isend", self.rank, self.next)
        reqs = [self.comm.isend(small, self.next, 1),
                self.comm.isend(big, self.next, 2)]
        # irecv's default buffer is small: give the large one a buffer
        got_big = self.comm.irecv(bytearray(3 * MiB), self.prev, 2).wait()
        got_small = self.comm.irecv(source=self.prev, tag=1).wait()
        MPI.Request.waitall(reqs)
        self.assertObject(got_small, {"rank": self.prev, "to": self.rank,
                                      "x": list(range(50))}, "irecv small")
        self.assertObject(got_big, obj("isend", self.prev, self.rank),
                          "irecv 2 MiB")
        got = self.comm.sendrecv(obj("sr", self.rank), self.next, 3,
                                 source=self.prev, recvtag=3)
        self.assertObject(got, obj("sr", self.prev), "sendrecv")

    def test_collectives(self):
        comm, rank, size = self.comm, self.rank, self.size
        for root in range(size):
            got = comm.bcast(obj("bcast", root) if rank == root else None,
                             root)
            self.assertObject(got, obj("bcast", root), f"bcast root {root}")
        got = comm.gather(obj("gather", rank), root=size - 1)
        self.assertObject(got, [obj("gather", r) for r in range(size)]
                          if rank == size - 1 else None, "gather")
        got = comm.scatter([obj("scatter", r) for r in range(size)]
                           if rank == 0 else None, root=0)
        self.assertObject(got, obj("scatter", rank), "scatter")
        got = comm.allgather(obj("allgather", rank))
        self.assertObject(got, [obj("allgather", r) for r in range(size)],
                          "allgather")
        got = comm.alltoall([obj("a2a", rank, d, blob=MiB)
                             for d in range(size)])
        self.assertObject(got, [obj("a2a", s, rank, blob=MiB)
                                for s in range(size)], "alltoall")


# -- collectives ------------------------------------------------------------

class Collectives(MPITestCase):
    """Open MPI's tuned algorithms build on point-to-point: large buffers
    are split in segments and pipelined through rendezvous transfers."""

    BYTES = (1, 4095, 64 * KiB + 1, MiB + 5, 4 * MiB + 3)
    INTS = (1, 1000, 131072 + 1, 524288)  # int64s: up to 4 MiB

    def test_bcast(self):
        for root in range(self.size):
            for n in self.BYTES:
                buf = (pattern(n, "bcast", root) if self.rank == root
                       else filled(n))
                self.comm.Bcast(buf, root)
                self.assertBytes(buf, pattern(n, "bcast", root),
                                 f"Bcast {n} B root {root}")

    def test_reduce_allreduce(self):
        for n in self.INTS:
            mine = ipattern(n, "red", self.rank)
            want = isum(ipattern(n, "red", r) for r in range(self.size))
            for root in {0, self.size - 1}:
                got = array.array("q", bytes(8 * n))
                self.comm.Reduce(mine, got if self.rank == root else None,
                                 MPI.SUM, root)
                if self.rank == root:
                    self.assertBytes(got, want, f"Reduce {n} int64 root "
                                     f"{root}")
            got = array.array("q", bytes(8 * n))
            self.comm.Allreduce(mine, got, MPI.SUM)
            self.assertBytes(got, want, f"Allreduce {n} int64")
            inplace = array.array("q", mine)
            self.comm.Allreduce(MPI.IN_PLACE, inplace, MPI.SUM)
            self.assertBytes(inplace, want, f"Allreduce IN_PLACE {n} int64")

    def test_gather_scatter(self):
        size, rank = self.size, self.rank
        for n in (1, 4095, 64 * KiB + 1, MiB):
            root = n % size
            # Gather: block r of the root's buffer is rank r's
            got = filled(n * size) if rank == root else None
            self.comm.Gather(pattern(n, "gather", rank), got, root)
            if rank == root:
                self.assertBytes(got, b"".join(pattern(n, "gather", r)
                                               for r in range(size)),
                                 f"Gather {n} B")
            # Scatter: rank r gets block r of the root's buffer
            src = (b"".join(pattern(n, "scatter", r) for r in range(size))
                   if rank == root else None)
            got = filled(n)
            self.comm.Scatter(src, got, root)
            self.assertBytes(got, pattern(n, "scatter", rank),
                             f"Scatter {n} B")

    def vlayout(self, base):
        """Counts per rank (all different) and displacements with gaps."""
        counts = [base + 13 * r + 1 for r in range(self.size)]
        displs, pos = [], 0
        for c in counts:
            pos += 5  # a gap before each block: must stay SENTINEL
            displs.append(pos)
            pos += c
        return counts, displs, pos + 3

    def vexpect(self, what, counts, displs, total):
        exp = filled(total)
        for r, (c, d) in enumerate(zip(counts, displs)):
            exp[d:d + c] = pattern(c, what, r)
        return exp

    def test_gatherv_scatterv(self):
        size, rank = self.size, self.rank
        for base in (0, 4095, MiB):
            counts, displs, total = self.vlayout(base)
            root = size - 1
            got = filled(total) if rank == root else None
            self.comm.Gatherv(pattern(counts[rank], "gv", rank),
                              [got, (counts, displs), MPI.BYTE], root)
            if rank == root:
                self.assertBytes(got, self.vexpect("gv", counts, displs,
                                                   total), f"Gatherv {base}")
            src = (self.vexpect("sv", counts, displs, total)
                   if rank == root else None)
            got = filled(counts[rank] + 4)
            self.comm.Scatterv([src, (counts, displs), MPI.BYTE],
                               [got, counts[rank], MPI.BYTE], root)
            self.assertReceived(got, counts[rank],
                                pattern(counts[rank], "sv", rank),
                                f"Scatterv {base}")

    def test_allgather_allgatherv(self):
        size, rank = self.size, self.rank
        for n in (1, 4095, MiB + 1):
            got = filled(n * size)
            self.comm.Allgather(pattern(n, "ag", rank), got)
            self.assertBytes(got, b"".join(pattern(n, "ag", r)
                                           for r in range(size)),
                             f"Allgather {n} B")
            counts, displs, total = self.vlayout(n)
            got = filled(total)
            self.comm.Allgatherv(pattern(counts[rank], "agv", rank),
                                 [got, (counts, displs), MPI.BYTE])
            self.assertBytes(got, self.vexpect("agv", counts, displs, total),
                             f"Allgatherv {n}")

    def test_alltoall_alltoallv(self):
        size, rank = self.size, self.rank
        for n in (1, 4095, MiB):
            src = b"".join(pattern(n, "a2a", rank, d) for d in range(size))
            got = filled(n * size)
            self.comm.Alltoall(src, got)
            self.assertBytes(got, b"".join(pattern(n, "a2a", s, rank)
                                           for s in range(size)),
                             f"Alltoall {n} B")

            # Alltoallv: the count depends on (source, destination)
            def cnt(s, d):
                return n + 11 * s + 3 * d

            def layout(counts):
                displs, pos = [], 0
                for c in counts:
                    pos += 7
                    displs.append(pos)
                    pos += c
                return displs, pos + 1
            scounts = [cnt(rank, d) for d in range(size)]
            rcounts = [cnt(s, rank) for s in range(size)]
            sdispls, stotal = layout(scounts)
            rdispls, rtotal = layout(rcounts)
            src = filled(stotal, 0)
            for d in range(size):
                src[sdispls[d]:sdispls[d] + scounts[d]] = pattern(
                    scounts[d], "a2av", rank, d)
            got = filled(rtotal)
            self.comm.Alltoallv([src, (scounts, sdispls), MPI.BYTE],
                                [got, (rcounts, rdispls), MPI.BYTE])
            exp = filled(rtotal)
            for s in range(size):
                exp[rdispls[s]:rdispls[s] + rcounts[s]] = pattern(
                    rcounts[s], "a2av", s, rank)
            self.assertBytes(got, exp, f"Alltoallv {n}")

    def test_reduce_scatter_block(self):
        for n in (1, 1000, 131072):  # per rank: up to 1 MiB of int64
            mine = ipattern(n * self.size, "rsb", self.rank)
            total = isum(ipattern(n * self.size, "rsb", r)
                         for r in range(self.size))
            got = array.array("q", bytes(8 * n))
            self.comm.Reduce_scatter_block(mine, got, MPI.SUM)
            self.assertBytes(got, total[self.rank * n:(self.rank + 1) * n],
                             f"Reduce_scatter_block {n} int64")

    def test_scan_exscan(self):
        for n in (1, 1000, 131072 + 1):
            mine = ipattern(n, "scan", self.rank)
            got = array.array("q", bytes(8 * n))
            self.comm.Scan(mine, got, MPI.SUM)
            self.assertBytes(got, isum(ipattern(n, "scan", r)
                                       for r in range(self.rank + 1)),
                             f"Scan {n} int64")
            got = array.array("q", bytes(8 * n))
            self.comm.Exscan(mine, got, MPI.SUM)
            if self.rank > 0:  # rank 0's Exscan result is undefined
                self.assertBytes(got, isum(ipattern(n, "scan", r)
                                           for r in range(self.rank)),
                                 f"Exscan {n} int64")

    def test_barrier(self):
        # Ranks arrive at different times; nobody may leave before the last
        # arrived (CLOCK_MONOTONIC is one clock for the whole node).
        for _ in range(20):
            self.comm.Barrier()
        names = self.comm.allgather(MPI.Get_processor_name())
        if len(set(names)) > 1:
            self.skipTest("ranks on several nodes: no common clock")
        time.sleep(0.05 * self.rank)
        arrived = time.monotonic()
        self.comm.Barrier()
        left = time.monotonic()
        last = max(self.comm.allgather(arrived))
        self.assertGreaterEqual(left, last, "left the barrier before the "
                                "last rank arrived")

    def test_nonblocking(self):
        # Ibcast and Iallreduce in flight together, with p2p traffic too.
        n, ni = 4 * MiB + 3, 131072
        for root in range(self.size):
            buf = (pattern(n, "ibcast", root) if self.rank == root
                   else filled(n))
            mine = ipattern(ni, "iallred", self.rank, root)
            got = array.array("q", bytes(8 * ni))
            reqs = [self.comm.Ibcast(buf, root),
                    self.comm.Iallreduce(mine, got, MPI.SUM)]
            if self.size > 1:
                pbuf = filled(MiB)
                reqs += [self.comm.Irecv(pbuf, self.prev, 1),
                         self.comm.Isend(pattern(MiB, "p", self.rank),
                                         self.next, 1)]
            MPI.Request.Waitall(reqs)
            self.assertBytes(buf, pattern(n, "ibcast", root),
                             f"Ibcast {n} B root {root}")
            self.assertBytes(got, isum(ipattern(ni, "iallred", r, root)
                                       for r in range(self.size)),
                             f"Iallreduce {ni} int64")
            if self.size > 1:
                self.assertBytes(pbuf, pattern(MiB, "p", self.prev),
                                 "p2p beside Ibcast/Iallreduce")


# -- communicators ----------------------------------------------------------

class Communicators(MPITestCase):

    def check_comm(self, comm, members, what):
        """comm's rank i is world rank members[i]; a ring exchange of 1 MiB
        and a Bcast inside it arrive intact."""
        size, rank = comm.Get_size(), comm.Get_rank()
        wrank = WORLD.Get_rank()
        self.assertEqual(size, len(members), what + " size")
        self.assertEqual(members[rank], wrank, what + " rank")
        self.assertEqual(comm.allgather(wrank), members, what + " members")
        nxt, prv = (rank + 1) % size, (rank - 1) % size
        buf = filled(MiB + 1)
        comm.Sendrecv(pattern(MiB + 1, what, members[rank], members[nxt]),
                      nxt, 1, buf, prv, 1)
        self.assertBytes(buf, pattern(MiB + 1, what, members[prv], wrank),
                         what + " Sendrecv")
        buf = pattern(MiB, what, "bcast") if rank == 0 else filled(MiB)
        comm.Bcast(buf, 0)
        self.assertBytes(buf, pattern(MiB, what, "bcast"), what + " Bcast")

    def test_split(self):
        # color: parity; key: -rank, so the order within is reversed
        color = self.rank % 2
        sub = self.comm.Split(color, -self.rank)
        members = [r for r in reversed(range(self.size)) if r % 2 == color]
        self.check_comm(sub, members, f"Split color {color}")
        sub.Free()

    def test_dup(self):
        dup = self.comm.Dup()
        self.assertEqual(MPI.Comm.Compare(dup, self.comm), MPI.CONGRUENT)
        self.check_comm(dup, list(range(self.size)), "Dup")
        if self.size < 2:
            return
        # Same source and tag on both: sent on dup first, the receive on
        # the original must still get the original's message.
        for n in (7, 64 * KiB + 1, MiB):
            reqs = [dup.Isend(pattern(n, "dup", self.rank), self.next, 6),
                    self.comm.Isend(pattern(n, "orig", self.rank),
                                    self.next, 6)]
            a, b = filled(n), filled(n)
            self.comm.Recv(a, MPI.ANY_SOURCE, 6)
            dup.Recv(b, MPI.ANY_SOURCE, 6)
            MPI.Request.Waitall(reqs)
            self.assertBytes(a, pattern(n, "orig", self.prev),
                             f"original comm {n} B")
            self.assertBytes(b, pattern(n, "dup", self.prev),
                             f"dup comm {n} B")
        dup.Free()

    def test_create_group(self):
        group = self.comm.Get_group()
        # everyone, in reverse order (Create_group: members only)
        rev = group.Incl(list(reversed(range(self.size))))
        new = self.comm.Create_group(rev, tag=12)
        rev.Free()
        self.check_comm(new, list(reversed(range(self.size))),
                        "Create_group reversed")
        new.Free()
        # the even ranks (Create: collective, COMM_NULL outside)
        evens = list(range(0, self.size, 2))
        sub = group.Incl(evens)
        new = self.comm.Create(sub)
        sub.Free()
        if self.rank % 2:
            self.assertEqual(new, MPI.COMM_NULL)
        else:
            self.check_comm(new, evens, "Create evens")
            new.Free()
        group.Free()


# -- one-sided --------------------------------------------------------------

class RMA(MPITestCase):
    """Each rank puts into the next rank's window and gets from it; all
    ranks accumulate into every window.  Offsets inside the window and the
    bytes around the target range are checked too."""

    SIZES = (1, 4095, 64 * KiB + 1, MiB)
    PAD = 24  # target offset; the window has PAD bytes on both sides

    def fence_put_get(self, win, mem, n, what):
        pad = self.PAD
        mem[:] = filled(len(mem))
        win.Fence()
        win.Put(pattern(n, "put", self.rank, n), self.next, pad)
        win.Fence()
        self.assertReceived(memoryview(mem)[pad:], n,
                            pattern(n, "put", self.prev, n), f"{what} Put {n}")
        self.assertBytes(memoryview(mem)[:pad], filled(pad),
                         f"{what} Put {n} (bytes before the target)")
        mem[pad:pad + n] = pattern(n, "get", self.rank, n)
        win.Fence()
        got = filled(n)
        win.Get(got, self.next, pad)
        win.Fence()
        self.assertBytes(got, pattern(n, "get", self.next, n),
                         f"{what} Get {n}")

    def accumulate(self, win, mem, n, what):
        # the window holds n int64 at byte offset PAD, zeroed
        pad = self.PAD
        view = memoryview(mem)[pad:pad + 8 * n].cast("q")
        view[:] = array.array("q", bytes(8 * n))
        win.Fence()
        for target in range(self.size):
            win.Accumulate([ipattern(n, "acc", self.rank, target),
                            MPI.INT64_T], target,
                           [pad, n, MPI.INT64_T], MPI.SUM)
        win.Fence()
        self.assertBytes(view, isum(ipattern(n, "acc", r, self.rank)
                                    for r in range(self.size)),
                         f"{what} Accumulate {n} int64")
        view.release()

    def test_win_create(self):
        for n in self.SIZES:
            mem = filled(n + 2 * self.PAD)
            win = MPI.Win.Create(mem, 1, comm=self.comm)
            self.fence_put_get(win, mem, n, "Win.Create")
            self.accumulate(win, mem, max(1, n // 8), "Win.Create")
            win.Free()

    def test_win_allocate(self):
        for n in self.SIZES:
            win = MPI.Win.Allocate(n + 2 * self.PAD, 1, comm=self.comm)
            mem = memoryview(win.tomemory()).cast("B")
            self.fence_put_get(win, mem, n, "Win.Allocate")
            self.accumulate(win, mem, max(1, n // 8), "Win.Allocate")
            mem.release()
            win.Free()

    def test_lock_unlock(self):
        # Passive target: the target takes no part in the transfer.
        pad = self.PAD
        for n in self.SIZES:
            mem = filled(n + 2 * pad)
            win = MPI.Win.Create(mem, 1, comm=self.comm)
            win.Lock(self.next, MPI.LOCK_EXCLUSIVE)
            win.Put(pattern(n, "lput", self.rank), self.next, pad)
            win.Unlock(self.next)
            self.comm.Barrier()  # all Puts are complete
            win.Lock(self.rank, MPI.LOCK_SHARED)  # see them locally
            self.assertReceived(memoryview(mem)[pad:], n,
                                pattern(n, "lput", self.prev),
                                f"Lock/Put/Unlock {n}")
            win.Unlock(self.rank)
            self.comm.Barrier()  # all checked before anyone Gets
            got = filled(n)
            win.Lock(self.prev, MPI.LOCK_SHARED)
            win.Get(got, self.prev, pad)
            win.Unlock(self.prev)
            self.assertBytes(got, pattern(n, "lput",
                                          (self.prev - 1) % self.size),
                             f"Lock/Get/Unlock {n}")
            # exclusive locks serialise everyone's Accumulate to rank 0
            k = max(1, n // 8)
            self.comm.Barrier()  # all Gets done before rank 0 changes mem
            if self.rank == 0:  # local stores: under a lock too
                win.Lock(0, MPI.LOCK_EXCLUSIVE)
                mem[pad:pad + 8 * k] = bytes(8 * k)
                win.Unlock(0)
            self.comm.Barrier()
            win.Lock(0, MPI.LOCK_EXCLUSIVE)
            win.Accumulate([ipattern(k, "lacc", self.rank), MPI.INT64_T],
                           0, [pad, k, MPI.INT64_T], MPI.SUM)
            win.Unlock(0)
            self.comm.Barrier()
            if self.rank == 0:
                win.Lock(0, MPI.LOCK_SHARED)
                self.assertBytes(memoryview(mem)[pad:pad + 8 * k],
                                 isum(ipattern(k, "lacc", r)
                                      for r in range(self.size)),
                                 f"Lock/Accumulate/Unlock {k} int64")
                win.Unlock(0)
            self.comm.Barrier()
            win.Free()

    def test_win_allocate_shared(self):
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        on_one_node = node.Get_size() == self.size
        node.Free()
        if not on_one_node:
            self.skipTest("ranks on several nodes")
        for n in self.SIZES:
            mine = n + 3 * self.rank  # segments of different sizes
            win = MPI.Win.Allocate_shared(mine, 1, comm=self.comm)
            win.Fence()
            mem = memoryview(win.tomemory()).cast("B")
            mem[:] = pattern(mine, "shm", self.rank)  # plain stores
            mem.release()
            win.Fence()
            for r in range(self.size):
                seg, unit = win.Shared_query(r)
                seg = memoryview(seg).cast("B")
                self.assertEqual((len(seg), unit), (n + 3 * r, 1))
                self.assertBytes(seg, pattern(n + 3 * r, "shm", r),
                                 f"shared segment of rank {r} ({n})")
                seg.release()
            win.Fence()
            win.Free()


# -- main -------------------------------------------------------------------

class RankStream:
    """unittest's output stream: each line prefixed with the rank, written
    in one piece, so the ranks' lines stay whole in mpirun's output."""

    def __init__(self, out):
        self.out, self.pending = out, ""
        self.prefix = f"[rank {WORLD.Get_rank()}/{WORLD.Get_size()}] "

    def write(self, text):
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.out.write(self.prefix + line + "\n")
            self.out.flush()

    def flush(self):
        pass  # a line goes out when complete: "test ... ok" stays one line

    def close(self):
        if self.pending:
            self.write("\n")


class Result(unittest.TextTestResult):
    """Prints a failure's traceback at once, not only in the summary (which
    an aborted job never reaches), and marks the test failed on this rank
    for agree()."""

    def report(self, kind, test, err):
        self.stream.writeln(f"{kind}: {test.id()}")
        self.stream.write(self._exc_info_to_string(err, test))
        self.stream.flush()

    def addError(self, test, err):
        super().addError(test, err)
        test.failed_here = True
        self.report("ERROR", test, err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        test.failed_here = True
        self.report("FAIL", test, err)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            test.failed_here = True
            self.report("FAIL" if issubclass(err[0], test.failureException)
                        else "ERROR", subtest, err)


STREAM = RankStream(sys.stdout)


class Runner(unittest.TextTestRunner):
    resultclass = Result

    def __init__(self, **kw):
        kw["stream"] = STREAM
        super().__init__(**kw)


def main():
    prog = unittest.main(module=__name__, testRunner=Runner, verbosity=2,
                         exit=False)
    result = prog.result
    STREAM.close()
    failed = not result.wasSuccessful() or result.testsRun == 0
    # Ranks in step exit together with status 1 if any failed; a failed
    # rank whose peers do not arrive within GRACE s aborts the job.
    sys.exit(1 if agree(failed, "the suite") else 0)


if __name__ == "__main__":
    main()
