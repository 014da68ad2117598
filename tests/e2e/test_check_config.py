"""wampscope --check-config as an operator moving a Crossbar config over meets it: every error of
a file in one run (one line each, with the file and the key path), a non-zero exit status, the
same list when the router is started with the file, one warning line naming the Crossbar keys
that change nothing, and TLS files found next to the config file."""

import json
import os
import subprocess
import tempfile
import unittest

import rt_harness

RUN_TIMEOUT = 30.0  # seconds; ASan builds start slowly

R1 = {"name": "realm1", "roles": [{"name": "anonymous", "permissions": [
    {"uri": "", "match": "prefix", "allow": {"call": True, "subscribe": True}}]}]}


def config(router, controller=None):
    cfg = {"version": 2, "workers": [dict({"type": "router"}, **router)]}
    if controller is not None:
        cfg["controller"] = controller
    return cfg


def ws_transport(**extra):
    t = {"type": "websocket", "endpoint": {"type": "tcp", "port": 0, "interface": "127.0.0.1"}}
    t.update(extra)
    return t


class CheckConfigTest(unittest.TestCase):
    def setUp(self):
        self.bin = os.environ.get("RT_ROUTER_BIN")
        if not self.bin:
            raise AssertionError("RT_ROUTER_BIN must be set (ctest sets it)")
        self.tmp = tempfile.TemporaryDirectory(prefix="wampscope-checkcfg-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run_router(self, *args, cwd=None):
        """Runs the router to its exit (a refused config exits at once); returns (status,
        stdout, stderr). The child dies with this process and is waited for here."""
        p = subprocess.Popen([self.bin, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=cwd or self.tmp.name,
                             preexec_fn=rt_harness._die_with_parent)
        try:
            out, err = p.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        for marker in rt_harness.SANITIZER_MARKERS:
            self.assertNotIn(marker, err)
        return p.returncode, out, err

    def test_five_errors_listed(self):
        path = self.write("five.json", json.dumps(config(
            controller={"id": "Node-1"},
            router={
                "wampscope": {"limits": {"hello_timeout": 5}},
                "realms": [dict(R1, rlinks=[{"id": "r2r"}])],
                "transports": [ws_transport(serializers=["json", "xml"])],
                "components": [{"type": "class", "classname": "app.Backend"}],
            })))
        status, out, err = self.run_router("--check-config", "-c", path)
        self.assertEqual(status, 2, err)
        self.assertEqual(out, "")
        lines = err.splitlines()
        prefix = "wampscope: %s: " % path
        want = [
            "controller.id: \"Node-1\" must match",
            "workers[0].components: router components are not supported: run them as separate "
            "WAMP clients",
            "workers[0].wampscope.limits.hello_timeout: must be an integer 100..3600000 ms",
            "workers[0].realms[0].rlinks: router-to-router links (rlinks) are not supported; "
            "wampscope's own cluster",
            "workers[0].transports[0].serializers[1]: unknown serializer \"xml\"",
        ]
        self.assertEqual(len(lines), len(want) + 1, err)
        for line, w in zip(lines, want):
            self.assertTrue(line.startswith(prefix + w), "%r does not start with %r" % (line, w))
        self.assertEqual(lines[-1], prefix + "5 error(s), configuration refused")

        # A normal start refuses the file with the same list, before listening anywhere.
        ports = os.path.join(self.tmp.name, "ports")
        status2, _, err2 = self.run_router("-c", path, "--ports-file", ports)
        self.assertEqual(status2, 2)
        self.assertEqual(err2, err)
        self.assertFalse(os.path.exists(ports))

    def test_harmless_keys_one_warning(self):
        path = self.write("harmless.json", json.dumps(config(
            controller={"options": {"title": "my node"}},
            router={
                "options": {"pythonpath": [".."], "cpu_affinity": [0]},
                "realms": [{"name": "realm1", "roles": [{"name": "anonymous", "permissions": [
                    {"uri": "", "allow": {"call": True}, "cache": True}]}]}],
                "transports": [ws_transport()],
            })))
        status, out, err = self.run_router("--check-config", "-c", path)
        self.assertEqual(status, 0, err)
        self.assertIn("configuration OK", out)
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertEqual(
            lines[0],
            "wampscope: %s: warning: 4 key(s) with no effect in wampscope, ignored: "
            "controller.options.title, workers[0].options.pythonpath, "
            "workers[0].options.cpu_affinity, "
            "workers[0].realms[0].roles[0].permissions[0].cache" % path)

    def test_long_warning_line_whole(self):
        # 30 ignored keys make a warning of about 1700 characters: printed whole, not cut.
        perms = [{"uri": "com.app%d" % i, "allow": {"call": True}, "cache": True}
                 for i in range(30)]
        path = self.write("long.json", json.dumps(config(router={
            "realms": [{"name": "realm1", "roles": [{"name": "anonymous", "permissions": perms}]}],
            "transports": [ws_transport()],
        })))
        status, out, err = self.run_router("--check-config", "-c", path)
        self.assertEqual(status, 0, err)
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, err)
        keys = ", ".join("workers[0].realms[0].roles[0].permissions[%d].cache" % i
                         for i in range(30))
        self.assertEqual(lines[0], "wampscope: %s: warning: 30 key(s) with no effect in "
                         "wampscope, ignored: %s" % (path, keys))

    def test_port_option_on_another_listeners_port(self):
        # --port moves the first WebSocket listener; onto the port of another listener (or of
        # the metrics listener) libwebsockets would share one socket, and one of them would
        # never be reached: refused, also by --check-config.
        ep = {"type": "tcp", "port": 38474, "interface": "127.0.0.1"}
        path = self.write("port.json", json.dumps(config(router={
            "realms": [R1],
            "transports": [ws_transport(), {"type": "rawsocket", "id": "raw1", "endpoint": ep}],
            "wampscope": {"metrics": {"endpoint": dict(ep, port=38475)}},
        })))
        status, out, err = self.run_router("--check-config", "--port", "38474", "-c", path)
        self.assertEqual(status, 2, err)
        self.assertEqual(err, "wampscope: --port 38474: transport raw1 listens on this port "
                         "already\n")
        status, out, err = self.run_router("--check-config", "--port", "38475", "-c", path)
        self.assertEqual(status, 2, err)
        self.assertEqual(err, "wampscope: --port 38475: the metrics listener "
                         "(wampscope.metrics) listens on this port already\n")
        status, out, err = self.run_router("--check-config", "--port", "38476", "-c", path)
        self.assertEqual(status, 0, err)

    def test_tls_files_next_to_the_config(self):
        self.write("node/tls/server.key", "not checked by --check-config\n")
        self.write("node/tls/server.crt", "not checked by --check-config\n")
        path = self.write("node/config.json", json.dumps(config(router={
            "realms": [R1],
            "transports": [ws_transport(endpoint={
                "type": "tcp", "port": 0, "interface": "127.0.0.1",
                "tls": {"key": "tls/server.key", "certificate": "tls/server.crt"}})],
        })))
        # Run from elsewhere: the names are relative to the file's directory, not to the cwd.
        status, out, err = self.run_router("--check-config", "-c", path, cwd="/")
        self.assertEqual(status, 0, err)
        self.assertIn("configuration OK", out)
        os.unlink(os.path.join(self.tmp.name, "node/tls/server.key"))
        status, _, err = self.run_router("--check-config", "-c", path, cwd="/")
        self.assertEqual(status, 2)
        self.assertIn("workers[0].transports[0].endpoint.tls.key: cannot read \"%s\"" %
                      os.path.join(self.tmp.name, "node/tls/server.key"), err)


if __name__ == "__main__":
    rt_harness.main()
