"""ports.py: the block of the python range this run uses, chosen so that another run
(another checkout on the machine) holding a block, or any listener on a port, moves the
choice to the next block."""
import socket

import ports
from conftest import BASE, ROOT


def test_range_comes_from_the_port_map():
    lo, hi = ports.suite_range(ROOT, "python")
    assert lo <= BASE and BASE + ports.BLOCK_SIZE - 1 <= hi


def test_a_held_block_is_skipped(tmp_path):
    lo, hi = ports.suite_range(ROOT, "python")
    first, held = ports.choose_block(lo, hi, 10, "test", str(tmp_path))
    try:
        # The same process opens the lock file again: flock locks per open file, so the
        # held block is refused exactly as another run's would be.
        second, lock2 = ports.choose_block(lo, hi, 10, "test", str(tmp_path))
        lock2.close()
        assert second >= first + 10
    finally:
        held.close()
    again, lock3 = ports.choose_block(lo, hi, 10, "test", str(tmp_path))
    lock3.close()
    assert again == first  # released with its file


def test_a_listener_moves_the_choice(tmp_path):
    lo, hi = ports.suite_range(ROOT, "python")
    first, lock = ports.choose_block(lo, hi, 10, "test", str(tmp_path))
    lock.close()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", first + 3))
        s.listen(1)
        moved, lock = ports.choose_block(lo, hi, 10, "test", str(tmp_path))
        lock.close()
    assert moved >= first + 10


def test_no_free_block_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        try:
            ports.choose_block(port, port, 1, "test", str(tmp_path))
        except RuntimeError as e:
            assert "no block of 1 free ports" in str(e)
        else:
            raise AssertionError("a range whose only port listens gave a block")
