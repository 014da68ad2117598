/* fuzz_http1.c: the HTTP/1.1 request head parser (rt_http1.h) on arbitrary bytes.
 * Input: byte 0 picks the head limit, the rest is what a client sends (in its own allocation,
 * so a read past it is caught). Properties: never crashes or reads outside its input; a parsed
 * head lies within the input and the limit, its method and field names are tokens, its values
 * have no CR, LF or NUL and no surrounding whitespace, its fields are at most
 * RT_HTTP1_MAX_FIELDS; every proper prefix of a parsed head is incomplete (EAGAIN) and the head
 * alone parses the same as the head with what follows; an error names its reason; the joined
 * value of a field is its values in order, the same in a buffer too small; every element of a
 * joined Connection list is found by rt_http1_has_token(); the body length is decided. */
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "rt_http1.h"

static bool tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool within(rt_http1_str s, const char *buf, size_t len)
{
    return s.p >= buf && s.len <= len && s.p + s.len <= buf + len;
}

static void check_req(const rt_http1_req *req, const char *buf, size_t max)
{
    FUZZ_CHECK(req->head_len <= max);
    FUZZ_CHECK(req->minor <= 1);
    FUZZ_CHECK(req->n_fields <= RT_HTTP1_MAX_FIELDS);
    FUZZ_CHECK(req->method.len > 0 && within(req->method, buf, req->head_len));
    for (size_t i = 0; i < req->method.len; i++) {
        FUZZ_CHECK(tchar((unsigned char)req->method.p[i]));
    }
    FUZZ_CHECK(req->target.len > 0 && within(req->target, buf, req->head_len));
    FUZZ_CHECK(within(req->path, buf, req->head_len));
    FUZZ_CHECK(within(req->query, buf, req->head_len));
    for (size_t i = 0; i < req->target.len; i++) {
        unsigned char c = (unsigned char)req->target.p[i];
        FUZZ_CHECK(c > 0x20 && c != 0x7f);
    }
    for (size_t f = 0; f < req->n_fields; f++) {
        rt_http1_str name = req->fields[f].name, value = req->fields[f].value;
        FUZZ_CHECK(name.len > 0 && within(name, buf, req->head_len));
        FUZZ_CHECK(within(value, buf, req->head_len));
        for (size_t i = 0; i < name.len; i++) {
            FUZZ_CHECK(tchar((unsigned char)name.p[i]));
        }
        for (size_t i = 0; i < value.len; i++) {
            FUZZ_CHECK(value.p[i] != '\r' && value.p[i] != '\n' && value.p[i] != '\0');
        }
        if (value.len > 0) {
            FUZZ_CHECK(value.p[0] != ' ' && value.p[0] != '\t');
            FUZZ_CHECK(value.p[value.len - 1] != ' ' && value.p[value.len - 1] != '\t');
        }
    }
}

/* The joined values of the first field's name, checked against the fields; every element of
 * a joined Connection list is a token rt_http1_has_token() finds. */
static void check_join(const rt_http1_req *req)
{
    if (req->n_fields == 0) {
        return;
    }
    char name[64];
    size_t nl = req->fields[0].name.len < sizeof(name) - 1 ? req->fields[0].name.len : 0;
    if (nl == 0) {
        return;
    }
    memcpy(name, req->fields[0].name.p, nl);
    name[nl] = '\0';
    size_t want = 0;
    for (size_t f = 0; f < req->n_fields; f++) {
        const rt_http1_field *x = &req->fields[f];
        if (x->name.len == nl && strncasecmp(x->name.p, name, nl) == 0 && x->value.len > 0) {
            want += (want ? 2 : 0) + x->value.len;
        }
    }
    char *full = malloc(want + 1);
    FUZZ_CHECK(full != NULL);
    FUZZ_CHECK(rt_http1_join(req, name, full, want + 1) == want);
    FUZZ_CHECK(full[want] == '\0');
    char small[8];
    FUZZ_CHECK(rt_http1_join(req, name, small, sizeof(small)) == want);
    size_t pre = want < sizeof(small) - 1 ? want : sizeof(small) - 1;
    FUZZ_CHECK(memcmp(small, full, pre) == 0 && small[pre] == '\0');
    FUZZ_CHECK(rt_http1_field_get(req, name) == &req->fields[0]);
    FUZZ_CHECK(rt_http1_field_count(req, name) >= 1);
    char *save = NULL;
    for (char *tok = strtok_r(full, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') {
            tok++;
        }
        size_t tl = strlen(tok);
        while (tl > 0 && (tok[tl - 1] == ' ' || tok[tl - 1] == '\t')) {
            tok[--tl] = '\0';
        }
        if (tl > 0 && !memchr(tok, '\0', tl)) {
            FUZZ_CHECK(rt_http1_has_token(req, name, tok));
        }
    }
    free(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    static const size_t limits[] = {16, 64, 256, 1024, 4096, 8192, 16384, 65536};
    size_t max = limits[data[0] & 7];
    size_t len = size - 1;
    char *buf = malloc(len ? len : 1);
    FUZZ_CHECK(buf != NULL);
    memcpy(buf, data + 1, len);
    rt_http1_req *req = malloc(sizeof(*req));
    FUZZ_CHECK(req != NULL);
    const char *why = NULL;
    wamp_err err = rt_http1_parse(buf, len, max, req, &why);
    FUZZ_CHECK(err == WAMP_OK || err == WAMP_EAGAIN || err == WAMP_EPROTO || err == WAMP_ETOOBIG);
    if (err == WAMP_EPROTO || err == WAMP_ETOOBIG) {
        FUZZ_CHECK(why != NULL && why[0] != '\0');
    }
    if (err == WAMP_EAGAIN) {
        FUZZ_CHECK(len < max);
    }
    if (err == WAMP_OK) {
        check_req(req, buf, len);
        FUZZ_CHECK(req->head_len <= max);
        check_join(req);
        uint64_t body;
        wamp_err b = rt_http1_body_length(req, &body);
        FUZZ_CHECK(b == WAMP_OK || b == WAMP_EINVAL);
        (void)rt_http1_keep_alive(req);
        /* The head alone parses the same; each proper prefix (a sample of them) is EAGAIN. */
        size_t head_len = req->head_len, n_fields = req->n_fields;
        FUZZ_CHECK(rt_http1_parse(buf, head_len, max, req, &why) == WAMP_OK);
        FUZZ_CHECK(req->head_len == head_len && req->n_fields == n_fields);
        size_t step = head_len / 64 + 1;
        for (size_t p = 0; p < head_len; p += step) {
            FUZZ_CHECK(rt_http1_parse(buf, p, max, req, &why) == WAMP_EAGAIN);
        }
        FUZZ_CHECK(rt_http1_parse(buf, head_len - 1, max, req, &why) == WAMP_EAGAIN);
    }
    free(req);
    free(buf);
    return 0;
}
