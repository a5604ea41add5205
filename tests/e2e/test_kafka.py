"""CloudEvents to Kafka (issue 15, point 7): a real Apache Kafka broker in KRaft mode (`make kafka-deps`), and
`lakeledger workers` processes publishing the log with librdkafka's transactional producer. Under a stream of
changes the publisher is killed -9 again and again, mid-transaction as it happens, and a second one runs beside it;
then a read_committed consumer of the topic finds every event of the log exactly once, in log order, as the same
CloudEvent the NATS publisher sends."""

import json
import threading
import time
import uuid

import httpx
import jetstream_log
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families
from support import SCHEMA, KafkaBroker, Server, WorkersProcess, create_database, wait_until


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()


def _topic(kafka: KafkaBroker, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(60)
    return name


def _committed(kafka: KafkaBroker, topic: str) -> list[dict]:
    """Every message a read_committed consumer sees, in topic order."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"check-{uuid.uuid4()}",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out = []
        while True:
            message = consumer.poll(30)
            assert message is not None, "the topic did not answer"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return out
            out.append({"headers": dict(message.headers() or []), "key": message.key(),
                        "event": json.loads(message.value())})
    finally:
        consumer.close()


def _workers(database: str, tmp_path, kafka: KafkaBroker, topic: str) -> WorkersProcess:
    return WorkersProcess(database, tmp_path, LAKELEDGER__KAFKA_TOPIC=topic,
                          LAKELEDGER__KAFKA_CONFIG=json.dumps({"bootstrap.servers": kafka.bootstrap}))


def test_every_event_exactly_once_in_order_across_kill_9(pg_url, kafka, tmp_path):
    database = create_database(pg_url, f"kafka_{uuid.uuid4().hex[:12]}")
    topic = _topic(kafka, f"lakeledger-{uuid.uuid4().hex[:8]}")
    server = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="3")
    stop = threading.Event()
    failures: list[str] = []

    def changes() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            r = http.post("/management/v1/warehouse", json={
                "warehouse-name": "k", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
            prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
            http.post(f"{prefix}/namespaces", json={"namespace": ["ns"]})
            n = 0
            while not stop.is_set():
                n += 1
                r = http.post(f"{prefix}/namespaces/ns/tables", json={"name": f"t{n}", "schema": SCHEMA})
                if r.status_code != 200:
                    failures.append(r.text)
                for k in range(3):
                    http.post(f"{prefix}/namespaces/ns/tables/t{n}", json={"requirements": [], "updates": [
                        {"action": "set-properties", "updates": {"k": str(k)}}]})

    writer = threading.Thread(target=changes)
    writer.start()
    standby = _workers(database, tmp_path, kafka, topic)  # a second publisher beside the one killed below
    behind_at_kill = []
    try:
        for _ in range(4):
            publisher = _workers(database, tmp_path, kafka, topic)
            wait_until(lambda: jetstream_log.positions(database).get("kafka", 0) > 0, 60, "publication to start")
            time.sleep(1.5)
            behind_at_kill.append(jetstream_log.head(database) - jetstream_log.positions(database)["kafka"])
            publisher.kill()  # -9, mid-batch as likely as not
            if standby.process.poll() is None and len(behind_at_kill) == 2:
                standby.kill()  # the standby too, once, so the next session starts from the topic alone
                standby = _workers(database, tmp_path, kafka, topic)
        stop.set()
        writer.join(60)
        final = _workers(database, tmp_path, kafka, topic)
        try:
            head = jetstream_log.head(database)
            wait_until(lambda: jetstream_log.positions(database).get("kafka") == head, 90,
                       "the last publisher to reach the log's head")
            # what the serve's /metrics says of the Kafka publisher: caught up
            lag = [s for f in text_string_to_metric_families(httpx.get(f"{server.url}/metrics").text)
                   for s in f.samples if s.name == "lakeledger_consumer_lag_events"
                   and s.labels["consumer"] == "kafka"]
            assert [s.value for s in lag] == [0.0]
        finally:
            final.stop()
    finally:
        stop.set()
        writer.join(60)
        standby.stop()
        server.stop()
    assert failures == []
    assert any(behind > 0 for behind in behind_at_kill), behind_at_kill  # killed while there was work in flight
    published = _committed(kafka, topic)
    logged = jetstream_log.log_ids(database)
    assert [m["event"]["id"] for m in published] == [event_id for _, event_id in logged]  # once each, in order
    assert [int(m["headers"]["lakeledger-position"]) for m in published] == [p for p, _ in logged]
    first = published[0]["event"]
    assert first["specversion"] == "1.0" and first["type"].startswith("io.lakeledger.")
    assert first["sequence"] == logged[0][0] and first["source"].startswith("/lakeledger/")
    table_events = [m for m in published if m["event"]["type"] == "io.lakeledger.table.created"]
    assert table_events and all(m["key"] == m["event"]["subject"].encode() for m in table_events)
