"""Packaging end to end: `cmake --install` of the test build into a temporary root (DESTDIR), and
the Debian package CPack makes from the same build, extracted into another root.

Checks: every file lands where configs/dist/packaging.cmake says; the installed router accepts the
installed example config (--check-config) and really runs it with the systemd unit's own
command line (ExecStart, ports overridden to an ephemeral one): a client joins, the installed
wampscope-ctl reads the worker's stats, SIGTERM ends it with status 0; the unit carries the
hardening and points at the config, whose data_dir is the unit's state directory; the man pages
render without warnings and name every option of the binaries' --help; the bash completion
sources and completes every command and option of wampscope-ctl's --help; systemd-analyze verify
accepts the unit; the package's control data (dependencies from dpkg-shlibdeps, conffile,
maintainer scripts) and contents, and its router starts from the extracted root.

What cannot be checked here is reported as a skipped test with the reason, never as a pass:
systemd-analyze, groff, man, cpack or dpkg-deb missing. Running the router under systemd itself
needs systemd as PID 1, which this test never assumes.
"""

import asyncio
import configparser
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

import rt_harness as h

PROC = "crossbarfabriccenter."


def build_dir():
    """The CMake build directory of the binaries under test (RT_ROUTER_BIN is
    <build>/router/wampscope)."""
    b = os.environ.get("RT_ROUTER_BIN")
    if not b:
        raise AssertionError("RT_ROUTER_BIN must be set (ctest sets it)")
    d = os.path.dirname(os.path.dirname(os.path.abspath(b)))
    if not os.path.exists(os.path.join(d, "CMakeCache.txt")):
        raise AssertionError("no CMakeCache.txt in %s" % d)
    return d


def cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    raise AssertionError("%s not in the CMake cache" % key)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def read_unit(path):
    """A systemd unit as {section: {key: [values]}} (keys repeat; comments dropped)."""
    unit, section = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("["):
                section = unit.setdefault(line.strip("[]"), {})
                continue
            key, _, value = line.partition("=")
            section.setdefault(key, []).append(value)
    return unit


def help_options(text):
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text)))


class Installed(unittest.TestCase):
    """One `DESTDIR=<tmp> cmake --install <build>` for the whole class."""

    @classmethod
    def setUpClass(cls):
        cls.build = build_dir()
        cls.prefix = cache_value(cls.build, "CMAKE_INSTALL_PREFIX")
        cls.tmp = tempfile.mkdtemp(prefix="wampscope-pkg-")
        cls.root = os.path.join(cls.tmp, "root")
        env = dict(os.environ, DESTDIR=cls.root)
        r = run(["cmake", "--install", cls.build], env=env)
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise AssertionError("cmake --install failed\n%s%s" % (r.stdout, r.stderr))
        cls.install_log = r.stdout
        cls.unit_path = cls.at("lib/systemd/system/wampscope.service")
        cls.unit = read_unit(cls.unit_path)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("RT_E2E_KEEP"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def at(cls, rel):
        """An installed file: rel under the prefix, or an absolute path, inside DESTDIR."""
        path = rel if rel.startswith("/") else os.path.join(cls.prefix, rel)
        return cls.root + path

    def exec_start(self):
        """The unit's ExecStart as argv, its paths moved into DESTDIR."""
        argv = shlex.split(self.unit["Service"]["ExecStart"][0])
        return [self.root + a if a.startswith("/") else a for a in argv]

    def config_path(self):
        argv = self.exec_start()
        return argv[argv.index("-c") + 1]

    def test_files_in_place(self):
        for rel in ("bin/wampscope", "bin/wampscope-ctl"):
            self.assertTrue(os.access(self.at(rel), os.X_OK), rel)
        for rel in ("share/man/man8/wampscope.8", "share/man/man1/wampscope-ctl.1",
                    "share/bash-completion/completions/wampscope-ctl",
                    "lib/systemd/system/wampscope.service",
                    "share/doc/wampscope/examples/low-port.conf"):
            self.assertTrue(os.path.isfile(self.at(rel)), rel)
        # The example config sits in <sysconfdir>/wampscope (/etc/wampscope with prefix /usr),
        # and the unit runs exactly that file.
        sysconf = "/etc" if self.prefix == "/usr" else os.path.join(self.prefix, "etc")
        self.assertEqual(self.config_path(), self.at(sysconf + "/wampscope/config.json"))
        self.assertTrue(os.path.isfile(self.config_path()))

    def test_unit_hardening_and_data_dir(self):
        s = self.unit["Service"]
        for key, value in (("DynamicUser", "yes"), ("ProtectSystem", "strict"),
                           ("StateDirectory", "wampscope"), ("NoNewPrivileges", "yes"),
                           ("PrivateTmp", "yes"), ("ProtectHome", "yes"),
                           ("SystemCallFilter", "@system-service"),
                           ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
                           ("CapabilityBoundingSet", ""), ("AmbientCapabilities", "")):
            self.assertEqual(s.get(key), [value], key)
        # Persisted traces go to the state directory: the config's data_dir is it.
        with open(self.config_path(), encoding="utf-8") as f:
            cfg = json.load(f)
        data_dir = cfg["workers"][0]["wampscope"]["tracing"]["data_dir"]
        self.assertEqual(data_dir, "/var/lib/" + s["StateDirectory"][0])
        self.assertEqual(s["WorkingDirectory"], [data_dir])
        # The config is checked before every start.
        pre = shlex.split(s["ExecStartPre"][0])
        self.assertEqual(pre, shlex.split(s["ExecStart"][0]) + ["--check-config"])
        # Ports below 1024: the shipped drop-in grants exactly CAP_NET_BIND_SERVICE.
        drop = read_unit(self.at("share/doc/wampscope/examples/low-port.conf"))["Service"]
        self.assertEqual(drop["AmbientCapabilities"], ["CAP_NET_BIND_SERVICE"])
        self.assertEqual(drop["CapabilityBoundingSet"], ["CAP_NET_BIND_SERVICE"])

    def test_systemd_analyze_verify(self):
        sa = shutil.which("systemd-analyze")
        if not sa:
            self.skipTest("NOT CHECKED: systemd-analyze is not installed (Debian package "
                          "systemd); the unit was not verified")
        # verify wants ExecStart's binary at its real path: a copy of the unit pointing into
        # DESTDIR (the unit's other contents unchanged).
        with open(self.unit_path, encoding="utf-8") as f:
            text = f.read()
        bindir = os.path.join(self.prefix, "bin") + "/"
        self.assertIn(bindir + "wampscope ", text)
        unit_dir = os.path.join(self.tmp, "unit")
        os.makedirs(unit_dir, exist_ok=True)
        copy = os.path.join(unit_dir, "wampscope.service")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text.replace(bindir, self.root + bindir))
        r = run([sa, "verify", "--man=no", copy])
        # A bad value is only a warning (exit status 0): any output about the unit fails.
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("wampscope.service", r.stderr + r.stdout)

    def test_man_pages(self):
        if not shutil.which("groff") or not shutil.which("man"):
            self.skipTest("NOT CHECKED: groff or man is not installed; the man pages were not "
                          "rendered")
        env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="100")
        for page, binary in (("share/man/man8/wampscope.8", "bin/wampscope"),
                             ("share/man/man1/wampscope-ctl.1", "bin/wampscope-ctl")):
            path = self.at(page)
            r = run(["groff", "-man", "-Tutf8", "-ww", "-z", path], env=env)
            self.assertEqual((r.returncode, r.stderr), (0, ""), page)
            r = run(["man", "-l", path], env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "", page)
            text = r.stdout
            self.assertIn("NAME", text)
            self.assertIn("EXIT STATUS", text)
            version = run([self.at(binary), "--version"]).stdout.split()[1]
            self.assertIn("wampscope " + version, text)  # the footer names this version
            # Accurate to --help: every option and (the CLI) every command is documented.
            helptext = run([self.at(binary), "--help"]).stdout
            for opt in help_options(helptext):
                self.assertIn(opt, text, "%s: %s from --help is not documented" % (page, opt))
            if binary.endswith("-ctl"):
                for cmd in re.findall(r"^  ([a-z]+) ", helptext, re.M):
                    self.assertRegex(text, r"(?m)^ {7}%s\b" % cmd, cmd)
                    cmd_help = run([self.at(binary), cmd, "--help"]).stdout
                    for opt in help_options(cmd_help):
                        self.assertIn(opt, text, "%s %s is not documented" % (cmd, opt))

    def complete(self, *words):
        """What the completion offers for the last of words (bash, sourced script)."""
        script = self.at("share/bash-completion/completions/wampscope-ctl")
        words = ["wampscope-ctl"] + list(words)
        prog = ("source %s || exit 9\n"
                "COMP_WORDS=(%s)\nCOMP_CWORD=%d\n_wampscope_ctl\n"
                "printf '%%s\\n' \"${COMPREPLY[@]}\"\n"
                % (shlex.quote(script), " ".join(shlex.quote(w) for w in words), len(words) - 1))
        r = run(["bash", "--norc", "--noprofile", "-c", prog])
        self.assertEqual((r.returncode, r.stderr), (0, ""), prog)
        return set(r.stdout.split())

    def test_bash_completion(self):
        script = self.at("share/bash-completion/completions/wampscope-ctl")
        r = run(["bash", "--norc", "--noprofile", "-c",
                 "source %s && complete -p wampscope-ctl" % shlex.quote(script)])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("-F _wampscope_ctl", r.stdout)
        ctl = self.at("bin/wampscope-ctl")
        helptext = run([ctl, "--help"]).stdout
        commands = re.findall(r"^  ([a-z]+) ", helptext, re.M)
        self.assertIn("stats", commands)
        self.assertEqual(self.complete(""), set(commands))
        self.assertEqual(self.complete("--realm", "mgmt", "da"), {"data"})
        usage = helptext.split("Commands:")[0] + helptext.split("Global options:")[1]
        global_opts = set(help_options(usage))
        self.assertTrue(global_opts <= self.complete("--"), global_opts - self.complete("--"))
        for cmd in commands:
            if cmd == "help":
                continue
            # A command's own options (global ones go before the command).
            opts = set(help_options(run([ctl, cmd, "--help"]).stdout)) - global_opts
            offered = self.complete(cmd, "x", "--")
            self.assertTrue(opts <= offered, (cmd, opts - offered))
        self.assertEqual(self.complete("data", "t1", "--dir", ""), {"rx", "tx"})
        self.assertEqual(self.complete("start", "--match", "p"), {"prefix"})
        self.assertIn("Error", self.complete("tail", "t1", "--type", "E"))

    def test_installed_router_runs_the_installed_config(self):
        argv = self.exec_start()
        r = run(argv + ["--check-config"])
        self.assertEqual(r.returncode, 0, r.stderr)
        asyncio.run(self.run_router(argv))

    async def run_router(self, argv):
        rp = h.RouterProc()
        rp.bin = argv[0]
        rp.config = argv[argv.index("-c") + 1]
        self.assertEqual(argv, [rp.bin, "-c", rp.config])  # nothing else to keep
        rp.start()
        try:
            s = await h.open_session(rp, "realm1", "json")
            s.publish("com.example.hello", "hi")
            r = run([self.at("bin/wampscope-ctl"), "--url", rp.url, "--no-color", "stats"])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout, r"(?m)^sessions +[12]$")
            self.assertRegex(r.stdout, r"(?m)^sessions_opened +[12]$")
            await s.close()
        finally:
            rp.stop()


class DebianPackage(unittest.TestCase):
    """The package CPack builds from the test build (as `make deb` does from a Release build
    with prefix /usr), extracted with dpkg-deb into a temporary root."""

    def test_package(self):
        for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps"):
            if not shutil.which(tool):
                self.skipTest("NOT CHECKED: %s is not installed; no package was built" % tool)
        build = build_dir()
        prefix = cache_value(build, "CMAKE_INSTALL_PREFIX")
        tmp = tempfile.mkdtemp(prefix="wampscope-deb-")
        try:
            r = run(["cpack", "-G", "DEB", "-B", tmp, "--config",
                     os.path.join(build, "CPackConfig.cmake")])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            debs = glob.glob(os.path.join(tmp, "wampscope_*.deb"))
            self.assertEqual(len(debs), 1, os.listdir(tmp))
            fields = run(["dpkg-deb", "-f", debs[0]]).stdout
            self.assertRegex(fields, r"(?m)^Package: wampscope$")
            depends = re.search(r"(?m)^Depends: (.*)$", fields).group(1)
            # (msgpack-c may be inlined entirely in an optimised build: no libmsgpackc2 then.)
            for lib in ("libwebsockets17", "libjansson4", "libsodium23", "libc6"):
                self.assertIn(lib, depends)
            sysconf = "/etc" if prefix == "/usr" else prefix + "/etc"
            ctrl = os.path.join(tmp, "control")
            self.assertEqual(run(["dpkg-deb", "-e", debs[0], ctrl]).returncode, 0)
            with open(os.path.join(ctrl, "conffiles"), encoding="utf-8") as f:
                self.assertEqual(f.read().split(), [sysconf + "/wampscope/config.json"])
            for script in ("postinst", "prerm", "postrm"):
                path = os.path.join(ctrl, script)
                self.assertTrue(os.access(path, os.X_OK), script)
                self.assertEqual(run(["sh", "-n", path]).returncode, 0, script)
            root = os.path.join(tmp, "root")
            self.assertEqual(run(["dpkg-deb", "-x", debs[0], root]).returncode, 0)
            for rel in ("bin/wampscope", "bin/wampscope-ctl", "share/man/man8/wampscope.8",
                        "share/man/man1/wampscope-ctl.1", "lib/systemd/system/wampscope.service",
                        "share/bash-completion/completions/wampscope-ctl"):
                self.assertTrue(os.path.isfile(os.path.join(root + prefix, rel)), rel)
            # The packaged router accepts the packaged config.
            r = run([root + prefix + "/bin/wampscope", "-c",
                     root + sysconf + "/wampscope/config.json", "--check-config"])
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            if not os.environ.get("RT_E2E_KEEP"):
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    h.main()
