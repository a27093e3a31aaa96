#!/usr/bin/env python3
"""docs/front-end.md's webhook receiver, run as written against the real worker: it accepts
every ending the worker POSTs (signature checked), refuses a forged one, and the shell front end
of the same page (enqueue, then wait) works. Needs AUTONOUS_BIN and AUTONOUS_STUB_BIN."""
import hashlib
import hmac
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ["AUTONOUS_BIN"]
STUB = os.environ["AUTONOUS_STUB_BIN"]


def receiver_source():
    with open(os.path.join(ROOT, "docs", "front-end.md"), encoding="utf-8") as f:
        doc = f.read()
    after = doc[doc.index("A receiver that checks the signature"):]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DocReceiver(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DB_", "REPLY_"))}
        self.env["DB_PATH"] = os.path.join(self.dir.name, "a.db")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.communicate()
        self.dir.cleanup()

    def start(self, argv, env, **kw):
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        self.procs.append(p)
        return p

    def test_the_documented_example_signature_is_its_bodys(self):
        with open(os.path.join(ROOT, "docs", "front-end.md"), encoding="utf-8") as f:
            doc = f.read()
        example = doc[doc.index("POST /your/hook HTTP/1.1"):]
        example = example[:example.index("```")]
        header = re.search(r"X-Autonous-Signature: (sha256=[0-9a-f]{64})", example).group(1)
        body = example.split("\n\n", 1)[1].strip().encode()
        want = "sha256=" + hmac.new(b"whsec-example", body, hashlib.sha256).hexdigest()
        self.assertEqual(header, want)

    def test_the_documented_receiver_takes_signed_endings_and_refuses_forged_ones(self):
        port = free_port()
        path = os.path.join(self.dir.name, "receiver.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(receiver_source())
        env = dict(self.env, PORT=str(port), REPLY_WEBHOOK_SECRET="s3cret-doc")
        receiver = self.start([sys.executable, path], env)
        stub = self.start([STUB, "--port", "0"], self.env)
        stub_port = stub.stdout.readline().strip().rsplit(":", 1)[1]
        for _ in range(100):  # the receiver is up once it takes a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        forged = urllib.request.Request(f"http://127.0.0.1:{port}/", data=b'{"task_id":1}',
                                        headers={"X-Autonous-Signature": "sha256=00"})
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(forged, timeout=5)
        self.assertEqual(refused.exception.code, 401)

        worker_env = dict(self.env, OPENAI_BASE_URL=f"http://127.0.0.1:{stub_port}/v1",
                          REPLY_WEBHOOK_URL=f"http://127.0.0.1:{port}/hook",
                          REPLY_WEBHOOK_SECRET="s3cret-doc", POLL_INTERVAL_MS="20")
        enq = subprocess.run([BIN, "enqueue", "--chat", "sms:+100", "Hello from the docs"],
                             env=self.env, capture_output=True, text=True, check=True)
        task = enq.stdout.strip()
        # The page's shell front end: wait for the reply while a worker answers.
        waiter = self.start([BIN, "wait", "--task", task, "--timeout", "60"], self.env)
        done = subprocess.run([BIN, "worker", "--drain"], env=worker_env, capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        out, err = waiter.communicate(timeout=30)
        self.assertEqual(waiter.returncode, 0, err)
        self.assertEqual(out, "reply to: Hello from the docs (saw 2 messages)\n")
        receiver.kill()
        printed, _ = receiver.communicate(timeout=10)
        self.assertEqual(printed, f"{task} done reply to: Hello from the docs (saw 2 messages)\n")


if __name__ == "__main__":
    unittest.main()
