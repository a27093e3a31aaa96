#!/usr/bin/env python3
"""The operator surface end to end: the real `autonous` binary against the real loopback stub and
a real SQLite file (or, with AUTONOUS_E2E_BACKEND=postgres, a fresh database on the throwaway
server of scripts/with-postgres, AUTONOUS_TEST_PG_URL); /metrics read with Prometheus' own text parser (python3-prometheus-client);
the dashboard opened in a real headless browser (Debian's chromium), checked from its DOM and a
screenshot; hostile HTTP clients against a working worker.

Run by ctest (tests/CMakeLists.txt) with AUTONOUS_BIN and AUTONOUS_STUB_BIN set; one ctest entry
per test class and backend."""

import datetime
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

PG = os.environ.get("AUTONOUS_E2E_BACKEND") == "postgres"
PG_SERVER = os.environ.get("AUTONOUS_TEST_PG_URL", "")
if PG:
    if not PG_SERVER and os.environ.get("AUTONOUS_REQUIRE_PG") != "1":
        print("no PostgreSQL: run under scripts/with-postgres (scripts/test does)")
        sys.exit(0)
    import psycopg2  # Debian's python3-psycopg2 (scripts/bootstrap installs it)

# AUTONOUS_TEST_BIN (scripts/test's sanitizer pass) names another build of the binary to test.
BIN = os.environ.get("AUTONOUS_TEST_BIN") or os.environ.get("AUTONOUS_BIN", "build/cmd/autonous/autonous")
SANITIZED = bool(os.environ.get("AUTONOUS_TEST_BIN"))  # ASan's shadow memory counts in RSS
STUB = os.environ.get("AUTONOUS_STUB_BIN", "build/cmd/autonous-stub/autonous-stub")
HOSTILE = "<script>document.body.setAttribute('data-pwned','1')</script>" \
          "<img src=x onerror=\"document.body.setAttribute('data-pwned','2')\">"


def with_database(url, name):
    """The server URL with its database name replaced by `name`."""
    slash = url.find("/", url.find("://") + 3)
    query = url.find("?")
    base = url if slash < 0 else url[:slash]
    return base + "/" + name + ("" if query < 0 else url[query:])


def pg_admin(statement, url=None):
    con = psycopg2.connect(url or PG_SERVER)
    con.autocommit = True
    try:
        con.cursor().execute(statement)
    finally:
        con.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, headers=None, timeout=10):
    """(status, body text, headers) of a GET; never raises for an HTTP status."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


class Env:
    """A stub, a database and a worker (or a dashboard) with the operator surface on."""

    def __init__(self, latency_ms=5, extra=None):
        self.dir = tempfile.mkdtemp(prefix="autonous-ops-")
        self.db = os.path.join(self.dir, "a.db")
        port_file = os.path.join(self.dir, "stub.port")
        self.stub = subprocess.Popen([STUB, "--port-file", port_file, "--latency-ms", str(latency_ms)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stub_port = ""
        for _ in range(200):
            if os.path.exists(port_file):
                with open(port_file) as f:
                    stub_port = f.read().strip()
            if stub_port:
                break
            time.sleep(0.02)
        self.port = free_port()
        self.env = dict(os.environ, POLL_INTERVAL_MS="50", RETRY_BASE_MS="100",
                        OPENAI_BASE_URL=f"http://127.0.0.1:{stub_port}/v1",
                        OPENAI_API_KEY="sk-test-secret-key-0123456789",
                        HTTP_LISTEN=f"127.0.0.1:{self.port}", LOG_LEVEL="warn")
        self.pg_name = None
        if PG:
            Env.count = getattr(Env, "count", 0) + 1
            self.pg_name = f"autonous_ops_{os.getpid()}_{Env.count}"
            pg_admin(f"CREATE DATABASE {self.pg_name} TEMPLATE template0 ENCODING 'UTF8'")
            self.pg_url = with_database(PG_SERVER, self.pg_name)
            self.env["DATABASE_URL"] = self.pg_url
            self.env.pop("DB_PATH", None)
        else:
            self.env["DB_PATH"] = self.db
        self.env.update(extra or {})
        self.proc = None
        self.base = f"http://127.0.0.1:{self.port}"

    def run(self, *args, env=None, **kw):
        return subprocess.run([BIN, *args], env=env or self.env, capture_output=True, text=True,
                              timeout=120, **kw)

    def enqueue(self, chat, text):
        r = self.run("enqueue", "--chat", chat, text)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.strip())

    def start(self, *args):
        self.log = open(os.path.join(self.dir, "worker.log"), "w")
        self.proc = subprocess.Popen([BIN, *(args or ("worker",))], env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if get(self.base + "/healthz", timeout=2)[0] in (200, 503):
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the operator surface did not come up: " + self.tail())

    def tail(self):
        with open(os.path.join(self.dir, "worker.log")) as f:
            return f.read()[-3000:]

    def sql(self, query, *params):
        """Rows of `query`, SQL both backends take as written (? parameters, %s on PostgreSQL)."""
        if PG:
            con = psycopg2.connect(self.pg_url)
            try:
                cur = con.cursor()
                cur.execute(query.replace("?", "%s"), params)
                return cur.fetchall()
            finally:
                con.close()
        con = sqlite3.connect(self.db, timeout=5)
        try:
            return con.execute(query, params).fetchall()
        finally:
            con.close()

    def execute(self, query, *params):
        """Runs one write and commits it (as `sql`, ? parameters)."""
        if PG:
            con = psycopg2.connect(self.pg_url)
            try:
                con.cursor().execute(query.replace("?", "%s"), params)
                con.commit()
            finally:
                con.close()
            return
        con = sqlite3.connect(self.db, timeout=5)
        try:
            con.execute(query, params)
            con.commit()
        finally:
            con.close()

    def events(self, type_=None, task=None):
        """The payloads of the events `autonous events` prints (the product's own reader, the
        same on both backends), oldest first; of one type or task when given."""
        args = ["events"] + (["--type", type_] if type_ else []) + (["--task", str(task)] if task else [])
        r = self.run(*args)
        assert r.returncode == 0, r.stderr
        return [json.loads(line)["payload"] for line in r.stdout.splitlines() if line.strip()]

    def wait_idle(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.sql("SELECT count(*) FROM tasks WHERE status IN ('queued','running')")[0][0] == 0:
                return
            time.sleep(0.1)
        raise AssertionError("tasks still open: " + self.tail())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.stub.kill()
        self.stub.wait()
        if self.proc:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.pg_name:
            pg_admin(f"DROP DATABASE IF EXISTS {self.pg_name} WITH (FORCE)")


def chromium(*args):
    exe = shutil.which("chromium")
    if exe is None:
        raise AssertionError("chromium is not installed (scripts/bootstrap installs it)")
    profile = tempfile.mkdtemp(prefix="autonous-chromium-")
    try:
        r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--disable-dev-shm-usage",
                            f"--user-data-dir={profile}", "--no-first-run", *args],
                           capture_output=True, text=True, timeout=120)
        return r
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def metrics_of(text):
    """{(name, frozenset(labels)): value} of every sample."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


class Health(unittest.TestCase):
    def test_healthy_then_a_database_that_refuses_writes_then_healthy_again(self):
        e = Env()
        try:
            e.start()
            status, body, _ = get(e.base + "/healthz")
            self.assertEqual(status, 200, body)
            h = json.loads(body)
            self.assertEqual(h["status"], "ok")
            self.assertEqual(h["slots"], 4)
            self.assertEqual(h["database"], "ok")
            if PG:  # a lock writers wait for (CREATE INDEX's, say)
                lock = psycopg2.connect(e.pg_url)
                lock.cursor().execute("LOCK TABLE tasks IN SHARE MODE")
            else:  # another writer holds the lock
                lock = sqlite3.connect(e.db, timeout=5, isolation_level=None)
                lock.execute("BEGIN IMMEDIATE")
            time.sleep(0.4)  # the probe's result is reused for a quarter second
            status, body, _ = get(e.base + "/healthz")
            lock.rollback() if PG else lock.execute("ROLLBACK")
            lock.close()
            self.assertEqual(status, 503, body)
            h = json.loads(body)
            self.assertEqual(h["status"], "unhealthy")
            self.assertIn("database refuses writes", h["reason"])
            time.sleep(0.4)
            self.assertEqual(get(e.base + "/healthz")[0], 200)
            self.assertIsNone(e.proc.poll(), "the worker must keep running")
        finally:
            e.stop()


class Metrics(unittest.TestCase):
    def check_monitoring_files(self, text):
        """docs/monitoring's alert rules and Grafana dashboard query only series this exposition
        has (a renamed metric breaks them silently otherwise)."""
        import yaml
        names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
        here = os.path.dirname(os.path.abspath(__file__))
        docs = os.path.join(here, "..", "..", "docs", "monitoring")
        with open(os.path.join(docs, "alerts.yml")) as f:
            rules = yaml.safe_load(f)["groups"][0]["rules"]
        with open(os.path.join(docs, "grafana-dashboard.json")) as f:
            dashboard = json.load(f)
        exprs = [r["expr"] for r in rules]
        exprs += [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        self.assertGreaterEqual(len(rules), 8)
        for r in rules:
            self.assertTrue(r["alert"].startswith("Autonous") and r["labels"]["severity"], r)
        used = set()
        for expr in exprs:
            self.assertEqual(expr.count("("), expr.count(")"), expr)
            for name in re.findall(r"\b((?:autonous|process)_[a-z_]+)", expr):
                used.add(name)
                self.assertIn(name, names, f"{name} in {expr!r} is not exposed")
        for wanted in ("autonous_oldest_queued_age_seconds", "autonous_task_time_to_reply_seconds_bucket",
                       "autonous_tasks_failed_total", "autonous_llm_tokens_total",
                       "autonous_context_warnings_total", "autonous_llm_cost_usd_total"):
            self.assertIn(wanted, used)

    def test_metrics_parse_and_match_the_database_after_a_run(self):
        e = Env(extra={"COST_PRICES": "on"})  # the stub's calls priced as OpenAI's: spend counted
        try:
            for i in range(4):
                e.enqueue("alpha", f"hello number {i}, tell me about cakes")
            e.enqueue("beta", "rate limited once [[stub:429:1*1]]")
            e.enqueue("gamma", "refused for good [[stub:llama400]]")
            # A chat that summarizes and recalls: a small budget, long turns, a fact asked later.
            r = e.run("chat", "set", "delta", "--max-tokens", "2500", "--strategy", "summarize")
            self.assertEqual(r.returncode, 0, r.stderr)
            e.enqueue("delta", "Remember this: my parcel tracking code is ZEBRA7731 for the oven.")
            for i in range(16):
                # Under the oversized cap (1/16 of 2 500): compacted and summarized, not cut.
                e.enqueue("delta", f"Turn {i}: " + " ".join(["flour sugar butter eggs ribbon"] * 28))
            e.enqueue("delta", "What was my parcel tracking code ZEBRA7731 about?")
            e.start()
            e.wait_idle()
            status, text, headers = get(e.base + "/metrics")
            self.assertEqual(status, 200)
            self.assertIn("text/plain; version=0.0.4", headers["Content-Type"])
            m = metrics_of(text)
            for st in ("queued", "running", "done", "failed"):
                want = e.sql("SELECT count(*) FROM tasks WHERE status = ?", st)[0][0]
                self.assertEqual(m[("autonous_tasks", frozenset({("status", st)}))], want, st)
            self.assertEqual(m[("autonous_tasks", frozenset({("status", "done")}))], 23)
            self.assertEqual(m[("autonous_tasks", frozenset({("status", "failed")}))], 1)
            types = {f.name: f.type for f in text_string_to_metric_families(text)}
            self.assertEqual(types["autonous_tasks"], "gauge")
            self.assertEqual(types["autonous_llm_request_duration_seconds"], "histogram")
            self.assertEqual(types["autonous_llm_tokens"], "counter")  # the parser drops _total
            model = frozenset({("model", "gpt-4o-mini"), ("outcome", "ok")})
            summarized = e.events("context.summarized")
            summary_calls = sum(p.get("calls", 0) for p in summarized)
            self.assertGreaterEqual(summary_calls, 1, "the delta chat must have summarized")
            # The turns' completions (a summary's calls have llm_calls rows of their own, #31).
            calls = e.sql("SELECT count(*) FROM llm_calls WHERE call = 'chat'")[0][0]
            self.assertEqual(m[("autonous_llm_request_duration_seconds_count", model)], calls + summary_calls)
            retried = e.events("llm.retry")
            errors = sum(1 for p in retried + e.events("turn.failed") if (p.get("status") or 0) > 0)
            self.assertEqual(errors, 2)  # the 429 and the 400
            self.assertEqual(m[("autonous_llm_request_duration_seconds_count",
                                frozenset({("model", "gpt-4o-mini"), ("outcome", "error")}))], errors)
            def spent(column):
                n = e.sql(f"SELECT coalesce(sum({column}), 0) FROM llm_calls WHERE call = 'chat'")[0][0]
                return n + sum(u.get(column) or 0 for p in summarized for u in p.get("usage") or [])
            def tokens(kind):
                return m[("autonous_llm_tokens_total", frozenset({("model", "gpt-4o-mini"), ("kind", kind)}))]
            self.assertGreater(spent("cached_tokens"), 0)
            # The kinds add up: the cached part of a prompt is counted once.
            self.assertEqual(tokens("prompt_cached"), spent("cached_tokens"))
            self.assertEqual(tokens("prompt_uncached"), spent("prompt_tokens") - spent("cached_tokens"))
            self.assertEqual(tokens("completion"), spent("completion_tokens"))
            self.assertNotIn('kind="prompt"', text)
            # The user's wait, queued to reply, for every reply.
            completed = e.events("turn.completed")
            self.assertEqual(len(completed), 23)
            # ... as the database has it: created_at to finished_at (each backend's own clock, the
            # worker's through PostgreSQL's offset), within the commit's own time.
            def unix_ms(iso):
                t = datetime.datetime.strptime(iso[:23], "%Y-%m-%dT%H:%M:%S.%f")
                return t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
            lines = e.run("events", "--type", "turn.completed").stdout.splitlines()
            for ev in (json.loads(line) for line in lines):
                created, finished = e.sql("SELECT created_at, finished_at FROM tasks WHERE id = ?",
                                          ev["task_id"])[0]
                want = unix_ms(finished) - unix_ms(created)
                self.assertGreater(want, 0)
                self.assertLess(abs(ev["payload"]["time_to_reply_ms"] - want), 1000, (ev, want))
            self.assertTrue(all(p["queued_ms"] >= 0 for p in e.events("turn.started")))
            self.assertEqual(m[("autonous_task_time_to_reply_seconds_count", frozenset())], 23)
            self.assertAlmostEqual(m[("autonous_task_time_to_reply_seconds_sum", frozenset())],
                                   sum(p["time_to_reply_ms"] for p in completed) / 1000, places=3)
            self.assertEqual(m[("autonous_tasks_failed_total", frozenset({("reason", "http_400")}))], 1)
            warned = {}
            for p in e.events("context.warning"):
                warned[p["reason"]] = warned.get(p["reason"], 0) + 1
            for reason, n in warned.items():
                self.assertEqual(m[("autonous_context_warnings_total", frozenset({("reason", reason)}))], n)
            self.assertEqual(m[("autonous_context_warnings_total",
                                frozenset({("reason", "server_truncated")}))], warned.get("server_truncated", 0))
            self.assertGreater(m[("process_resident_memory_bytes", frozenset())], 1e6)
            self.assertEqual(types["process_cpu_seconds"], "counter")
            self.assertGreater(m[("autonous_llm_cost_usd_total", frozenset({("model", "gpt-4o-mini")}))], 0)
            self.check_monitoring_files(text)
            version = e.run("--version").stdout.strip()[len("autonous "):]
            self.assertEqual(m[("autonous_build_info", frozenset({("version", version)}))], 1)
            summaries = len(summarized)
            self.assertEqual(m[("autonous_context_summaries_total", frozenset({("outcome", "ok")}))], summaries)
            compressed = e.events("context.compressed")
            hits = sum(1 for p in compressed for i in (p.get("recall") or {}).get("items") or []
                       if i.get("score") is not None)
            self.assertGreaterEqual(hits, 1, "the tracking code must have been recalled")
            self.assertEqual(m[("autonous_recall_hits_total", frozenset())], hits)
            retries = sum(1 for p in retried if p.get("reason") == "http_429")
            self.assertEqual(retries, 1)
            self.assertEqual(m[("autonous_llm_retries_total", frozenset({("reason", "http_429")}))], 1)
            compressions = len(compressed)
            got = sum(v for (n, _), v in m.items() if n == "autonous_context_compressions_total")
            self.assertEqual(got, compressions)
            def duration_count(outcome):
                return m[("autonous_task_duration_seconds_count",
                          frozenset({("model", "gpt-4o-mini"), ("outcome", outcome)}))]
            self.assertEqual(duration_count("done"), 23)
            self.assertEqual(duration_count("failed"), 1)
            self.assertEqual(duration_count("retry"), 1)
            self.assertEqual(m[("autonous_slots", frozenset())], 4)
            self.assertEqual(m[("autonous_oldest_queued_age_seconds", frozenset())], 0)
            self.assertNotIn("sk-test-secret", text)
        finally:
            e.stop()


class Dashboard(unittest.TestCase):
    def test_pages_in_a_real_browser_show_the_database_and_run_no_script(self):
        e = Env()
        try:
            chat = "chat <b>bold</b> & co"
            tasks = [e.enqueue(chat, f"turn {i}: " + HOSTILE) for i in range(3)]
            failed = e.enqueue("other", "no [[stub:llama400]] " + HOSTILE)
            e.start()
            e.wait_idle()
            pages = {
                "overview": e.base + "/",
                "chat": e.base + "/chat?id=" + urllib.request.quote(chat, safe=""),
                "task": e.base + f"/task?id={tasks[-1]}",
                "failed": e.base + f"/task?id={failed}",
                "chats": e.base + "/chats",
            }
            dom = {}
            for name, url in pages.items():
                r = chromium("--dump-dom", url)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                dom[name] = r.stdout
                # Our pages have no script and no image at all: one in the DOM was injected.
                self.assertNotIn("<script", r.stdout, name)
                self.assertNotIn("<img", r.stdout, name)
                self.assertNotRegex(r.stdout, r"<body[^>]*data-pwned", name)
            # The text is shown, escaped, not run.
            self.assertIn("&lt;script&gt;document.body.setAttribute", dom["task"])
            self.assertIn("chat &lt;b&gt;bold&lt;/b&gt; &amp; co", dom["chat"])
            # Figures match the database.
            done = e.sql("SELECT count(*) FROM tasks WHERE status = 'done'")[0][0]
            self.assertRegex(dom["overview"], rf"id=\"count-done\">done<b>{done}</b>")
            self.assertRegex(dom["overview"], r"id=\"count-failed\">failed<b>1</b>")
            self.assertIn("llama says no", dom["overview"])  # the failure with its error
            self.assertIn("id=\"tasks-over-time\"", dom["overview"])
            after = [p for p in e.events("context.compressed", task=tasks[-1])][-1]["tokens_after"]
            self.assertRegex(dom["task"], rf"<td>tokens_after</td><td>{after}</td>")
            reply = e.sql("SELECT reply FROM tasks WHERE id = ?", tasks[-1])[0][0]
            self.assertIn(reply.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")[:40],
                          dom["task"])
            self.assertIn("llama says no", dom["failed"])
            self.assertIn("&lt;script&gt;document.body.setAttribute", dom["failed"])
            self.assertIn("&lt;img src=x onerror=", dom["failed"])
            calls = e.sql("SELECT count(*) FROM llm_calls")[0][0]
            self.assertRegex(dom["overview"], rf"<td>gpt-4o-mini</td><td>{calls}</td>")
            # A chat whose only task failed has a page too (its link is on the overview).
            r = chromium("--dump-dom", e.base + "/chat?id=other")
            self.assertIn("<span id=\"tasks\">1</span> tasks", r.stdout)
            rows = re.findall(r"<tr><td>\d+</td><td><a href=\"/task\?id=(\d+)\"", dom["chat"])
            self.assertEqual(sorted(int(r) for r in rows), sorted(tasks))
            self.assertIn("id=\"chat-tokens\"", dom["chat"])
            shot = os.path.join(e.dir, "chat.png")
            r = chromium(f"--screenshot={shot}", "--window-size=1200,1400", pages["chat"])
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            with open(shot, "rb") as f:
                png = f.read()
            self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
            self.assertGreater(len(png), 20000, "a blank page makes a tiny PNG")
            status, _, headers = get(pages["task"])
            self.assertIn("default-src 'none'", headers["Content-Security-Policy"])
            for url in pages.values():
                self.assertNotIn("sk-test-secret", get(url)[1])
            self.assertEqual(get(e.base + "/task?id=999999")[0], 404)
            self.assertEqual(get(e.base + "/task?id=1%20OR%201")[0], 404)
            self.assertEqual(get(e.base + "/chat?id=nobody")[0], 404)
            # DNS rebinding: a page whose own name points at 127.0.0.1 gets nothing.
            self.assertEqual(get(e.base + "/", {"Host": f"evil.example:{e.port}"})[0], 421)
            self.assertEqual(get(e.base + "/", {"Host": f"localhost:{e.port}"})[0], 200)
            status, body, _ = get(e.base + "/healthz", {"Host": "evil.example"})
            self.assertEqual(status, 200)  # no data in it
            with socket.create_connection(("127.0.0.1", e.port), timeout=10) as s:
                s.sendall(b"GET / HTTP/1.0\r\n\r\n")  # no Host at all
                self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 421 Misdirected Request"))
        finally:
            e.stop()

    def test_a_chat_page_says_why_and_shows_its_transcript_searched_and_paged(self):
        """#33: per turn the decision sentence, recall terms and warnings; the transcript paged and
        searched; warnings counted; optional auto-refresh; one time format."""
        e = Env()
        try:
            chat = "why-chat"
            self.assertEqual(e.run("chat", "set", chat, "--max-tokens", "3000").returncode, 0)
            # Pins over their share of the budget: left out, with a pins_left_out warning.
            for i in range(4):
                r = e.run("chat", "pin", chat, f"remember {i} " + "pinned words here " * 200)
                self.assertEqual(r.returncode, 0, r.stderr)
            # An imported history (as a front end would: the worker indexes it for search at
            # start), long enough that its oldest part is cut and recalled; then a question.
            e.execute("INSERT INTO history(chat_id, role, text) VALUES (?, 'user', ?)", chat,
                      "My parcel code is ZEBRA7731, please keep it.")
            for i in range(60):
                e.execute("INSERT INTO history(chat_id, role, text) VALUES (?, 'user', ?)", chat,
                          f"imported message {i} <i>x</i> " + "flour sugar butter eggs " * 25)
            e.enqueue(chat, "What was my parcel code zebra7731 about?")
            e.start()
            e.wait_idle()
            url = e.base + "/chat?id=" + chat
            r = chromium("--dump-dom", url)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            dom = r.stdout
            self.assertNotIn("<script", dom)
            compressed = e.events("context.compressed")
            decision = compressed[-1]["decision"]
            self.assertTrue(decision)
            shown = decision.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            self.assertIn(shown[:60], dom)  # the turn's "why"
            terms = compressed[-1]["recall"]["terms"]
            self.assertIn("zebra7731", [t.lower() for t in terms])
            self.assertIn(", ".join(terms[:2]), dom)
            warned = [p["reason"] for p in e.events("context.warning")]
            self.assertIn("pins_left_out", warned)
            self.assertRegex(dom, r'id="chat-warnings">Warnings over the newest 1 answered turns: [^<]*pins_left_out')
            self.assertIn("history tokens before", dom)  # labels that say what they measure
            self.assertIn("prompt tokens sent", dom)
            # The transcript: newest first, 50 a page, escaped, then older ones.
            transcript = dom.split('id="transcript"')[1].split("</table>")[0]
            page1 = re.findall(r"imported message (\d+) ", transcript)
            self.assertEqual(page1, [str(i) for i in range(59, 11, -1)])  # and the turn's two
            self.assertIn("imported message 59 &lt;i&gt;x&lt;/i&gt;", transcript)
            older = re.search(r'id="older" href="([^"]+)"', dom)
            self.assertIsNotNone(older)
            status, page2, _ = get(e.base + older.group(1).replace("&amp;", "&"))
            self.assertEqual(status, 200)
            page2 = page2.split("id='transcript'")[1].split("</table>")[0]
            self.assertIn("imported message 9 ", page2)
            self.assertIn("ZEBRA7731, please keep it", page2)
            self.assertNotIn('id="older"', page2)
            self.assertNotIn("imported message 59 ", page2)
            # Search: case-insensitive, only matching messages; LIKE's own characters are text.
            status, found, _ = get(url + "&q=zebra7731")
            rows = re.findall(r"<tr><td>\d+</td>.*?</tr>", found.split('id=\'transcript\'')[1])
            self.assertGreaterEqual(len(rows), 2)
            self.assertTrue(all("zebra7731" in row.lower() for row in rows), rows)
            status, none, _ = get(url + "&q=%25")
            self.assertIn("none", none.split("id='transcript'")[1][:400])
            # Warnings on the overview too.
            status, overview, _ = get(e.base + "/")
            self.assertRegex(overview, r"<td>pins_left_out</td><td>\d+</td>")
            # Auto-refresh on request only, bounded; no script.
            self.assertNotIn("http-equiv='refresh'", get(url)[1])
            self.assertIn("Refresh every 30 s", get(url)[1])
            body = get(url + "&refresh=30")[1]
            self.assertIn("<meta http-equiv='refresh' content='30'>", body)
            self.assertIn("Stop refreshing", body)
            self.assertIn("<meta http-equiv='refresh' content='5'>", get(url + "&refresh=1")[1])
            self.assertNotIn("http-equiv='refresh'", get(url + "&refresh=abc")[1])
            # One time format: the queue's Unix ms shown as the stored ISO times are.
            task = e.sql("SELECT max(id) FROM tasks")[0][0]
            body = get(e.base + f"/task?id={task}")[1]
            self.assertRegex(body, r"<td>first_claimed_at</td><td><pre title='Unix ms \d+'>\d{4}-\d\d-\d\dT")
        finally:
            e.stop()

    def test_a_task_page_shows_its_tool_calls_and_results_escaped(self):
        e = Env()
        try:
            task = e.enqueue("tooled", "where is my order?")
            e.start("dashboard")
            calls = json.dumps([{"id": "call_1", "type": "function",
                                 "function": {"name": "order_status",
                                              "arguments": json.dumps({"q": "<b>42</b>"})}}])
            e.execute("INSERT INTO history(chat_id, role, text, task_id) VALUES (?, 'user', ?, ?)",
                      "tooled", "where is my order?", task)
            e.execute("INSERT INTO history(chat_id, role, text, task_id, tool_calls) "
                      "VALUES (?, 'assistant', '', ?, ?)", "tooled", task, calls)
            e.execute("INSERT INTO history(chat_id, role, text, task_id, tool_call_id) "
                      "VALUES (?, 'tool', ?, ?, 'call_1')", "tooled", "<script>alert(1)</script> shipped", task)
            status, body, _ = get(e.base + f"/task?id={task}")
            self.assertEqual(status, 200)
            page = body
            self.assertIn("Tool calls", page)
            self.assertIn("order_status", page)
            self.assertIn("call_1", page)
            self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt; shipped", page)
            self.assertNotIn("<script>alert(1)", page)
            self.assertNotIn("<b>42</b>", page)
            # A task without tools has no such section.
            other = e.enqueue("plain", "hello")
            self.assertNotIn("Tool calls", get(e.base + f"/task?id={other}")[1])
        finally:
            e.stop()

    def test_the_dashboard_command_serves_a_database_without_a_worker(self):
        e = Env()
        try:
            e.enqueue("solo", "queued, never run")
            e.start("dashboard")
            self.assertEqual(get(e.base + "/healthz")[0], 200)
            m = metrics_of(get(e.base + "/metrics")[1])
            self.assertEqual(m[("autonous_tasks", frozenset({("status", "queued")}))], 1)
            self.assertGreaterEqual(m[("autonous_oldest_queued_age_seconds", frozenset())], 0)
            self.assertNotIn(("autonous_slots", frozenset()), m)
            self.assertEqual(get(e.base + "/")[0], 200)
            self.assertEqual(e.sql("SELECT count(*) FROM tasks WHERE status = 'queued'")[0][0], 1)
            e.proc.send_signal(signal.SIGTERM)
            self.assertEqual(e.proc.wait(timeout=10), 0)
            if PG:  # a database that is not there: said so, nothing created, no password shown
                url = with_database(PG_SERVER, "autonous_no_such_db")
                r = e.run("dashboard", env=dict(e.env, DATABASE_URL=url))
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("autonous_no_such_db", r.stderr)
                password = re.search(r"://[^:/@]+:([^@]+)@", PG_SERVER)
                if password:
                    self.assertNotIn(password.group(1), r.stderr)
                self.assertEqual(e.sql("SELECT count(*) FROM pg_database WHERE datname = 'autonous_no_such_db'")[0][0], 0)
            else:
                r = e.run("dashboard", env=dict(e.env, DB_PATH=os.path.join(e.dir, "typo.db")))
                self.assertEqual(r.returncode, 2)
                self.assertIn("DB_PATH", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(e.dir, "typo.db")), "nothing created")
        finally:
            e.stop()


class Security(unittest.TestCase):
    def test_a_non_loopback_address_without_a_token_is_refused_with_exit_2(self):
        e = Env()
        try:
            env = dict(e.env, HTTP_LISTEN=f"0.0.0.0:{e.port}")
            env.pop("HTTP_TOKEN", None)
            for args in (("worker",), ("dashboard",), ("dashboard", "--listen", f"0.0.0.0:{e.port}")):
                r = e.run(*args, env=env)
                self.assertEqual(r.returncode, 2, (args, r.stderr))
                self.assertIn("HTTP_TOKEN", r.stderr)
            r = e.run("worker", env=dict(e.env, HTTP_LISTEN="127.0.0.1:notaport"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("HTTP_LISTEN", r.stderr)
            r = e.run("dashboard", "--listen", "[::1", env=e.env)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--listen", r.stderr)
        finally:
            e.stop()

    def test_a_token_guards_every_page_but_healthz(self):
        e = Env(extra={"HTTP_TOKEN": "s3cret-token-value"})
        try:
            e.start()
            self.assertEqual(get(e.base + "/healthz")[0], 200)
            for path in ("/", "/metrics", "/chats", "/task?id=1"):
                status, _, headers = get(e.base + path)
                self.assertEqual(status, 401, path)
                self.assertIn("Basic", headers.get("WWW-Authenticate", ""))
                self.assertEqual(get(e.base + path, {"Authorization": "Bearer wrong-token-value!"})[0], 401)
            self.assertEqual(get(e.base + "/metrics", {"Authorization": "Bearer s3cret-token-value"})[0], 200)
            import base64
            basic = base64.b64encode(b"operator:s3cret-token-value").decode()
            self.assertEqual(get(e.base + "/", {"Authorization": "Basic " + basic})[0], 200)
        finally:
            e.stop()

    def test_a_huge_message_is_a_bounded_page_and_clients_that_never_read_hold_no_thread(self):
        e = Env()
        try:
            self.assertEqual(e.run("migrate").returncode, 0)
            huge = "&<" * 10_000_000  # 20 MB that escape to 90 MB
            if PG:
                con = psycopg2.connect(e.pg_url)
                cur = con.cursor()
                cur.execute("INSERT INTO tasks(chat_id, text) VALUES ('h', %s) RETURNING id", (huge,))
            else:
                con = sqlite3.connect(e.db)
                cur = con.execute("INSERT INTO tasks(chat_id, text) VALUES ('h', ?) RETURNING id", (huge,))
            task = cur.fetchone()[0]
            con.commit()
            con.close()
            e.start("dashboard")
            status, body, _ = get(e.base + f"/task?id={task}")
            self.assertEqual(status, 200)
            self.assertLess(len(body), 400_000)  # was 90 MB
            self.assertIn("The first 20000 of 20000000 characters are shown.", body)
            self.assertIn("&amp;&lt;&amp;&lt;", body)
            # Four clients ask for the page and never read: the page threads stay free.
            idle = []
            for _ in range(4):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", e.port))
                s.sendall(f"GET /task?id={task} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
                idle.append(s)
            time.sleep(0.3)
            started = time.time()
            self.assertEqual(get(e.base + "/", timeout=10)[0], 200)
            self.assertLess(time.time() - started, 2.5, "a client that never reads held a thread")
            for s in idle:
                s.close()
            with open(f"/proc/{e.proc.pid}/status") as f:
                peak_kb = int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
            if not SANITIZED:  # under ASan every allocation costs shadow memory and redzones
                self.assertLess(peak_kb, 400_000, "five requests for a 20 MB message")  # was > 1 GB
        finally:
            e.stop()

    def test_garbage_and_slow_clients_do_not_disturb_the_worker(self):
        e = Env(latency_ms=20)
        try:
            e.start()
            ids = [e.enqueue(f"c{i % 5}", f"message {i}") for i in range(40)]
            slow_closed = []

            def slow_client():  # a byte a second: the server must answer and close by its deadline
                import select
                started = time.time()
                with socket.create_connection(("127.0.0.1", e.port)) as s:
                    for ch in b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                        try:
                            s.sendall(bytes([ch]))
                        except OSError:
                            break
                        if select.select([s], [], [], 1.0)[0]:  # an answer, or the close
                            break
                        if time.time() - started > 20:
                            return
                    reply = b""
                    try:
                        while chunk := s.recv(4096):
                            reply += chunk
                    except OSError:
                        pass
                    slow_closed.append((time.time() - started, reply[:12]))

            def garbage_client(payload):
                try:
                    with socket.create_connection(("127.0.0.1", e.port), timeout=10) as s:
                        s.sendall(payload)
                        s.recv(65536)
                except OSError:
                    pass

            threads = [threading.Thread(target=slow_client) for _ in range(6)]
            payloads = [os.urandom(3000), b"\x00" * 100 + b"\r\n\r\n", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
                        b"POST / HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", b"GET /%zz HTTP/1.1\r\n\r\n",
                        b"GET / HTTP/9.9\r\n\r\n", b"\r\n\r\n", b"GET /task?id=" + b"9" * 400 + b" HTTP/1.1\r\n\r\n"]
            threads += [threading.Thread(target=garbage_client, args=(p,)) for p in payloads * 10]
            for t in threads:
                t.start()
            e.wait_idle(timeout=90)
            for t in threads:
                t.join(timeout=30)
            self.assertEqual(e.sql("SELECT count(*) FROM tasks WHERE status = 'done'")[0][0], len(ids))
            self.assertIsNone(e.proc.poll(), "the worker must still run: " + e.tail())
            self.assertEqual(len(slow_closed), 6, "each slow client is cut off")
            self.assertTrue(all(t < 8 and r == b"HTTP/1.1 408" for t, r in slow_closed), slow_closed)
            self.assertEqual(get(e.base + "/healthz")[0], 200)
            self.assertEqual(get(e.base + "/")[0], 200)
            status, body, _ = get(e.base + "/task?id=" + "9" * 400)
            self.assertEqual(status, 404)
        finally:
            e.stop()

    def test_read_only_methods_and_a_flood_of_idle_connections(self):
        e = Env()
        try:
            e.start()
            for method in ("POST", "PUT", "DELETE"):
                req = urllib.request.Request(e.base + "/", method=method, data=b"x")
                try:
                    urllib.request.urlopen(req, timeout=10)
                    self.fail(method + " accepted")
                except urllib.error.HTTPError as err:
                    self.assertEqual(err.code, 405, method)
            with urllib.request.urlopen(urllib.request.Request(e.base + "/", method="HEAD"), timeout=10) as r:
                self.assertEqual(r.status, 200)
                self.assertEqual(r.read(), b"")
                self.assertGreater(int(r.headers["Content-Length"]), 1000)
            # 300 connections that never finish a request: more than the server keeps (128).
            idle = [socket.create_connection(("127.0.0.1", e.port)) for _ in range(300)]
            try:
                for s in idle:
                    s.sendall(b"GET / HTTP/1.1\r\n")
                time.sleep(0.3)
                t0 = time.time()
                status, body, _ = get(e.base + "/healthz", timeout=5)
                self.assertEqual(status, 200, body)
                self.assertLess(time.time() - t0, 2.0)
            finally:
                for s in idle:
                    s.close()
            self.assertIsNone(e.proc.poll())
        finally:
            e.stop()


class Roles(unittest.TestCase):
    """docs/postgresql.md, "What a managed PostgreSQL needs": the owner migrates; workers and front ends need
    only SELECT, INSERT, UPDATE, DELETE on the tables and USAGE on the sequences; the read-only
    commands and the dashboard need only SELECT."""

    def test_a_select_only_role_inspects_and_a_table_role_runs_the_worker(self):
        if not PG:
            self.skipTest("roles are PostgreSQL's")
        e = Env()
        reader, app = f"autonous_reader_{os.getpid()}", f"autonous_app_{os.getpid()}"
        as_role = lambda role: re.sub(r"://[^@]*@", f"://{role}:pw-{role}@", e.pg_url)
        try:
            e.enqueue("a", "hello")  # the owner migrates
            for role in (reader, app):
                pg_admin(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'")
            pg_admin(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}", e.pg_url)
            pg_admin(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {app}",
                     e.pg_url)
            pg_admin(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {app}", e.pg_url)
            ro = dict(e.env, DATABASE_URL=as_role(reader))
            for args in (["status"], ["events"], ["context", "stats"], ["chat", "show", "a"]):
                r = e.run(*args, env=ro)
                self.assertEqual(r.returncode, 0, (args, r.stderr))
            self.assertIn("queued", e.run("status", env=ro).stdout)
            # A follow takes checkpoints (pg_current_xact_id) as this role.
            out_path = os.path.join(e.dir, "follow.out")
            with open(out_path, "w") as out:
                follow = subprocess.Popen([BIN, "events", "--follow", "--type", "x.mark"], env=ro,
                                          stdout=out, stderr=subprocess.STDOUT)
            try:
                pg_admin("INSERT INTO events(type, payload) VALUES ('x.mark', '{\"n\": 1}')",
                         e.pg_url)
                deadline = time.time() + 20
                while time.time() < deadline and '"x.mark"' not in open(out_path).read():
                    self.assertIsNone(follow.poll(), open(out_path).read())
                    time.sleep(0.05)
                self.assertIn('"x.mark"', open(out_path).read())
            finally:
                follow.send_signal(signal.SIGTERM)
                follow.wait(timeout=10)
            r = e.run("enqueue", "--chat", "a", "refused", env=ro)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("permission denied", r.stderr)
            e.env = ro
            e.start("dashboard")
            for page in ("/", "/metrics", "/chats", "/chat?id=a", "/task?id=1"):
                status, body, _ = get(e.base + page)
                self.assertEqual(status, 200, (page, body[:300]))
            status, body, _ = get(e.base + "/healthz")
            self.assertEqual(status, 200, body)
            e.proc.send_signal(signal.SIGTERM)
            self.assertEqual(e.proc.wait(timeout=10), 0)
            rw = dict(e.env, DATABASE_URL=as_role(app))
            self.assertEqual(e.run("enqueue", "--chat", "b", "from the app", env=rw).returncode, 0)
            e.log.close()
            e.env = rw
            e.start("worker")
            status, body, _ = get(e.base + "/healthz")  # its probe takes the tasks' writer lock
            self.assertEqual(status, 200, body)
            e.wait_idle()
            self.assertEqual(e.sql("SELECT count(*) FROM tasks WHERE status = 'done'")[0][0], 2)
        finally:
            e.stop()
            pg_admin(f"DROP ROLE IF EXISTS {reader}")
            pg_admin(f"DROP ROLE IF EXISTS {app}")


class Failover(unittest.TestCase):
    """A PostgreSQL server that refuses for a while (a standby, a failover not yet promoted: read-only;
    a DBA's pg_cancel_backend) is waited out: the worker keeps running, /healthz says so, no task's
    attempt is counted and no answer is thrown away (#27)."""

    def read_write(self, e):
        """A connection that may write whatever the database's default says."""
        return psycopg2.connect(e.pg_url, options="-c default_transaction_read_only=off")

    def end_sessions(self, e):
        pg_admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                 f"'{e.pg_name}' AND application_name = 'autonous'")

    def waiting(self, e):
        """The worker statements that wait for a lock (the test's)."""
        return e.sql(f"""SELECT pid FROM pg_stat_activity WHERE datname = '{e.pg_name}'
                         AND application_name = 'autonous' AND wait_event_type = 'Lock'""")

    def cancel_until(self, e, done, timeout):
        """pg_cancel_backend of every worker statement that waits for a lock, until done()."""
        deadline = time.time() + timeout
        while not done() and time.time() < deadline:
            for (pid,) in self.waiting(e):
                pg_admin(f"SELECT pg_cancel_backend({pid})")
            time.sleep(0.2)

    def test_a_read_only_server_is_waited_out_at_start_and_while_running(self):
        if not PG:
            self.skipTest("a PostgreSQL server's read-only mode")
        e = Env(extra={"WORKER_CONCURRENCY": "2"})
        try:
            for i in range(3):
                e.enqueue(f"ro{i}", "before the server turned read-only")
            pg_admin(f"ALTER DATABASE {e.pg_name} SET default_transaction_read_only = on")
            e.start()  # a worker (re)started against a read-only server must not exit
            time.sleep(3)
            self.assertIsNone(e.proc.poll(), "the worker must wait: " + e.tail())
            status, body, _ = get(e.base + "/healthz")
            self.assertEqual(status, 503, body)
            self.assertIn("read-only", json.loads(body)["reason"])
            self.assertEqual(e.sql("SELECT count(*) FROM tasks WHERE status = 'queued'")[0][0], 3)
            pg_admin(f"ALTER DATABASE {e.pg_name} RESET default_transaction_read_only")
            e.wait_idle(60)  # the slots connect again on their own
            status, body, _ = get(e.base + "/healthz")
            self.assertEqual(status, 200, body)
            # Read-only again while running: the slots' new sessions are refused.
            pg_admin(f"ALTER DATABASE {e.pg_name} SET default_transaction_read_only = on")
            self.end_sessions(e)
            time.sleep(1)
            con = self.read_write(e)
            con.cursor().execute("INSERT INTO tasks(chat_id, text) VALUES ('ro9', 'during'), "
                                 "('ro8', 'during')")
            con.commit()
            con.close()
            time.sleep(3)
            self.assertIsNone(e.proc.poll(), "the worker must wait: " + e.tail())
            self.assertEqual(e.sql("SELECT count(*) FROM tasks WHERE status = 'queued'")[0][0], 2)
            pg_admin(f"ALTER DATABASE {e.pg_name} RESET default_transaction_read_only")
            e.wait_idle(60)
            self.assertEqual(e.sql("SELECT count(*), max(attempts) FROM tasks WHERE status = 'done'")[0],
                             (5, 1))
            self.assertEqual(len(e.events("turn.completed")), 5)
            self.assertIsNone(e.proc.poll())
            self.assertIn("refused for now", e.tail())
        finally:
            pg_admin(f"ALTER DATABASE {e.pg_name} RESET default_transaction_read_only")
            e.stop()

    def test_healthz_answers_503_json_at_once_while_the_server_cannot_be_reached(self):
        if not PG:
            self.skipTest("a PostgreSQL server's sessions")
        e = Env(extra={"WORKER_CONCURRENCY": "2"})
        def hz():
            try:
                return get(e.base + "/healthz")
            except OSError as err:
                self.fail(f"{err}: {e.tail()}")

        try:
            e.start()
            deadline = time.time() + 30  # the slots run (not "starting": they connect then)
            while json.loads(hz()[1]).get("status") != "ok" and time.time() < deadline:
                time.sleep(0.05)
            e.enqueue("a", "connected")
            e.wait_idle()
            pg_admin(f"ALTER DATABASE {e.pg_name} WITH ALLOW_CONNECTIONS false")
            self.end_sessions(e)  # as a server that went down: nothing can connect
            time.sleep(0.3)  # past the probe's reuse (250 ms)
            for _ in range(12):
                status, body, headers = hz()
                self.assertEqual(status, 503, body)  # was 500 text in about 1 of 3 probes
                self.assertEqual(headers.get("Content-Type"), "application/json")
                self.assertEqual(json.loads(body)["status"], "unhealthy")
                time.sleep(0.1)
            pg_admin(f"ALTER DATABASE {e.pg_name} WITH ALLOW_CONNECTIONS true")
            deadline = time.time() + 60
            while hz()[0] != 200 and time.time() < deadline:
                time.sleep(0.2)
            self.assertEqual(hz()[0], 200, e.tail())
            self.assertIsNone(e.proc.poll())
        finally:
            pg_admin(f"ALTER DATABASE {e.pg_name} WITH ALLOW_CONNECTIONS true")
            e.stop()

    def test_a_build_the_database_cancels_gives_the_task_back_uncounted(self):
        if not PG:
            self.skipTest("pg_cancel_backend is PostgreSQL's")
        e = Env(extra={"WORKER_CONCURRENCY": "1"})
        lock = None
        try:
            e.start()
            e.enqueue("b", "first")
            e.wait_idle()
            lock = psycopg2.connect(e.pg_url)  # the build's read of the history waits for it
            lock.cursor().execute("LOCK TABLE history IN ACCESS EXCLUSIVE MODE")
            task = e.enqueue("b", "second")
            released = lambda: e.sql("SELECT count(*) FROM events WHERE type = 'agent.released' "
                                     f"AND task_id = {task}")[0][0]
            self.cancel_until(e, lambda: released() > 0, 30)
            lock.rollback()
            lock.close()
            lock = None
            e.wait_idle(60)
            self.assertEqual(e.sql("SELECT status, attempts FROM tasks WHERE id = ?", task)[0],
                             ("done", 1))
            reasons = [p["reason"] for p in e.events("agent.released", task=task)]
            self.assertTrue(reasons and set(reasons) == {"database_unavailable"}, reasons)
            self.assertEqual(e.events("llm.retry"), [])
            self.assertIsNone(e.proc.poll())
        finally:
            if lock is not None:
                lock.close()
            e.stop()

    def test_a_build_the_database_keeps_cancelling_is_counted_after_three_give_backs(self):
        if not PG:
            self.skipTest("pg_cancel_backend is PostgreSQL's")
        e = Env(extra={"WORKER_CONCURRENCY": "1"})
        lock = None
        try:
            e.start()
            e.enqueue("k", "first")
            e.wait_idle()
            lock = psycopg2.connect(e.pg_url)
            lock.cursor().execute("LOCK TABLE history IN ACCESS EXCLUSIVE MODE")
            task = e.enqueue("k", "second")
            retried = lambda: e.sql("SELECT count(*) FROM events WHERE type = 'llm.retry' "
                                    f"AND task_id = {task}")[0][0]
            self.cancel_until(e, lambda: retried() > 0, 60)
            lock.rollback()
            lock.close()
            lock = None
            e.wait_idle(60)
            self.assertEqual(e.sql("SELECT status, attempts FROM tasks WHERE id = ?", task)[0],
                             ("done", 2))
            self.assertEqual(len(e.events("agent.released", task=task)), 3)
            retry = e.events("llm.retry", task=task)[0]
            self.assertEqual(retry["reason"], "internal")
            self.assertIn("the database kept failing the turn", retry["error"])
        finally:
            if lock is not None:
                lock.close()
            e.stop()

    def test_a_save_refused_for_a_whole_lease_is_left_to_the_next_claim(self):
        if not PG:
            self.skipTest("pg_cancel_backend is PostgreSQL's")
        e = Env(extra={"WORKER_CONCURRENCY": "1", "TASK_LEASE_SECONDS": "2"})
        lock = None
        try:
            e.start()
            lock = psycopg2.connect(e.pg_url)  # the reply's INSERT waits for this lock
            lock.cursor().execute("LOCK TABLE history IN EXCLUSIVE MODE")
            task = e.enqueue("s", "refused for longer than a lease")
            self.cancel_until(e, lambda: "did not take the reply" in e.tail(), 30)
            self.assertIn("did not take the reply", e.tail())  # the wait ends after a lease
            lock.rollback()
            lock.close()
            lock = None
            e.wait_idle(60)
            self.assertEqual(e.sql("SELECT status FROM tasks WHERE id = ?", task)[0][0], "done")
            self.assertEqual(e.sql("SELECT count(*) FROM history WHERE role = 'assistant'")[0][0], 1)
            self.assertIsNone(e.proc.poll())
        finally:
            if lock is not None:
                lock.close()
            e.stop()

    def test_a_cancelled_save_is_tried_again_and_not_counted(self):
        if not PG:
            self.skipTest("pg_cancel_backend is PostgreSQL's")
        e = Env()
        lock = None
        try:
            e.run("migrate")
            lock = psycopg2.connect(e.pg_url)  # the reply's INSERT waits for this lock
            lock.cursor().execute("LOCK TABLE history IN EXCLUSIVE MODE")
            e.start()
            e.enqueue("c", "an answer worth keeping")
            for _ in range(2):  # cancelled, waited out, cancelled again
                deadline = time.time() + 20
                pids = []
                while not pids and time.time() < deadline:
                    pids = self.waiting(e)
                    time.sleep(0.05)
                self.assertTrue(pids, "no save waited for the lock: " + e.tail())
                pg_admin(f"SELECT pg_cancel_backend({pids[0][0]})")
                time.sleep(0.3)
            lock.rollback()
            lock.close()
            lock = None
            e.wait_idle(60)
            self.assertEqual(e.sql("SELECT status, attempts FROM tasks")[0], ("done", 1))
            self.assertEqual(len(e.events("llm.request")), 1, "the answer was thrown away")
            self.assertEqual(e.events("llm.retry"), [])
            self.assertIn("canceling statement", e.tail())
            self.assertIsNone(e.proc.poll())
        finally:
            if lock is not None:
                lock.close()
            e.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
