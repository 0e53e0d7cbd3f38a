#!/usr/bin/env python3
"""Python programs through cgdr: mpi4py with NumPy, CuPy and PyTorch buffers (two ranks).

  mpirun -np 2 -x LD_PRELOAD=libcgdr.so python3 mpi4py_buffers.py --libs numpy,cupy,torch

mpi4py hands MPI the address of a NumPy array (buffer protocol) or of a CuPy array or PyTorch
tensor on a GPU (__cuda_array_interface__), the way a Python program on a CUDA-aware MPI does;
under cgdr the MPI underneath need not be CUDA-aware. Every pair of the named libraries, both
directions: blocking, wildcard and non-blocking point-to-point, sendrecv, truncation (an error,
then the next message intact), collectives, and buffers freed and allocated again at the same
addresses between messages. Each byte is checked against a pattern that differs per rank,
message and offset. A library that is not importable, or a GPU library without a GPU, is
skipped with a line saying so; exit 77 when nothing is left to run. Prints "PASS mpi4py_buffers
LIBS" at the end, "FAIL ..." (exit 1) at the first wrong byte or status.
"""
import argparse
import sys

from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
rank, nranks = comm.Get_rank(), comm.Get_size()
failures = 0


def say(msg):
    print(f"rank {rank}: {msg}", flush=True)


def fail(msg):
    global failures
    failures += 1
    say(f"FAIL {msg}")
    if failures >= 10:
        comm.Abort(1)


def parse_size(s):
    total = 0
    for part in s.replace("-", "+-").split("+"):
        if not part:
            continue
        mult = {"K": 1 << 10, "M": 1 << 20}.get(part[-1], 1)
        total += int(part[:-1] if mult > 1 else part) * mult
    return total


def pattern(n, who, msg):
    """The bytes rank `who` sends as message `msg`: they differ per rank, message and offset."""
    o = np.arange(n, dtype=np.uint64)
    return ((o * 131 + (o >> 8) * 7 + who * 37 + msg * 11 + 1) & 0xFF).astype(np.uint8)


class Lib:
    """How one library makes a byte buffer, reads it back and waits for its GPU work."""

    def __init__(self, name):
        self.name, self.gpu = name, name != "numpy"
        if name == "numpy":
            self.fill = lambda n: np.full(n, 0xEE, dtype=np.uint8)
            self.fromhost = lambda a: a.copy()
            self.tohost = lambda b: np.asarray(b)
            self.sync = lambda: None
            self.free = lambda: None
            self.typed = lambda a: a.copy()
        elif name == "cupy":
            import cupy as cp
            self.gpus = cp.cuda.runtime.getDeviceCount()
            cp.cuda.Device(rank % self.gpus).use()
            self.fill = lambda n: cp.full(n, 0xEE, dtype=cp.uint8)
            self.fromhost = cp.asarray
            self.tohost = cp.asnumpy
            self.sync = lambda: cp.cuda.get_current_stream().synchronize()
            self.free = cp.get_default_memory_pool().free_all_blocks
            self.typed = cp.asarray
            self.address = lambda b: b.data.ptr
        elif name == "torch":
            import torch
            if not torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False")
            self.gpus = torch.cuda.device_count()
            torch.cuda.set_device(rank % self.gpus)
            self.fill = lambda n: torch.full((n,), 0xEE, dtype=torch.uint8, device="cuda")
            self.fromhost = lambda a: torch.from_numpy(a).cuda()
            self.tohost = lambda b: b.cpu().numpy()
            # torch.cuda.synchronize is cudaDeviceSynchronize: cgdr's resident copy kernel, if
            # running, is asked to leave first (it would otherwise hold the call for its idle time).
            self.sync = torch.cuda.synchronize
            self.free = torch.cuda.empty_cache
            self.typed = lambda a: torch.from_numpy(a).cuda()
            self.address = lambda b: b.data_ptr()
        else:
            raise RuntimeError(f"unknown library '{name}'")

    # mpi4py passes MPI the address alone: as on any CUDA-aware MPI, the program's GPU work on a
    # buffer (here its library's stream) must be done before MPI reads or writes it.
    def filled(self, n, who, msg):
        b = self.fromhost(pattern(n, who, msg))
        self.sync()
        return b

    def empty(self, n):
        """n bytes of 0xEE (a receive buffer: bytes past a message must keep them)."""
        b = self.fill(n)
        self.sync()
        return b


def check(label, lib, buf, n, who, msg, status=None, source=None, tag=None):
    got = lib.tohost(buf)
    want = pattern(n, who, msg)
    if got.size < n or not np.array_equal(got[:n], want):
        bad = np.flatnonzero(got[:n] != want) if got.size >= n else [got.size]
        fail(f"{label}: {len(bad)} wrong bytes of {n}, first at {bad[0]}")
    elif got.size > n and not np.all(got[n:] == 0xEE):
        fail(f"{label}: bytes past the {n} received were written")
    if status is not None:
        count = status.Get_count(MPI.BYTE)
        if count != n or status.Get_source() != source or status.Get_tag() != tag:
            fail(f"{label}: status count {count} source {status.Get_source()} tag {status.Get_tag()},"
                 f" wanted {n} {source} {tag}")


def point_to_point(libs, sizes):
    peer = 1 - rank
    msg = 0
    for a in libs:
        for b in libs:
            for direction in (0, 1):
                sender = direction
                send_lib, recv_lib = (a, b) if rank == sender else (b, a)
                for n in sizes:
                    msg += 1
                    label = f"{send_lib.name}->{recv_lib.name} {n} B"
                    tag = msg % 32000
                    if rank == sender:
                        comm.Send([send_lib.filled(n, rank, msg), MPI.BYTE], dest=peer, tag=tag)
                    else:
                        buf, st = recv_lib.empty(n + 3), MPI.Status()
                        comm.Recv([buf, n + 3, MPI.BYTE], source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
                        check(f"recv {label}", recv_lib, buf, n, peer, msg, st, peer, tag)
                if b is not a:
                    continue
                # Both ways at once, non-blocking: receives posted first, several messages in flight.
                msg += 1
                base = msg
                recvs = [(n, a.empty(n)) for n in sizes]
                sends = [a.filled(n, rank, base + i) for i, n in enumerate(sizes)]
                reqs = [comm.Irecv([buf, MPI.BYTE], source=peer, tag=i) for i, (n, buf) in enumerate(recvs)]
                reqs += [comm.Isend([s, MPI.BYTE], dest=peer, tag=i) for i, s in enumerate(sends)]
                MPI.Request.Waitall(reqs)
                for i, (n, buf) in enumerate(recvs):
                    check(f"irecv {a.name}<->{a.name} {n} B", a, buf, n, peer, base + i)
                msg += len(sizes)
            # sendrecv: a's buffer out, b's in
            for n in sizes:
                msg += 1
                out, inb, st = a.filled(n, rank, msg), b.empty(n), MPI.Status()
                comm.Sendrecv([out, MPI.BYTE], dest=peer, sendtag=7, recvbuf=[inb, MPI.BYTE], source=peer,
                              recvtag=7, status=st)
                check(f"sendrecv {a.name}->{b.name} {n} B", b, inb, n, peer, msg, st, peer, 7)
    return msg


def truncation(lib, n, msg):
    """A message longer than its receive buffer: MPI_ERR_TRUNCATE, and the next one arrives whole."""
    peer = 1 - rank
    if rank == 0:
        comm.Send([lib.filled(n + 5, rank, msg), MPI.BYTE], dest=peer, tag=3)
        comm.Send([lib.filled(n, rank, msg + 1), MPI.BYTE], dest=peer, tag=4)
        return
    buf = lib.empty(n)
    try:
        comm.Recv([buf, MPI.BYTE], source=peer, tag=3)
        fail(f"truncation {lib.name} {n} B: no error")
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_TRUNCATE:
            fail(f"truncation {lib.name} {n} B: error class {e.Get_error_class()}, not MPI_ERR_TRUNCATE")
    buf = lib.empty(n)
    comm.Recv([buf, MPI.BYTE], source=peer, tag=4)
    check(f"after truncation {lib.name} {n} B", lib, buf, n, peer, msg + 1)


def collectives(lib, sizes, msg):
    for n in sizes:
        msg += 1
        # bcast from each root in turn
        for root in range(nranks):
            buf = lib.filled(n, root, msg) if rank == root else lib.empty(n)
            comm.Bcast([buf, MPI.BYTE], root=root)
            check(f"bcast {lib.name} {n} B from {root}", lib, buf, n, root, msg)
        # allgather: rank r's block is pattern(n, r, msg)
        out = lib.empty(n * nranks)
        comm.Allgather([lib.filled(n, rank, msg), MPI.BYTE], [out, MPI.BYTE])
        got = lib.tohost(out)
        for r in range(nranks):
            if not np.array_equal(got[r * n:(r + 1) * n], pattern(n, r, msg)):
                fail(f"allgather {lib.name} {n} B: block of rank {r} wrong")
        # allreduce of int64 and float64 elements: sums of every rank's values, element by element
        count = max(n // 8, 1)
        for dtype, op in ((np.int64, MPI.SUM), (np.float64, MPI.MAX)):
            mine = (np.arange(count, dtype=np.int64) * (rank + 3) + msg).astype(dtype)
            vals = [(np.arange(count, dtype=np.int64) * (r + 3) + msg).astype(dtype) for r in range(nranks)]
            want = np.sum(vals, axis=0) if op == MPI.SUM else np.max(vals, axis=0)
            src, dst = lib.typed(mine), lib.typed(np.zeros(count, dtype=dtype))
            lib.sync()
            comm.Allreduce(src, dst, op=op)
            if not np.array_equal(lib.tohost(dst), want):
                fail(f"allreduce {lib.name} {np.dtype(dtype).name} {count} elements wrong")
    return msg


def reallocated(lib, sizes, msg):
    """Buffers freed and allocated again between messages (the pool hands the same addresses back):
    each message must land whole in the new buffer, never through a stale mapping of the old one."""
    peer = 1 - rank
    same = 0
    for n in sizes:
        last = None
        for round_ in range(3):
            msg += 1
            if rank == 0:
                buf = lib.filled(n, rank, msg)
                comm.Send([buf, MPI.BYTE], dest=peer, tag=round_)
            else:
                buf = lib.empty(n)
                comm.Recv([buf, MPI.BYTE], source=peer, tag=round_)
                check(f"reallocated {lib.name} {n} B round {round_}", lib, buf, n, peer, msg)
            if n and last == lib.address(buf):
                same += 1
            last = lib.address(buf) if n else None
            del buf
            lib.free()
    return msg, same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", default="numpy,cupy,torch")
    ap.add_argument("--sizes", default="0,1,3,8K-1,8K+1,256K+1,1M+1,9M+7")
    ap.add_argument("--min-gpus", type=int, default=0, help="skipped (77) with fewer GPUs")
    args = ap.parse_args()
    if nranks != 2:
        say("FAIL needs 2 ranks")
        return 1
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    libs, skipped = [], []
    for name in args.libs.split(","):
        try:
            libs.append(Lib(name))
        except Exception as e:  # not importable, no GPU: skipped, visibly
            skipped.append(f"{name} ({type(e).__name__}: {e})")
    # Both ranks must run the same libraries (a rank without a GPU would pair wrongly).
    names = [lib.name for lib in libs]
    if comm.allgather(names) != [names] * nranks:
        say(f"FAIL the ranks can use different libraries: {comm.allgather(names)}")
        return 1
    if rank == 0:
        for s in skipped:
            say(f"SKIP {s}")
    # A run that asked for GPU libraries is skipped without one of them (numpy alone is the host test's).
    if not libs or any(n != "numpy" for n in args.libs.split(",")) and not any(lib.gpu for lib in libs):
        if rank == 0:
            say("SKIP no GPU library usable (GPU test)")
        return 77
    gpus = min([lib.gpus for lib in libs if lib.gpu] or [0])
    if gpus < args.min_gpus:
        if rank == 0:
            say(f"SKIP {gpus} GPUs, this run needs {args.min_gpus} (GPU test)")
        return 77
    if rank == 0:
        version = MPI.Get_library_version().split("\0")[0].splitlines()[0]  # (Open MPI's ends in a NUL)
        say(f"mpi4py {__import__('mpi4py').__version__} on {version}; "
            f"libraries {','.join(names)}; sizes {sizes}")
        if hasattr(MPI, "Query_cuda_support"):
            say(f"MPI.Query_cuda_support() = {MPI.Query_cuda_support()}")
    msg = point_to_point(libs, sizes)
    for lib in libs:
        msg += 10
        truncation(lib, sizes[-1], msg)
        msg = collectives(lib, sizes, msg + 2)
        if lib.gpu:
            msg, same = reallocated(lib, sizes, msg)
            if rank == 1:
                say(f"{lib.name}: {same} messages into a buffer at its predecessor's address")
            lib.sync()
    comm.Barrier()
    total = comm.allreduce(failures)
    if total:
        say(f"FAIL {failures} failures here, {total} in all")
        return 1
    if rank == 0:
        print(f"PASS mpi4py_buffers {','.join(names)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
