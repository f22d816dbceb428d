"""Drives a running Quiver with the official qstash client (PyPI).

Started by crates/quiver/tests/it/sdk.rs with QSTASH_URL, QSTASH_TOKEN, QSTASH_CURRENT_SIGNING_KEY and
QSTASH_NEXT_SIGNING_KEY set. Deliveries go to a local HTTP server started here.
"""

import http.server
import os
import sys
import threading
import time

from qstash import QStash, Receiver


def check(condition, message):
    if not condition:
        print(f"FAILED: {message}", file=sys.stderr)
        sys.exit(1)


received = []


class Endpoint(http.server.BaseHTTPRequestHandler):
    """Records every request; paths starting /fail answer 500."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        headers = {name.lower(): value for name, value in self.headers.items()}
        received.append((self.path, self.command, headers, body.decode()))
        self.send_response(500 if self.path.startswith("/fail") else 200)
        self.end_headers()
        self.wfile.write(b"ok")

    do_PUT = do_POST

    def log_message(self, *args):
        pass


def eventually(check_fn, what):
    for _ in range(200):
        value = check_fn()
        if value:
            return value
        time.sleep(0.05)
    check(False, f"in time: {what}")


def arrived(path):
    return [r for r in received if r[0] == path]


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    client = QStash(os.environ["QSTASH_TOKEN"], base_url=os.environ["QSTASH_URL"])
    receiver = Receiver(
        current_signing_key=os.environ["QSTASH_CURRENT_SIGNING_KEY"],
        next_signing_key=os.environ["QSTASH_NEXT_SIGNING_KEY"],
    )

    # Publish, signed delivery, deduplication.
    published = client.message.publish_json(url=f"{base}/json", body={"x": 1}, headers={"x-tenant": "acme"})
    check(published.message_id.startswith("msg_") and not published.deduplicated, f"publish: {published}")
    path, method, headers, body = eventually(lambda: arrived("/json"), "the JSON delivery")[0]
    check(method == "POST" and body == '{"x": 1}' and headers["x-tenant"] == "acme", f"delivery: {headers} {body}")
    receiver.verify(signature=headers["upstash-signature"], body=body, url=f"{base}/json")
    first = client.message.publish(url=f"{base}/raw", body="raw", deduplication_id="d1")
    again = client.message.publish(url=f"{base}/raw", body="raw", deduplication_id="d1")
    check(again.deduplicated and again.message_id == first.message_id, f"deduplicated: {first} {again}")

    # A delayed message can be read and cancelled, alone or many at once.
    later = client.message.publish_json(url=f"{base}/later", body={}, delay=3600, retries=1, label="nightly")
    message = client.message.get(later.message_id)
    check(message.url == f"{base}/later" and message.max_retries == 1, f"message.get: {message}")
    client.message.cancel(later.message_id)
    ids = [client.message.publish_json(url=f"{base}/later", body={}, delay=3600).message_id for _ in range(2)]
    check(client.message.cancel_many(ids) == 2, "cancel_many cancels both")

    # Queues and batches.
    client.queue.upsert("sdk-queue", parallelism=2)
    queue = client.queue.get("sdk-queue")
    check(queue.name == "sdk-queue" and queue.parallelism == 2 and not queue.paused, f"queue.get: {queue}")
    client.queue.pause("sdk-queue")
    check(client.queue.get("sdk-queue").paused, "queue paused")
    client.queue.resume("sdk-queue")
    client.message.enqueue_json(queue="sdk-queue", url=f"{base}/queued", body={"q": 1})
    batch = client.message.batch_json([{"url": f"{base}/b1", "body": {"a": 1}}, {"url": f"{base}/b2", "body": "two"}])
    check(len(batch) == 2 and all(b.message_id for b in batch), f"batch: {batch}")
    eventually(lambda: arrived("/queued") and arrived("/b1") and arrived("/b2"), "queued and batched deliveries")
    client.queue.delete("sdk-queue")
    check("sdk-queue" not in [q.name for q in client.queue.list()], "queue deleted")

    # URL groups fan out.
    client.url_group.upsert_endpoints(url_group="fan", endpoints=[{"url": f"{base}/g1", "name": "one"}, {"url": f"{base}/g2"}])
    group = client.url_group.get("fan")
    check([e.url for e in group.endpoints] == [f"{base}/g1", f"{base}/g2"], f"url_group.get: {group}")
    fanned = client.message.publish_json(url_group="fan", body={"g": 1})
    check(len(fanned) == 2, f"one message per endpoint: {fanned}")
    eventually(lambda: arrived("/g1") and arrived("/g2"), "both endpoints")
    client.url_group.remove_endpoints(url_group="fan", endpoints=[{"url": f"{base}/g2"}])
    check(len(client.url_group.get("fan").endpoints) == 1, "endpoint removed")
    client.url_group.delete("fan")

    # Schedules, including one that names no retries (the SDK requires the field in every record).
    schedule_id = client.schedule.create_json(destination=f"{base}/tick", cron="*/5 * * * *", body={"s": 1}, retries=2)
    client.schedule.create(destination=f"{base}/tick", cron="0 0 * * *", body="b", schedule_id="sdk-daily")
    schedule = client.schedule.get(schedule_id)
    check(schedule.cron == "*/5 * * * *" and schedule.retries == 2 and not schedule.paused, f"schedule.get: {schedule}")
    schedules = {s.schedule_id: s for s in client.schedule.list()}
    check({schedule_id, "sdk-daily"} <= set(schedules), f"schedule.list: {schedules}")
    check(schedules["sdk-daily"].retries == 3, "the default retries are reported")
    client.schedule.pause(schedule_id)
    check(client.schedule.get(schedule_id).paused, "schedule paused")
    client.schedule.resume(schedule_id)
    client.schedule.delete(schedule_id)
    client.schedule.delete("sdk-daily")
    left = {s.schedule_id for s in client.schedule.list()}
    check(not left & {schedule_id, "sdk-daily"}, f"schedules deleted: {left}")

    # A failing delivery calls both callbacks and lands in the DLQ.
    failed = client.message.publish_json(
        url=f"{base}/fail", body={}, retries=0, method="PUT", callback=f"{base}/cb", failure_callback=f"{base}/fcb"
    )
    eventually(lambda: arrived("/cb") and arrived("/fcb"), "callback and failure callback")
    def dead_letter():
        return [m for m in client.dlq.list().messages if m.message_id == failed.message_id]

    dead = eventually(dead_letter, "the DLQ entry")[0]
    check(dead.response_status == 500 and dead.url == f"{base}/fail", f"dlq.list: {dead}")
    check(client.dlq.get(dead.dlq_id).method == "PUT", "dlq.get")
    client.dlq.delete(dead.dlq_id)
    check(dead_letter() == [], "dlq entry deleted")

    # Logs and signing keys.
    logs = client.log.list(filter={"message_id": published.message_id}).logs
    check({log.state.value for log in logs} >= {"CREATED", "DELIVERED"}, f"log.list: {logs}")
    keys = client.signing_key.get()
    check(keys.current == os.environ["QSTASH_CURRENT_SIGNING_KEY"], f"signing keys: {keys}")
    server.shutdown()
    print("qstash python SDK suite passed")


if __name__ == "__main__":
    main()
