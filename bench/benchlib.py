"""Pieces the benchmark scripts share."""
import contextlib
import socket
import struct


@contextlib.contextmanager
def idle_polling():
    """Holds every CPU out of idle states with an exit latency above 0 us while the block runs
    (a PM QoS request through /dev/cpu_dma_latency, which ends when the file is closed; needs
    root). Yields whether the request was taken."""
    try:
        f = open("/dev/cpu_dma_latency", "wb", buffering=0)
    except OSError:
        yield False
        return
    try:
        f.write(struct.pack("i", 0))
        yield True
    finally:
        f.close()


def port():
    """A free UDP port on loopback (bound once and released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
