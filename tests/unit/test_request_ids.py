import os
import uuid

from lakeledger.api.request_ids import new_request_id


def test_request_ids_are_distinct_version_4_uuids_across_draws():
    ids = [new_request_id() for _ in range(1000)]  # several draws of the buffer
    assert len(set(ids)) == 1000
    assert all(uuid.UUID(i).version == 4 and uuid.UUID(i).variant == uuid.RFC_4122 for i in ids)


def test_a_forked_process_does_not_mint_the_ids_left_in_its_parents_buffer():
    new_request_id()  # the parent holds a partly used buffer
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then gone
        os.write(write, new_request_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert child != new_request_id()
