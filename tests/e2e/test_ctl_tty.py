"""wampscope-ctl on a terminal: the real router and the real CLI (RT_CTL_BIN) with stdout on a
pseudo-terminal of 80 and 200 columns, with and without colour.

Covers: tables fitted to the terminal's width (nothing wider, long messages cut with "...",
REALM/CORR/SESSION left out at 80 columns), --wide, colour on a terminal (rx cyan, tx green,
Error rows red with their error URI, failed actions bold red, errors on stderr red) and none with
NO_COLOR, --no-color or a pipe; `stats` and `stats --watch` (refreshes with rates, Ctrl-C ends it
with status 0); the data/tail filters --type, --session, --uri, --dir; the shortest floats in
--json; the hint for a management call on a non-management realm.
"""

import asyncio
import fcntl
import json
import os
import pty
import re
import signal
import struct
import termios

import rt_harness as h

EX_OK, EX_REFUSED = 0, 6
ESC = "\x1b"
SGR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def visible(line):
    return len(SGR.sub("", line))


class TtyTestCase(h.RouterTestCase):
    async def on_tty(self, *args, columns=80, env=None, stop_after=None):
        """Runs wampscope-ctl --url router args... with stdout on a pty of the given width and
        stderr on a pipe. stop_after: seconds after which SIGINT is sent. Returns (rc, out,
        err), out with the terminal's CRLF as LF."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        full_env = dict(os.environ)
        for k in ("NO_COLOR", "COLUMNS", "WAMPSCOPE_URL"):
            full_env.pop(k, None)
        full_env.update(env or {})
        argv = [h.ctl_bin(), "--url", self.router.url] + list(args)
        proc = await asyncio.create_subprocess_exec(*argv, stdout=slave,
                                                    stderr=asyncio.subprocess.PIPE, env=full_env)
        os.close(slave)

        try:
            reader = asyncio.get_running_loop().run_in_executor(None, h.read_pty, master)
            if stop_after is not None:
                await asyncio.sleep(stop_after)
                proc.send_signal(signal.SIGINT)
            out = await asyncio.wait_for(reader, 30)
            err = await asyncio.wait_for(proc.stderr.read(), 30)
            rc = await asyncio.wait_for(proc.wait(), 30)
        finally:
            os.close(master)
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return rc, out.decode().replace("\r\n", "\n"), err.decode()

    async def piped(self, *args, env=None):
        full_env = dict(os.environ)
        full_env.pop("NO_COLOR", None)
        full_env.update(env or {})
        proc = await asyncio.create_subprocess_exec(h.ctl_bin(), "--url", self.router.url, *args,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, env=full_env)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode, out.decode(), err.decode()

    async def traffic(self, prefix):
        """A trace "t" of realm1 with an RPC whose argument is long, an event, and a CALL to a
        procedure nobody registered (ERROR wamp.error.no_such_procedure)."""
        from autobahn.wamp.exception import ApplicationError
        rc, _, err = await self.piped("start", "t", "--realm", "realm1")
        self.assertEqual(rc, EX_OK, err)
        callee = await self.session("json")
        caller = await self.session("msgpack")
        await h.step(callee.register(lambda s: len(s), prefix + "len"))
        self.assertEqual(await h.step(caller.call(prefix + "len", "x" * 300)), 300)
        from autobahn.wamp.types import PublishOptions
        await h.step(caller.publish(prefix + "on", 0.1, options=PublishOptions(acknowledge=True)))
        with self.assertRaises(ApplicationError):
            await h.step(caller.call(prefix + "nobody"))
        return callee, caller


class TestTables(TtyTestCase):
    async def test_data_at_80_and_200_columns(self):
        prefix = h.uri(self, "")
        _, caller = await self.traffic(prefix)
        seen_cut = False
        for columns in (80, 200):
            rc, out, err = await self.on_tty("data", "t", columns=columns)
            self.assertEqual(rc, EX_OK, err)
            lines = out.splitlines()
            self.assertGreaterEqual(len(lines), 8, out)
            widths = [visible(x) for x in lines]
            self.assertLessEqual(max(widths), columns, out)
            header = SGR.sub("", lines[0]).split()
            if columns == 80:
                self.assertEqual(header, ["SEQ", "TIME", "DIR", "TYPE", "URI", "MSG"])
            else:
                self.assertEqual(header, ["SEQ", "TIME", "DIR", "TYPE", "REALM", "SESSION",
                                          "URI", "CORR", "MSG"])
                self.assertIn(str(caller._session_id), out)
            # The first CALL (its 300 x's) fills the line exactly and ends with "...".
            call = [x for x in lines if " Call " in SGR.sub("", x)][0]
            self.assertEqual(visible(call), columns)
            self.assertTrue(SGR.sub("", call).endswith("..."), call)
            seen_cut = True
            # Colour: rx cyan, tx green, the error red with its URI first in MSG; bold header.
            self.assertIn(ESC + "[1mSEQ" + ESC + "[0m", lines[0])
            self.assertIn(ESC + "[36mrx" + ESC + "[0m", out)
            self.assertIn(ESC + "[32mtx" + ESC + "[0m", out)
            self.assertIn(ESC + "[31mError" + ESC + "[0m", out)
            error_row = [x for x in lines if "Error" in x][0]
            self.assertIn(ESC + "[31mwamp.error.no_suc", error_row)
            # Without colour: the same text, no escape sequence at all.
            for env, extra in (({"NO_COLOR": "1"}, []), ({}, ["--no-color"])):
                rc, plain, err = await self.on_tty("data", "t", *extra, columns=columns,
                                                   env=env)
                self.assertEqual(rc, EX_OK, err)
                self.assertNotIn(ESC, plain)
                self.assertEqual(plain, SGR.sub("", out))
        self.assertTrue(seen_cut)
        # --wide: nothing cut, the whole 300 x's, wider than the terminal.
        rc, out, err = await self.on_tty("data", "t", "--wide", columns=80)
        self.assertEqual(rc, EX_OK, err)
        self.assertIn("x" * 300, out)
        self.assertGreater(max(visible(x) for x in out.splitlines()), 300)
        # A pipe: no colour, the old fixed layout (MSG cut at 60).
        rc, out, err = await self.piped("data", "t")
        self.assertEqual(rc, EX_OK, err)
        self.assertNotIn(ESC, out)
        self.assertIn("REALM", out.splitlines()[0])

    async def test_traces_table_and_errors(self):
        rc, _, err = await self.piped("start", "a-trace-with-a-rather-long-name-indeed")
        self.assertEqual(rc, EX_OK, err)
        for columns in (80, 200):
            rc, out, err = await self.on_tty("traces", columns=columns)
            self.assertEqual(rc, EX_OK, err)
            self.assertLessEqual(max(visible(x) for x in out.splitlines()), columns, out)
            self.assertIn(ESC + "[32mrunning" + ESC + "[0m", out)  # running green
            if columns == 80:
                self.assertIn("a-trace-wi...", out)  # ID cut to fit
            else:
                self.assertIn("a-trace-with-a-rather-long-name-indeed", out)
        # stderr on a terminal: the error line in red; with NO_COLOR plain.
        master, slave = pty.openpty()
        try:
            for env, red in (({}, True), ({"NO_COLOR": "1"}, False)):
                full_env = dict(os.environ)
                full_env.pop("NO_COLOR", None)
                full_env.update(env)
                proc = await asyncio.create_subprocess_exec(
                        h.ctl_bin(), "--url", self.router.url, "show", "nope",
                        stdout=asyncio.subprocess.PIPE, stderr=slave, env=full_env)
                await proc.wait()
                err = os.read(master, 65536).decode()
                self.assertEqual(proc.returncode, 5)
                self.assertEqual(err.startswith(ESC + "[31mwampscope-ctl: "), red, err)
                self.assertIn('no trace "nope"', err)
        finally:
            os.close(master)
            os.close(slave)

    async def test_failed_action_is_red(self):
        prefix = h.uri(self, "")
        rc, _, err = await self.piped("start", "acts", "--trace-level", "action", "--realm",
                                      "realm1")
        self.assertEqual(rc, EX_OK, err)
        from autobahn.wamp.exception import ApplicationError
        caller = await self.session("json")
        with self.assertRaises(ApplicationError):
            await h.step(caller.call(prefix + "nobody"))
        for columns, shown in ((80, "wamp.error.no_suc..."), (200, "wamp.error.no_such_procedure")):
            rc, out, err = await self.on_tty("data", "acts", columns=columns)
            self.assertEqual(rc, EX_OK, err)
            self.assertLessEqual(max(visible(x) for x in out.splitlines()), columns, out)
            rows = [x for x in out.splitlines() if " call " in SGR.sub("", x)]
            self.assertEqual(len(rows), 1, out)
            row = rows[0]
            self.assertIn(ESC + "[1;31mNO" + ESC + "[0m", row)
            self.assertIn(ESC + "[31mcall" + ESC + "[0m", row)
            # The error URI that ended the action, last and red (cut to fit at 80 columns).
            self.assertTrue(row.endswith(ESC + "[31m" + shown + ESC + "[0m"), row)


class TestStatsFiltersFloats(TtyTestCase):
    async def test_stats_and_watch(self):
        s = await self.session("json")
        for columns in (80, 200):
            rc, out, err = await self.on_tty("stats", columns=columns)
            self.assertEqual(rc, EX_OK, err)
            plain = SGR.sub("", out)
            self.assertRegex(plain, r"^worker router1 on node \S+, pid \d+, up ")
            self.assertRegex(plain, r"(?m)^NOW +VALUE$")
            self.assertRegex(plain, r"(?m)^SINCE START +TOTAL$")
            self.assertRegex(plain, r"(?m)^sessions +[1-9]\d*$")
            self.assertRegex(plain, r"(?m)^messages_rx +[1-9]\d*$")
            self.assertLessEqual(max(visible(x) for x in out.splitlines()), columns)
        rc, out, err = await self.piped("stats", "--json")
        self.assertEqual(rc, EX_OK, err)
        self.assertGreaterEqual(json.loads(out)["stats"]["sessions"], 1)
        # --watch 1: the screen is redrawn each second with rates; Ctrl-C ends it (status 0).
        pub = asyncio.ensure_future(self.publish_for(s, 3.2))
        rc, out, err = await self.on_tty("stats", "--watch", "1", columns=80, stop_after=3.2)
        await pub
        self.assertEqual(rc, EX_OK, err)
        self.assertEqual(err, "")
        self.assertGreaterEqual(out.count(ESC + "[H" + ESC + "[2J"), 3, out)
        self.assertIn("RATE/s", out)
        rates = [float(m) for m in re.findall(r"(?m)^messages_rx +\d+ +\S*?([\d.]+)", out)]
        self.assertTrue(any(r > 0 for r in rates), out)

    async def publish_for(self, s, seconds):
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while loop.time() < end:
            s.publish("com.example.tick", 1)
            await asyncio.sleep(0.05)

    async def test_filters(self):
        prefix = h.uri(self, "")
        callee, caller = await self.traffic(prefix)
        rc, out, err = await self.piped("data", "t", "--json")
        self.assertEqual(rc, EX_OK, err)
        recs = json.loads(out)

        async def data(*args):
            rc, out, err = await self.piped("data", "t", "--json", *args)
            self.assertEqual(rc, EX_OK, err)
            return [r["seq"] for r in json.loads(out)]

        def want(pred):
            return [r["seq"] for r in recs if pred(r)]

        self.assertEqual(await data("--type", "call"), want(lambda r: r["msg_type"] == "Call"))
        self.assertEqual(await data("--type", "Call,Error"),
                         want(lambda r: r["msg_type"] in ("Call", "Error")))
        self.assertEqual(await data("--dir", "tx"), want(lambda r: r["direction"] == "tx"))
        sid = callee._session_id
        self.assertEqual(await data("--session", str(sid)),
                         want(lambda r: r["session_id"] == sid))
        self.assertEqual(await data("--uri", prefix + "len"),
                         want(lambda r: r["uri"] == prefix + "len"))
        self.assertEqual(await data("--uri", prefix + "*", "--dir", "rx", "--type", "Call"),
                         want(lambda r: (r["uri"] or "").startswith(prefix)
                              and r["direction"] == "rx" and r["msg_type"] == "Call"))
        self.assertEqual(await data("--type", "Call", "--limit", "1"),
                         want(lambda r: r["msg_type"] == "Call")[:1])
        self.assertTrue(want(lambda r: r["msg_type"] == "Call"))
    async def test_tail_filter_and_floats(self):
        prefix = h.uri(self, "")
        await self.traffic(prefix)
        rc, _, err = await self.piped("stop", "t")
        self.assertEqual(rc, EX_OK, err)
        rc, out, err = await self.piped("tail", "t", "-n", "100", "--json", "--type", "Error")
        self.assertEqual(rc, EX_OK, err)
        lines = [json.loads(x) for x in out.splitlines()]
        self.assertEqual([r["msg_type"] for r in lines], ["Error"])
        self.assertEqual(lines[0]["msg"][4], "wamp.error.no_such_procedure")
        # Floats as short as they round-trip: Python's repr is the shortest such text.
        rc, out, err = await self.piped("data", "t", "--json")
        self.assertEqual(rc, EX_OK, err)
        reals = re.findall(r'"(?:pc|ts)": (-?[0-9.e+-]+)', out)
        self.assertGreater(len(reals), 4)
        for text in reals:
            self.assertEqual(text, repr(float(text)))

    async def test_hint_on_a_non_management_realm(self):
        rc, out, err = await self.piped("--realm", "realm1", "nodes")
        self.assertEqual(rc, EX_REFUSED)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertIn("wamp.error.no_such_procedure", lines[0])
        self.assertIn('(is --realm the management realm? it is "realm1")', lines[0])


if __name__ == "__main__":
    h.main()
