"""Blue/green rebuild of read models from the log, without holding the live ones.

1. Shadow tables are made beside the live ones (lakeledger/projections/shadow.py); the live read models keep serving and
   following appends as usual: nothing live is locked.
   A read model whose rebuild looks rows up by unique keys only names its tables in ``indexed_after_fill``:
   their shadows start with their unique indexes alone and get the others in one sorted build after the fill.
2. One pass over the log, each event decoded once, feeds every projection being rebuilt, in batches. Each read
   model has a lane: a thread with a connection of its own that applies its batches to its shadows (in pipeline
   mode) and commits, while the pass reads and decodes the next batch; Postgres works on one core while Python
   works on the other (the threads wait on the network without holding the interpreter). A projection may offer
   a batch writer of its own (``rebuilder()``) that keeps its state in memory and writes many rows per
   statement; the others get ``EachEvent``, their ``apply`` per event. The pass repeats up to the head until
   little is left. On a long log the read model that costs most (the history) is filled by a process of its own
   meanwhile (``Apart``), then brought to where the others stand by the writer the runners use.
3. One short transaction takes the lock every append takes first (the events table's, EXCLUSIVE), then the
   projections' position rows and the live tables (so nothing can be waiting on us while we wait), applies the
   last few events, swaps the shadows in and sets the positions to the head. Appends wait only for that moment;
   readers queue behind the table locks for the same moment. If a lock cannot be had within a couple of seconds
   (a long query on a live table), everything is released, the shadows catch up again, and it tries anew.

A rebuild in another process is refused (an advisory lock), as two would replace each other's shadows."""

import gc
import logging
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

import psycopg
from psycopg import Connection, Cursor, errors, sql

from lakeledger.eventstore.append_time import EVENTS
from lakeledger.eventstore.log import EventLog
from lakeledger.projections import shadow
from lakeledger.projections.logged import BatchWriter, EachEvent, Logged, decode, fetch, read
from lakeledger.projections.logged import head as log_head

logger = logging.getLogger("lakeledger.rebuild")

BATCH = 20_000
# events left to the locked transaction at most; below this the catch-up passes stop
TAIL = 500
LOCK_TIMEOUT = "2s"
# batches between explicit runs of the cyclic garbage collector, which is paused for the pass (_collector_paused)
COLLECT_EVERY = 12
REBUILD_LOCK = 727_274_002  # advisory lock: one rebuild at a time (bootstrap's migration lock is ..001)
# held (shared) by the processes filling read models apart for as long as they write: a rebuild whose first process
# died leaves them writing into shadows the next rebuild would make anew
APART_LOCK = 727_274_003
# events in the log from which a read model marked ``rebuilt_apart`` is filled by a process of its own: below this,
# starting the process costs more than it saves
APART_FROM = 100_000


class RebuildRunning(RuntimeError):
    """Another process is rebuilding: two would replace each other's shadows."""


def _writes_shadows(conn: Connection, path: str) -> None:
    """Points ``conn``'s unqualified names at the shadows (read models not rebuilt still resolve to the live
    schema) and commits without waiting for the disk: a rebuild that dies loses only its shadows."""
    conn.execute(sql.SQL("SET search_path TO {}, " + path).format(sql.Identifier(shadow.SCHEMA)))
    conn.execute("SET synchronous_commit TO off")
    conn.commit()


class Target:
    """One read model being rebuilt: its runner, the writer that fills its shadows, and what it reads."""

    def __init__(self, runner):
        self.runner = runner
        projection = runner.projection
        # a batch writer may keep the read model in memory: it is the shadow's only writer until the swap
        self.topics = frozenset(projection.topics)
        self._use(projection.rebuilder() if hasattr(projection, "rebuilder") else EachEvent(projection))

    def hand_over(self) -> None:
        """From here on the shadows hold what the rebuild's writer kept in memory (filled in another process): the
        writer that reads what it needs from the tables, the one the runners use, takes over."""
        projection = self.runner.projection
        self._use(projection.live_writer() if hasattr(projection, "live_writer") else EachEvent(projection))

    def _use(self, writer: BatchWriter) -> None:
        self.writer = writer
        # a writer that reads between its statements runs outside pipeline mode: psycopg can hand such a read the
        # result of an earlier statement of the pipeline (seen once in a few runs: "the last operation didn't
        # produce records (command status: UPDATE 1)")
        reader = self.runner.projection if isinstance(writer, EachEvent) else writer
        # a writer that keeps a COPY open from its first add to its flush has the connection to itself meanwhile
        self.copies_while_adding = getattr(writer, "copies_while_adding", False)
        self.pipelined = not (getattr(reader, "reads_while_applying", False) or self.copies_while_adding)

    def wants(self, topic: str) -> bool:
        return not self.topics or topic in self.topics


class Lane:
    """A target's writes on a thread and connection of their own: work is queued (two items at most, so the pass
    runs ahead by one batch) and each item is applied and committed in turn. A failure stops the lane; it is raised
    in the pass at its next hand-over."""

    def __init__(self, target: Target, shadows: list[shadow.Shadow], conninfo: str, path: str):
        self.target = target
        self.shadows = shadows  # its own
        self.conn = psycopg.connect(conninfo, prepare_threshold=None)
        self.conn.execute("SET maintenance_work_mem TO '256MB'")  # the deferred indexes, sorted in memory
        _writes_shadows(self.conn, path)
        self.work: queue.Queue = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name=f"rebuild {target.runner.name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.work.get()
            try:
                if item is None:
                    return
                if self.error is None and not self.stopping:
                    with self.conn.transaction():
                        if callable(item):
                            item(self.conn)
                        else:
                            apply([self.target], item, self.conn)
            except BaseException as e:  # noqa: B036 - handed to the pass, which raises it
                self.error = e
            finally:
                self.work.task_done()

    def put(self, batch: list["Logged"]) -> None:
        self._raise()
        self.work.put(batch)

    def drain(self) -> None:
        """Waits until everything queued is committed, what the writer held back included."""
        self._raise()
        self.work.put(lambda conn: settle([self.target], conn))
        self.work.join()
        self._raise()

    def complete_shadows(self) -> None:
        """Queues the shadows' deferred indexes and planner statistics (every lane at once: one per core)."""
        self._raise()
        def complete(conn: Connection) -> None:
            shadow.build_deferred(conn, self.shadows)
            shadow.analyze(conn, self.shadows)

        self.work.put(complete)

    def close(self, abandon: bool = False) -> None:
        """Ends the thread once the queued work is done, or skipped (``abandon``: a failed rebuild)."""
        self.stopping = abandon
        self.work.put(None)
        self.thread.join()
        self.conn.close()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error


def apply(targets: Sequence[Target], batch: list[Logged], conn: Connection) -> None:
    """The targets' writes of ``batch``: the per-event statements in pipeline mode (no round trip each) unless the
    writer reads as it goes, then the batch writers' flushes, outside it (COPY cannot run in a pipeline); a writer
    that copies as it adds has its adds and flush to itself, last."""
    with conn.cursor() as cur:
        with conn.pipeline():
            for target in targets:
                if target.pipelined:
                    _add(target, batch, cur)
        for target in targets:
            if not target.pipelined and not target.copies_while_adding:
                _add(target, batch, cur)
        for target in targets:
            if not target.copies_while_adding:
                target.writer.flush(cur)
        for target in targets:
            if target.copies_while_adding:
                _add(target, batch, cur)
                target.writer.flush(cur)


def settle(targets: Sequence[Target], conn: Connection) -> None:
    with conn.cursor() as cur:
        for target in targets:
            held_back = getattr(target.writer, "settle", None)
            if held_back is not None:
                held_back(cur)


def _add(target: Target, batch: list[Logged], cur: Cursor) -> None:
    for logged in batch:
        if target.wants(logged.topic):
            target.writer.add(logged, cur)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the pass, and run by it every ``COLLECT_EVERY`` batches instead, over the
    objects made since its last run only (generation 0: with the collector off, nothing leaves it otherwise). The
    pass keeps batches and the writers' memory of every entity alive, and the collector's own full passes over them
    took a fifth of a rebuild's time (300,000 events: 24.6 s with it, 19.4 s without), and still 5 s of a
    1,000,000-event rebuild when run in full every 250,000 events; decoded events and rows hold no reference cycles, so
    there is little for it to find in between."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Rebuild:
    def __init__(self, runners: Sequence, log_: EventLog, conninfo: str,
                 progress: Callable[[int, int], None] | None = None, batch: int = BATCH, tail: int = TAIL,
                 apart_from: int = APART_FROM):
        names = [r.name for r in runners]
        tables = [t for r in runners for t in r.projection.tables]
        if len(set(tables)) != len(tables):
            raise ValueError(f"read models {names} share tables")
        self.targets = [Target(r) for r in runners]
        self.log = log_
        self.conninfo = conninfo
        self.progress = progress or (lambda done, total: None)
        self.batch = batch
        self.tail = tail
        self.apart_from = apart_from
        self.position = 0
        self.batches = 0

    def run(self) -> int:
        """Rebuilds every target; returns the log position the new read models stand at."""
        with psycopg.connect(self.conninfo, autocommit=True) as guard:
            if not _first(guard.execute("SELECT pg_try_advisory_lock(%s)", (REBUILD_LOCK,)).fetchone()):
                raise RebuildRunning("another rebuild is running (one at a time); wait for it to finish")
            if not _first(guard.execute("SELECT pg_try_advisory_lock(%s)", (APART_LOCK,)).fetchone()):
                raise RebuildRunning("a process of an interrupted rebuild is still filling the history; it stops "
                                     "within a second of noticing, retry shortly")
            guard.execute("SELECT pg_advisory_unlock(%s)", (APART_LOCK,))
            with psycopg.connect(self.conninfo, autocommit=True) as reader, \
                    psycopg.connect(self.conninfo, autocommit=True) as self._fetching, \
                    ThreadPoolExecutor(1, thread_name_prefix="rebuild fetch") as self._fetcher, \
                    psycopg.connect(self.conninfo, prepare_threshold=None) as writer:
                path = _first(writer.execute("SHOW search_path").fetchone())
                _writes_shadows(writer, path)
                shadows = shadow.create(writer, [t for target in self.targets for t in target.runner.projection.tables],
                                        defer=frozenset(t for target in self.targets
                                                        for t in getattr(target.runner.projection,
                                                                         "indexed_after_fill", ())))
                lanes: list[Lane] = []
                apart = Apart(self, log_head(reader), path)
                try:
                    apart.start()
                    lanes.extend(Lane(target, _shadows_of(target, shadows), self.conninfo, path)
                                 for target in self.targets if target not in apart.targets)
                    with _collector_paused():
                        return self._fill_and_swap(reader, writer, lanes, shadows, path, apart)
                except BaseException:
                    apart.stop()
                    for lane in lanes:
                        lane.close(abandon=True)
                    lanes = []
                    writer.rollback()
                    with writer.transaction():
                        shadow.drop(writer, shadows)
                    raise
                finally:
                    apart.stop()
                    for lane in lanes:
                        lane.close()

    def _fill_and_swap(self, reader: Connection, writer: Connection, lanes: list[Lane], shadows, path: str,
                       apart: "Apart") -> int:
        self._catch_up(reader, lanes)
        for lane in lanes:
            lane.complete_shadows()
        for target, filled in apart.results():
            if self.position < filled:  # a short log: the others left it all to the swap
                self._apply_upto(reader, lanes, filled)
            # filled up to ``filled`` by the other process: brought to where the others stand by the runners' writer
            target.hand_over()
            lane = Lane(target, _shadows_of(target, shadows), self.conninfo, path)
            lanes.append(lane)
            self._apply_upto(reader, [lane], self.position, start=filled)
            lane.complete_shadows()
        while True:
            self._catch_up(reader, lanes)
            for target in self.targets:
                before = getattr(target.runner, "before_swap", None)
                if before is not None:  # work that must not wait for the lock (OpenFGA's store, brought up to date)
                    before(writer, locked=False)
            try:
                return self._swap(reader, writer, shadows, path)
            except errors.LockNotAvailable:
                logger.info("the live read models were busy; catching up again before the next try")
                time.sleep(0.5)

    def _catch_up(self, reader: Connection, lanes: list[Lane]) -> None:
        """Up to a head that is at most ``tail`` ahead, every lane's writes committed."""
        while True:
            head = log_head(reader)
            if head - self.position <= self.tail:
                for lane in lanes:
                    lane.drain()
                return
            self._apply_upto(reader, lanes, head)

    def fill(self, path: str, upto: int) -> int:
        """Only fills the shadows (which another process made) up to ``upto``, what the writers hold included: the
        work of a process of its own (``Apart``). Returns the position reached."""
        with psycopg.connect(self.conninfo, autocommit=True) as self._fetching, \
                ThreadPoolExecutor(1, thread_name_prefix="rebuild fetch") as self._fetcher:
            lanes = [Lane(target, [], self.conninfo, path) for target in self.targets]
            try:
                with _collector_paused():
                    self._apply_upto(None, lanes, upto)
                    for lane in lanes:
                        lane.drain()
            except BaseException:
                for lane in lanes:
                    lane.close(abandon=True)
                raise
            for lane in lanes:
                lane.close()
        return self.position

    def _apply_upto(self, reader: Connection | None, lanes: list[Lane], head: int, start: int | None = None) -> None:
        """Every event up to ``head`` handed to ``lanes``, from this rebuild's position or from ``start`` (lanes
        behind the others: the position is not reported then)."""
        report = start is None
        if start is not None:
            self.position = start
        targets = [lane.target for lane in lanes]
        topics = (None if any(not t.topics for t in targets)
                  else frozenset().union(*(t.topics for t in targets)))

        def rows_after(position: int) -> list[tuple]:
            return fetch(self._fetching, position, head, self.batch, topics)

        # The next batch's rows are fetched on a thread of their own while this one decodes: the pass no longer
        # waits for Postgres between batches (the wait was nearly half its time).
        pending = self._fetcher.submit(rows_after, self.position) if self.position < head else None
        while pending is not None:
            rows = pending.result()
            if not rows:
                self.position = head
                break
            last = rows[-1][0]
            pending = self._fetcher.submit(rows_after, last) if last < head else None
            batch = decode(self.log, rows)
            for lane in lanes:
                lane.put(batch)
            self.batches += 1
            if self.batches % COLLECT_EVERY == 0:
                gc.collect(0)
            self.position = last
            if report:
                self.progress(self.position, head)
        if report:
            self.progress(self.position, head)

    def _swap(self, reader: Connection, writer: Connection, shadows, path: str) -> int:
        names = [t.runner.name for t in self.targets]
        with writer.transaction(), writer.cursor() as cur:
            cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
            # the appends' own first lock: none is in flight from here on, and none can be waiting on what we take
            cur.execute(f"LOCK TABLE {EVENTS} IN EXCLUSIVE MODE")
            cur.execute("SELECT name FROM ll_projection_positions WHERE name = ANY(%s) ORDER BY name FOR UPDATE",
                        (names,))
            missing = set(names) - {r[0] for r in cur.fetchall()}
            if missing:
                raise RuntimeError(f"projections {sorted(missing)} are not registered; run `lakeledger migrate`")
            for s in shadows:
                cur.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(s.live))
            # from here nothing is retried: the writers' memory moves with the tail
            head = log_head(writer)
            if head > self.position:
                batch = read(writer, self.log, self.position, head, max(head - self.position, 1))
                apply(self.targets, batch, writer)
            settle(self.targets, writer)
            self.position = max(self.position, head)
            for target in self.targets:
                before = getattr(target.runner, "before_swap", None)
                if before is not None:
                    before(writer, locked=True)
            cur.execute(sql.SQL("SET LOCAL search_path TO " + path))
            shadow.swap(writer, shadows)
            cur.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = ANY(%s)",
                        (self.position, names))
        self.progress(self.position, self.position)
        return self.position


def _shadows_of(target: Target, shadows: list[shadow.Shadow]) -> list[shadow.Shadow]:
    return [s for s in shadows if s.table in target.runner.projection.tables]


class Apart:
    """The read models filled by a process of their own. One interpreter runs one thread at a time, and a rebuild's
    Python (decoding, making rows) held it nearly all the pass while the second core idled half of it: a read model
    that costs as much as all the others (``rebuilt_apart``: the history) is filled up to the head as the rebuild
    began by a child process that reads and decodes the log for itself, while this process fills the others. Only
    when the log is long (``apart_from``), two targets or more are rebuilt and the machine has two cores or more."""

    def __init__(self, rebuild: Rebuild, head: int, path: str):
        self.rebuild = rebuild
        self.head = head
        self.path = path
        worth_it = (len(rebuild.targets) > 1 and head >= rebuild.apart_from and (os.cpu_count() or 1) > 1)
        self.targets = [t for t in rebuild.targets
                        if worth_it and getattr(t.runner.projection, "rebuilt_apart", False)]
        self._pool: Pool | None = None
        self._pending: list[tuple[Target, AsyncResult[int]]] = []

    def start(self) -> None:
        if not self.targets:
            return
        # spawned, not forked: this process has threads and open connections
        self._pool = multiprocessing.get_context("spawn").Pool(len(self.targets))
        self._pending = [(target, self._pool.apply_async(
            _fill_apart, (target.runner.projection, self.rebuild.log.postgres, self.rebuild.conninfo, self.path,
                          self.head, self.rebuild.batch))) for target in self.targets]

    def results(self) -> Iterator[tuple[Target, int]]:
        """Each target with the position its process filled it to, as each finishes (its error raised here)."""
        for target, pending in self._pending:
            yield target, pending.get()
        self._pending = []

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


class _Filled:
    """A read model as ``Rebuild`` needs it in the process that fills it apart."""

    def __init__(self, projection):
        self.projection = projection
        self.name = projection.name


def _first(row: tuple[Any, ...] | None) -> Any:
    """The value of a statement that answers one row (a function's result, a setting)."""
    assert row is not None
    return row[0]


def _fill_apart(projection, postgres, conninfo: str, path: str, upto: int, batch: int) -> int:
    """In the child process: fills ``projection``'s shadows from the log's start up to ``upto``, and stops at once
    should the rebuild's process die (it would not drop shadows that the next rebuild makes anew)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="rebuild parent watch", daemon=True).start()
    with psycopg.connect(conninfo, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock_shared(%s)", (APART_LOCK,))
        log_ = EventLog(postgres, pool_size=1)
        try:
            return Rebuild([_Filled(projection)], log_, conninfo, batch=batch).fill(path, upto)
        finally:
            log_.close()
