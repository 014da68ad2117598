/* fake_transport.c */
#include "fake_transport.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wamp_codec.h"

static void fake_want_write(void *tp)
{
    ((fake_conn *)tp)->want_write = true;
}

static void fake_close(void *tp, uint16_t code, const char *reason)
{
    fake_conn *c = tp;
    c->close_requested = true;
    c->close_code = code;
    snprintf(c->close_reason, sizeof(c->close_reason), "%s", reason ? reason : "");
}

static const rt_transport_ops fake_ops = {
        .want_write = fake_want_write,
        .close = fake_close,
};

fake_conn *fake_conn_new_peer(rt_router *rt, wamp_ser ser, const rt_peer *peer)
{
    fake_conn *c = calloc(1, sizeof(*c));
    ck_assert_ptr_nonnull(c);
    c->rt = rt;
    c->ser = ser;
    c->inbox = json_array();
    c->s = rt_router_attach(rt, &fake_ops, c, ser, peer);
    ck_assert_ptr_nonnull(c->s);
    return c;
}

fake_conn *fake_conn_new(rt_router *rt, wamp_ser ser)
{
    rt_peer peer;
    memset(&peer, 0, sizeof(peer));
    snprintf(peer.addr, sizeof(peer.addr), "127.0.0.1:50000");
    peer.is_loopback = true;
    return fake_conn_new_peer(rt, ser, &peer);
}

void fake_conn_disconnect(fake_conn *c)
{
    if (c->s) {
        rt_session_on_closed(c->s);
        c->s = NULL;
    }
}

void fake_conn_free(fake_conn *c)
{
    if (!c) {
        return;
    }
    fake_conn_disconnect(c);
    json_decref(c->inbox);
    free(c);
}

wamp_err fake_conn_send_raw(fake_conn *c, const void *data, size_t len)
{
    ck_assert_ptr_nonnull(c->s);
    return rt_session_on_message(c->s, data, len);
}

static wamp_err fake_conn_vsend(fake_conn *c, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));

static wamp_err fake_conn_vsend(fake_conn *c, const char *fmt, va_list ap)
{
    char text[4096];
    vsnprintf(text, sizeof(text), fmt, ap);
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_ALLOW_NUL, &jerr);
    ck_assert_msg(v != NULL, "bad test JSON: %s: %s", text, jerr.text);
    wamp_buf *buf = NULL;
    ck_assert_int_eq(wamp_codec_encode(c->ser, v, &buf), WAMP_OK);
    json_decref(v);
    wamp_err err = fake_conn_send_raw(c, wamp_buf_cdata(buf), wamp_buf_len(buf));
    wamp_buf_unref(&buf);
    return err;
}

wamp_err fake_conn_send(fake_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wamp_err err = fake_conn_vsend(c, fmt, ap);
    va_end(ap);
    return err;
}

json_t *fake_conn_welcome(fake_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wamp_err err = fake_conn_vsend(c, fmt, ap);
    va_end(ap);
    ck_assert_int_eq(err, WAMP_OK);
    json_t *w = fake_conn_next(c);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(fake_msg_int(w, 0), WAMP_MSG_WELCOME);
    return w;
}

bool fake_welcome_feature(const json_t *welcome, const char *role, const char *feature)
{
    json_t *roles = json_object_get(json_array_get(welcome, 2), "roles");
    json_t *features = json_object_get(json_object_get(roles, role), "features");
    return json_is_true(json_object_get(features, feature));
}

void fake_conn_drain(fake_conn *c)
{
    if (!c->s) {
        return;
    }
    wamp_buf *b;
    while ((b = rt_session_tx_peek(c->s)) != NULL) {
        json_t *v = NULL;
        char why[WAMP_WHY_LEN];
        ck_assert_msg(wamp_codec_decode(c->ser, wamp_buf_cdata(b), wamp_buf_len(b), &v, why,
                                        sizeof(why)) == WAMP_OK,
                      "router sent undecodable bytes: %s", why);
        c->bytes_received += wamp_buf_len(b);
        json_array_append_new(c->inbox, v);
        rt_session_tx_pop(c->s);
    }
    c->want_write = false;
    if (c->close_requested) {
        fake_conn_disconnect(c);
    }
}

json_t *fake_conn_next(fake_conn *c)
{
    fake_conn_drain(c);
    if (json_array_size(c->inbox) == 0) {
        return NULL;
    }
    json_t *m = json_incref(json_array_get(c->inbox, 0));
    json_array_remove(c->inbox, 0);
    return m;
}

size_t fake_conn_pending(fake_conn *c)
{
    fake_conn_drain(c);
    return json_array_size(c->inbox);
}

void fake_conn_clear(fake_conn *c)
{
    fake_conn_drain(c);
    json_array_clear(c->inbox);
}

fake_conn *fake_conn_new_ppt(rt_router *rt, wamp_ser ser, bool ppt, const char *role_a,
                             const char *role_b, const char *router_role)
{
    fake_conn *c = fake_conn_new(rt, ser);
    const char *f = ppt ? "{\"features\": {\"payload_passthru_mode\": true}}" : "{}";
    json_t *w = fake_conn_welcome(c, "[1, \"realm1\", {\"roles\": {\"%s\": %s, \"%s\": %s}}]",
                                  role_a, f, role_b, f);
    ck_assert(fake_welcome_feature(w, router_role, "payload_passthru_mode"));
    json_decref(w);
    return c;
}

uint64_t fake_conn_join(fake_conn *c, const char *realm)
{
    json_t *w = fake_conn_welcome(c,
                                  "[1, \"%s\", {\"roles\": {\"caller\": {}, \"callee\": {}, "
                                  "\"publisher\": {}, \"subscriber\": {}}}]",
                                  realm);
    uint64_t id = (uint64_t)fake_msg_int(w, 1);
    json_decref(w);
    return id;
}

int64_t fake_msg_int(const json_t *msg, size_t i)
{
    json_t *v = json_array_get(msg, i);
    ck_assert_msg(json_is_integer(v), "element %zu is not an integer", i);
    return (int64_t)json_integer_value(v);
}

const char *fake_msg_str(const json_t *msg, size_t i)
{
    json_t *v = json_array_get(msg, i);
    ck_assert_msg(json_is_string(v), "element %zu is not a string", i);
    return json_string_value(v);
}

fake_conn *fake_conn_new_joined(rt_router *rt, wamp_ser ser, const char *realm)
{
    fake_conn *c = fake_conn_new(rt, ser);
    fake_conn_join(c, realm);
    return c;
}

void fake_expect_error(fake_conn *c, int req_type, int64_t request, const char *uri)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_int_eq(fake_msg_int(m, 1), req_type);
    ck_assert_int_eq(fake_msg_int(m, 2), request);
    ck_assert_str_eq(fake_msg_str(m, 4), uri);
    json_decref(m);
}

void fake_expect_error_text(fake_conn *c, int req_type, int64_t request, const char *uri,
                            const char *text)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ERROR);
    ck_assert_int_eq(fake_msg_int(m, 1), req_type);
    ck_assert_int_eq(fake_msg_int(m, 2), request);
    ck_assert_str_eq(fake_msg_str(m, 4), uri);
    const char *why = json_string_value(json_array_get(json_array_get(m, 5), 0));
    ck_assert_msg(why && strstr(why, text), "%s", why ? why : "(no message)");
    json_decref(m);
}

void fake_expect_abort(fake_conn *c, const char *uri)
{
    json_t *m = fake_conn_next(c);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(fake_msg_int(m, 0), WAMP_MSG_ABORT);
    ck_assert_str_eq(fake_msg_str(m, 2), uri);
    json_decref(m);
}

wamp_buf *fake_conn_next_raw(fake_conn *c)
{
    wamp_buf *b = rt_session_tx_peek(c->s);
    if (!b) {
        return NULL;
    }
    wamp_buf_ref(b);
    rt_session_tx_pop(c->s);
    return b;
}

void fake_assert_tail(const wamp_buf *b, const void *tail, size_t n, const char *what)
{
    ck_assert_msg(b != NULL, "%s: nothing received", what);
    ck_assert_msg(wamp_buf_len(b) >= n &&
                          memcmp(wamp_buf_cdata(b) + wamp_buf_len(b) - n, tail, n) == 0,
                  "%s: payload bytes differ", what);
}
