#!/usr/bin/env python3
"""The Debian package (#33), built by scripts/package, installed into a temporary root with
dpkg-deb and run from there: its contents, its control data, its unit under
`systemd-analyze security`, its man page and bash completion, and the packaged binary answering
a task against the loopback stub with the tokenizer files it carries (no TOKENIZER_DATA_DIR).

Run by ctest as `package` (release build only): AUTONOUS_BUILD_DIR names the build folder,
AUTONOUS_STUB_BIN the stub."""
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.environ["AUTONOUS_BUILD_DIR"]
STUB = os.environ["AUTONOUS_STUB_BIN"]


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300, **kw)


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = run(os.path.join(SRC, "scripts", "package"), BUILD)
        assert r.returncode == 0, r.stderr[-3000:]
        cls.deb = r.stdout.strip().splitlines()[-1]
        cls.root = tempfile.mkdtemp(prefix="autonous-pkg-")
        r = run("dpkg-deb", "-x", cls.deb, cls.root)
        assert r.returncode == 0, r.stderr
        cls.bin = os.path.join(cls.root, "usr", "bin", "autonous")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_control_data_names_the_libraries_and_the_conffile(self):
        info = run("dpkg-deb", "--info", self.deb).stdout
        depends = re.search(r"^ Depends: (.*)$", info, re.M).group(1)
        for lib in ("libsqlite3-0", "libpq5", "libcurl4", "libsystemd0", "libicu72"):
            self.assertIn(lib, depends)
        self.assertEqual(run("dpkg-deb", "-f", self.deb, "Package").stdout.strip(), "autonous")
        ctrl = f"dpkg-deb --ctrl-tarfile '{self.deb}' | tar -xOf - ./conffiles"
        self.assertEqual(run("sh", "-c", ctrl).stdout, "/etc/autonous/autonous.env\n")
        listing = run("sh", "-c", f"dpkg-deb --ctrl-tarfile '{self.deb}' | tar -tf -").stdout
        ctrl_dir = tempfile.mkdtemp(prefix="autonous-ctrl-")
        try:
            self.assertEqual(run("dpkg-deb", "-e", self.deb, ctrl_dir).returncode, 0)
            for f in ("postinst", "prerm", "postrm"):
                self.assertIn(f"./{f}", listing)
                script = os.path.join(ctrl_dir, f)
                self.assertTrue(os.access(script, os.X_OK), f)
                self.assertEqual(run("sh", "-n", script).returncode, 0, f)  # it parses
            with open(os.path.join(ctrl_dir, "postinst")) as f:
                self.assertIn("adduser --system --group", f.read())  # the unit's User=
        finally:
            shutil.rmtree(ctrl_dir, ignore_errors=True)
        self.assertIn("adduser", depends)
        # Versioned by its commit: a newer build upgrades an installed one.
        version = run("dpkg-deb", "-f", self.deb, "Version").stdout.strip()
        self.assertRegex(version, r"^\d+\.\d+\.\d+\+git\d+\.[0-9a-f]{7,}$")

    def test_every_file_is_where_the_docs_say(self):
        for path in ("usr/bin/autonous", "usr/share/autonous/tokenizer/o200k_base.tiktoken",
                     "usr/share/autonous/tokenizer/cl100k_base.tiktoken",
                     "usr/share/autonous/tokenizer/llama3.tokenizer.json",
                     "usr/lib/systemd/system/autonous.service", "etc/autonous/autonous.env",
                     "usr/share/man/man1/autonous.1.gz",
                     "usr/share/bash-completion/completions/autonous",
                     "usr/share/doc/autonous/README.md", "usr/share/doc/autonous/docs/operations.md"):
            self.assertTrue(os.path.isfile(os.path.join(self.root, path)), path)
        env = os.stat(os.path.join(self.root, "etc/autonous/autonous.env"))
        self.assertEqual(env.st_mode & 0o777, 0o600)  # it may hold the key
        # Stripped: no debug sections in the packaged binary.
        sections = run("readelf", "-S", self.bin).stdout
        self.assertNotIn(".debug_info", sections)

    def test_the_packaged_unit_is_hardened_and_runs_the_packaged_binary(self):
        unit = os.path.join(self.root, "usr/lib/systemd/system/autonous.service")
        r = run("systemd-analyze", "security", "--offline=true", "--threshold=20", unit)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr)
        level = re.search(r"Overall exposure level for autonous.service: ([0-9.]+)", r.stdout)
        self.assertLessEqual(float(level.group(1)), 2.0)
        # Every key known to this systemd, the binary where ExecStart says.
        r = run("systemd-analyze", "verify", "--man=no", "--recursive-errors=no",
                f"--root={self.root}", unit)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(unit) as f:
            text = f.read()
        self.assertIn("ExecStart=/usr/bin/autonous worker", text)
        self.assertIn("Type=notify", text)
        self.assertIn("User=autonous", text)
        self.assertRegex(text, r"(?m)^WatchdogSec=\d+")
        self.assertIn("EnvironmentFile=/etc/autonous/autonous.env", text)

    def test_man_page_and_bash_completion(self):
        man = run("sh", "-c", f"zcat '{self.root}/usr/share/man/man1/autonous.1.gz'").stdout
        self.assertIn(".TH AUTONOUS", man)
        for word in ("worker", "enqueue", "OPENAI_API_KEY_FILE", "/etc/autonous/autonous.env"):
            self.assertIn(word, man)
        completion = os.path.join(self.root, "usr/share/bash-completion/completions/autonous")
        script = (f"source '{completion}'; COMP_WORDS=('{self.bin}' ''); COMP_CWORD=1; _autonous;"
                  f" echo \"${{COMPREPLY[*]}}\"; COMP_WORDS=('{self.bin}' worker --d); COMP_CWORD=2;"
                  " _autonous; echo \"${COMPREPLY[*]}\"")
        out = run("bash", "-c", script).stdout.splitlines()
        self.assertEqual(len(out), 2, out)
        subcommands = out[0].split()
        for s in ("worker", "enqueue", "status", "dashboard", "cancel", "wait"):
            self.assertIn(s, subcommands)
        self.assertEqual(out[1], "--drain")

    def test_the_packaged_binary_answers_with_the_data_it_carries(self):
        version = run(self.bin, "--version")
        self.assertEqual(version.returncode, 0, version.stderr)
        built = run(os.path.join(BUILD, "cmd", "autonous", "autonous"), "--version").stdout
        self.assertEqual(version.stdout, built)
        work = tempfile.mkdtemp(prefix="autonous-pkg-run-")
        stub = None
        try:
            port_file = os.path.join(work, "stub.port")
            log = os.path.join(work, "stub.log")
            stub = subprocess.Popen([STUB, "--port-file", port_file, "--log", log],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            port = ""
            for _ in range(250):
                if os.path.exists(port_file):
                    with open(port_file) as f:
                        port = f.read().strip()
                if port:
                    break
                time.sleep(0.02)
            key_file = os.path.join(work, "key")
            with open(key_file, "w") as f:
                f.write("sk-from-a-credential\n")
            env = {"PATH": "/usr/bin:/bin", "DB_PATH": os.path.join(work, "a.db"),
                   "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_MODEL": "gpt-4o-mini",
                   "OPENAI_API_KEY_FILE": key_file, "POLL_INTERVAL_MS": "20"}
            r = run(self.bin, "enqueue", "--chat", "c", "hello from the package", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run(self.bin, "worker", "--drain", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            data = os.path.join(self.root, "usr", "share", "autonous", "tokenizer")
            self.assertIn(f'tokenizer_data_dir="{data}"', r.stderr)
            self.assertNotIn("sk-from-a-credential", r.stderr)
            with open(log) as f:  # the key from the file reached the endpoint
                self.assertIn('"authorization":"Bearer sk-from-a-credential"', f.read())
            r = run(self.bin, "status", env=env)
            self.assertIn("done", r.stdout)
            r = run(self.bin, "events", "--type", "llm.request", env=env)
            self.assertIn('"token_counter":"o200k_base"', r.stdout.replace(" ", ""))
        finally:
            if stub:
                stub.kill()
                stub.wait()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
