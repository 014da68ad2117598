"""Session, subscription and registration meta API through wampscope with python3-autobahn
(json and msgpack): results checked against the sessions, subscriptions and registrations the
clients actually made, meta events received by an autobahn subscriber, and kills seen by the
victim's onLeave (wamp.close.killed).

The router runs configs/test-e2e.json (realm1: role "anonymous" may do everything).
"""

import asyncio
import json
import os

from autobahn.wamp import auth
from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import RegisterOptions, SubscribeOptions

import rt_harness as h


class MetaBase:
    SER = None

    async def three(self):
        """Three joined sessions and their SessionDetails."""
        sessions = [await self.session(self.SER) for _ in range(3)]
        details = [s.joined.result() for s in sessions]
        return sessions, details

    async def test_session_count_list_get(self):
        sessions, details = await self.three()
        ids = {d.session for d in details}
        self.assertEqual(len(ids), 3)
        for s in sessions:
            self.assertEqual(await h.step(s.call("wamp.session.count")), 3)
            self.assertEqual(set(await h.step(s.call("wamp.session.list"))), ids)
        self.assertEqual(await h.step(sessions[0].call("wamp.session.count", ["anonymous"])), 3)
        self.assertEqual(await h.step(sessions[0].call("wamp.session.list", ["nobody"])), [])
        for d in details:
            got = await h.step(sessions[1].call("wamp.session.get", d.session))
            self.assertEqual(got["session"], d.session)
            self.assertEqual(got["authid"], d.authid)
            self.assertEqual(got["authrole"], d.authrole)
            self.assertEqual(got["authrole"], "anonymous")
            self.assertEqual(got["authmethod"], "anonymous")
            self.assertEqual(got["authprovider"], "static")
            self.assertEqual(got["realm"], "realm1")
            self.assertEqual(got["transport"]["type"], "websocket")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(sessions[0].call("wamp.session.get", 123456789))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_session")
        # A session in another realm is not visible from realm1.
        other = await self.session(self.SER, realm="realm2")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(sessions[0].call("wamp.session.get", other.joined.result().session))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_session")
        # One leaves: the others see it gone.
        await h.step(sessions[2].close())
        self.assertEqual(await h.step(sessions[0].call("wamp.session.count")), 2)
        self.assertEqual(set(await h.step(sessions[0].call("wamp.session.list"))),
                         {details[0].session, details[1].session})

    async def test_on_join_and_on_leave(self):
        watcher = await self.session(self.SER)
        joins, leaves = h.Events(), h.Events()
        await h.step(watcher.subscribe(joins, "wamp.session.on_join",
                                       options=SubscribeOptions(details=True)))
        await h.step(watcher.subscribe(leaves, "wamp.session.on_leave",
                                       options=SubscribeOptions(details=True)))
        other_ser = "msgpack" if self.SER == "json" else "json"
        a = await self.session(other_ser)
        ad = a.joined.result()
        events = await joins.wait_for(1)
        info = events[0][0][0]
        self.assertEqual(info["session"], ad.session)
        self.assertEqual(info["authid"], ad.authid)
        self.assertEqual(info["authrole"], "anonymous")
        self.assertEqual(info["authmethod"], "anonymous")
        self.assertEqual(info["authprovider"], "static")
        await h.step(a.close())
        events = await leaves.wait_for(1)
        self.assertEqual(events[0][0], [ad.session, ad.authid, "anonymous"])
        # A connection dropped without GOODBYE leaves too.
        b = await self.session(self.SER)
        bd = b.joined.result()
        await joins.wait_for(2)
        b.abort_transport()
        events = await leaves.wait_for(2)
        self.assertEqual(events[1][0][0], bd.session)
        self.assertEqual([e[0][0]["session"] for e in joins.events], [ad.session, bd.session])

    async def test_kill_variants(self):
        sessions, details = await self.three()
        killer = sessions[0]
        # kill: the victim's onLeave sees wamp.close.killed and the message.
        res = await h.step(killer.call("wamp.session.kill", details[1].session,
                                       message="maintenance"))
        self.assertIsNone(res)
        left = await h.step(asyncio.shield(sessions[1].left))
        self.assertEqual(left.reason, "wamp.close.killed")
        self.assertEqual(left.message, "maintenance")
        await h.step(asyncio.shield(sessions[1].lost))
        self.assertEqual(await h.step(killer.call("wamp.session.count")), 2)
        # The caller cannot kill itself.
        with self.assertRaises(ApplicationError) as cm:
            await h.step(killer.call("wamp.session.kill", details[0].session))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_session")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(killer.call("wamp.session.kill", details[2].session, reason="no uri!"))
        self.assertEqual(cm.exception.error, "wamp.error.invalid_uri")
        # kill_by_authid: the list of killed ids; a custom reason.
        killed = await h.step(killer.call("wamp.session.kill_by_authid", details[2].authid,
                                          reason="com.example.bye"))
        self.assertEqual(killed, [details[2].session])
        left = await h.step(asyncio.shield(sessions[2].left))
        self.assertEqual(left.reason, "com.example.bye")
        # kill_by_authrole and kill_all spare the caller; they count.
        more = [await self.session(self.SER) for _ in range(2)]
        self.assertEqual(await h.step(killer.call("wamp.session.kill_by_authrole", "anonymous")),
                         2)
        for s in more:
            self.assertEqual((await h.step(asyncio.shield(s.left))).reason, "wamp.close.killed")
        more = [await self.session(self.SER) for _ in range(2)]
        self.assertEqual(await h.step(killer.call("wamp.session.kill_all")), 2)
        for s in more:
            self.assertEqual((await h.step(asyncio.shield(s.left))).reason, "wamp.close.killed")
        self.assertEqual(await h.step(killer.call("wamp.session.list")), [details[0].session])

    async def test_subscription_meta(self):
        watcher = await self.session(self.SER)
        created, subscribed, unsubscribed, deleted = (h.Events() for _ in range(4))
        for handler, topic in ((created, "on_create"), (subscribed, "on_subscribe"),
                               (unsubscribed, "on_unsubscribe"), (deleted, "on_delete")):
            await h.step(watcher.subscribe(handler, "wamp.subscription." + topic,
                                           options=SubscribeOptions(details=True)))
        a, b = await self.session(self.SER), await self.session(self.SER)
        aid, bid = a.joined.result().session, b.joined.result().session
        topic = h.uri(self, "t")
        sub_a = await h.step(a.subscribe(lambda *x: None, topic))
        sub_b = await h.step(b.subscribe(lambda *x: None, topic))
        self.assertEqual(sub_a.id, sub_b.id)
        prefix = h.uri(self, "")
        sub_p = await h.step(b.subscribe(lambda *x: None, prefix,
                                         options=SubscribeOptions(match="prefix")))
        ev = await created.wait_for(2)
        self.assertEqual(ev[0][0][0], aid)
        self.assertEqual(ev[0][0][1]["id"], sub_a.id)
        self.assertEqual(ev[0][0][1]["uri"], topic)
        self.assertEqual(ev[0][0][1]["match"], "exact")
        self.assertEqual(ev[1][0][1]["match"], "prefix")
        ev = await subscribed.wait_for(3)
        self.assertEqual([e[0] for e in ev], [[aid, sub_a.id], [bid, sub_a.id], [bid, sub_p.id]])

        lists = await h.step(watcher.call("wamp.subscription.list"))
        self.assertEqual(lists["exact"], [sub_a.id])
        self.assertEqual(lists["prefix"], [sub_p.id])
        self.assertEqual(lists["wildcard"], [])
        self.assertEqual(await h.step(watcher.call("wamp.subscription.lookup", topic)), sub_a.id)
        self.assertEqual(await h.step(watcher.call("wamp.subscription.lookup", prefix,
                                                   {"match": "prefix"})), sub_p.id)
        self.assertIsNone(await h.step(watcher.call("wamp.subscription.lookup", prefix)))
        self.assertEqual(set(await h.step(watcher.call("wamp.subscription.match", topic))),
                         {sub_a.id, sub_p.id})
        self.assertIsNone(await h.step(watcher.call("wamp.subscription.match", "org.none")))
        got = await h.step(watcher.call("wamp.subscription.get", sub_a.id))
        self.assertEqual((got["id"], got["uri"], got["match"]), (sub_a.id, topic, "exact"))
        self.assertRegex(got["created"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(set(await h.step(watcher.call("wamp.subscription.list_subscribers",
                                                       sub_a.id))), {aid, bid})
        self.assertEqual(await h.step(watcher.call("wamp.subscription.count_subscribers",
                                                   sub_p.id)), 1)
        with self.assertRaises(ApplicationError) as cm:
            await h.step(watcher.call("wamp.subscription.get", 987654321))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_subscription")

        await h.step(sub_a.unsubscribe())
        ev = await unsubscribed.wait_for(1)
        self.assertEqual(ev[0][0], [aid, sub_a.id])
        await h.step(b.close())  # b's two subscriptions go, each then deleted
        ev = await deleted.wait_for(2)
        self.assertEqual({tuple(e[0]) for e in ev}, {(bid, sub_a.id), (bid, sub_p.id)})
        self.assertEqual(len(unsubscribed.events), 3)
        lists = await h.step(watcher.call("wamp.subscription.list"))
        self.assertEqual(lists, {"exact": [], "prefix": [], "wildcard": []})

    async def test_registration_meta(self):
        watcher = await self.session(self.SER)
        created, registered, unregistered, deleted = (h.Events() for _ in range(4))
        for handler, topic in ((created, "on_create"), (registered, "on_register"),
                               (unregistered, "on_unregister"), (deleted, "on_delete")):
            await h.step(watcher.subscribe(handler, "wamp.registration." + topic,
                                           options=SubscribeOptions(details=True)))
        a, b = await self.session(self.SER), await self.session(self.SER)
        aid, bid = a.joined.result().session, b.joined.result().session
        proc = h.uri(self, "p")
        rr = RegisterOptions(invoke="roundrobin")
        reg_a = await h.step(a.register(lambda: "a", proc, options=rr))
        reg_b = await h.step(b.register(lambda: "b", proc, options=rr))
        self.assertEqual(reg_a.id, reg_b.id)
        wild = "com.wampscope.e2e.registration_meta..x"
        reg_w = await h.step(b.register(lambda: "w", wild,
                                        options=RegisterOptions(match="wildcard")))
        ev = await created.wait_for(2)
        self.assertEqual(ev[0][0][0], aid)
        self.assertEqual(ev[0][0][1]["uri"], proc)
        self.assertEqual(ev[0][0][1]["invoke"], "roundrobin")
        ev = await registered.wait_for(3)
        self.assertEqual([e[0] for e in ev], [[aid, reg_a.id], [bid, reg_a.id], [bid, reg_w.id]])

        lists = await h.step(watcher.call("wamp.registration.list"))
        self.assertEqual(lists, {"exact": [reg_a.id], "prefix": [], "wildcard": [reg_w.id]})
        self.assertEqual(await h.step(watcher.call("wamp.registration.lookup", proc)), reg_a.id)
        self.assertIsNone(await h.step(watcher.call("wamp.registration.lookup", "org.none")))
        self.assertEqual(await h.step(watcher.call("wamp.registration.match", proc)), reg_a.id)
        got = await h.step(watcher.call("wamp.registration.get", reg_a.id))
        self.assertEqual((got["id"], got["uri"], got["match"], got["invoke"]),
                         (reg_a.id, proc, "exact", "roundrobin"))
        self.assertEqual(await h.step(watcher.call("wamp.registration.list_callees", reg_a.id)),
                         [aid, bid])
        self.assertEqual(await h.step(watcher.call("wamp.registration.count_callees", reg_a.id)),
                         2)
        with self.assertRaises(ApplicationError) as cm:
            await h.step(watcher.call("wamp.registration.list_callees", 987654321))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_registration")

        await h.step(reg_a.unregister())
        ev = await unregistered.wait_for(1)
        self.assertEqual(ev[0][0], [aid, reg_a.id])
        b.abort_transport()  # lost: its registrations go, each then deleted
        ev = await deleted.wait_for(2)
        self.assertEqual({tuple(e[0]) for e in ev}, {(bid, reg_a.id), (bid, reg_w.id)})
        self.assertEqual(await h.step(watcher.call("wamp.registration.list")),
                         {"exact": [], "prefix": [], "wildcard": []})


    async def test_meta_events_traced_with_their_action(self):
        """Through the management API: the on_subscribe / on_leave EVENTs carry the correlation
        of the SUBSCRIBE / GOODBYE that caused them, after the reply, and are the last."""
        with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
                  encoding="utf-8") as f:
            cfg = json.load(f)
        worker = cfg["workers"][0]
        node, wid = cfg.get("controller", {}).get("id"), worker.get("id", "router1")
        mrealm = worker.get("wampscope", {}).get("management", {}).get("realm", "mgmt")
        mgmt = await self.session("json", realm=mrealm)
        api = "crossbarfabriccenter.remote.tracing."
        watcher = await self.session(self.SER)
        subs, leaves = h.Events(), h.Events()
        await h.step(watcher.subscribe(subs, "wamp.subscription.on_subscribe",
                                       options=SubscribeOptions(details=True)))
        await h.step(watcher.subscribe(leaves, "wamp.session.on_leave",
                                       options=SubscribeOptions(details=True)))
        await h.step(mgmt.call(api + "start_trace", node, wid, "meta",
                               {"realms": ["realm1"]}))
        a = await self.session(self.SER)
        aid = a.joined.result().session
        topic = h.uri(self, "t")
        await h.step(a.subscribe(lambda *x: None, topic))
        await subs.wait_for(1)
        await h.step(a.close())
        await leaves.wait_for(1)
        await h.step(mgmt.call(api + "stop_trace", node, wid, "meta"))
        recs = await h.step(mgmt.call(api + "get_trace_data", node, wid, "meta", 0, None, 1000))
        by_corr = {}
        for r in recs:
            if r.get("correlation"):
                by_corr.setdefault(r["correlation"], []).append(r)

        def action(first_type):
            found = [v for v in by_corr.values()
                     if v[0]["msg_type"] == first_type and v[0]["session_id"] == aid]
            self.assertEqual(len(found), 1, first_type)
            return [(r["direction"], r["msg_type"], r["session_id"], r["correlation_is_last"])
                    for r in found[0]]

        wid_ = watcher.joined.result().session
        self.assertEqual(action("Subscribe"), [("rx", "Subscribe", aid, False),
                                               ("tx", "Subscribed", aid, False),
                                               ("tx", "Event", wid_, True)])
        self.assertEqual(action("Goodbye"), [("rx", "Goodbye", aid, False),
                                             ("tx", "Goodbye", aid, False),
                                             ("tx", "Event", wid_, True)])
        sub_rec = [r for v in by_corr.values() for r in v if v[0]["msg_type"] == "Subscribe"]
        self.assertTrue(all(r["uri"] == topic for r in sub_rec))


class MetaJson(MetaBase, h.RouterTestCase):
    SER = "json"


class MetaMsgpack(MetaBase, h.RouterTestCase):
    SER = "msgpack"


def credentials(authmethod, authid, secret):
    """An autobahn session class joining with a ticket or a (plain) WAMP-CRA secret."""

    class Authenticated(h.Client):
        def onConnect(self):
            self.join(self.config.realm, authmethods=[authmethod], authid=authid)

        def onChallenge(self, challenge):
            if challenge.method == "ticket":
                return secret
            return auth.compute_wcs(secret.encode(),
                                    challenge.extra["challenge"].encode()).decode()

    return Authenticated


class MetaAuthenticated(h.RouterTestCase):
    """configs/test-e2e-auth.json: authenticated sessions as the meta API describes them."""

    async def asyncSetUp(self):
        await h.AsyncTestCase.asyncSetUp(self)
        os.environ["WAMPSCOPE_E2E_TICKET"] = "joe-ticket-from-env"
        os.environ["WAMPSCOPE_E2E_MGMT_TICKET"] = "mgmt-ticket-from-env"
        self.router = h.RouterProc("configs/test-e2e-auth.json").start()
        self._sessions = []

    async def test_get_and_kill_by_authid_of_authenticated_sessions(self):
        for ser in h.SERIALIZERS:
            joe = await self.session(ser, cls=credentials("ticket", "joe", "joe-ticket-from-env"))
            ann = await self.session(ser, cls=credentials("wampcra", "ann", "ann-secret"))
            got = await h.step(joe.call("wamp.session.get", ann.joined.result().session))
            self.assertEqual((got["authid"], got["authrole"], got["authmethod"]),
                             ("ann", "user", "wampcra"))
            got = await h.step(ann.call("wamp.session.get", joe.joined.result().session))
            self.assertEqual((got["authid"], got["authmethod"]), ("joe", "ticket"))
            self.assertEqual(await h.step(joe.call("wamp.session.kill_by_authid", "ann")),
                             [ann.joined.result().session])
            self.assertEqual((await h.step(asyncio.shield(ann.left))).reason,
                             "wamp.close.killed")
            self.assertEqual(await h.step(joe.call("wamp.session.count", ["user"])), 1)
            await h.step(joe.close())


if __name__ == "__main__":
    h.main()
