/* rt_config_net.c: IP networks: wampscope.management.trusted_networks (the peers that the
 * management realm's protected mode admits), peer addresses as rt_peer.addr holds them, and the
 * public matching and formatting functions (rt_config.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rt_config_int.h"

_Static_assert(RT_CIDR_STRLEN >= INET6_ADDRSTRLEN + 4, "an address, '/' and 3 digits");

/* The loopback rule: the default of wampscope.management.trusted_networks, and what a NULL
 * rt_config.mgmt_trusted means. */
static const rt_cidr default_trusted[] = {
        {.family = RT_IP_V4, .addr = {127}, .prefix = 8},
        {.family = RT_IP_V6, .addr = {[15] = 1}, .prefix = 128},
};

static unsigned family_bits(rt_ip_family f)
{
    return f == RT_IP_V4 ? 32 : 128;
}

/* ::ffff:0:0/96, IPv4-mapped IPv6 addresses (RFC 4291 section 2.5.5.2): what a dual-stack socket
 * reports for an IPv4 peer. */
static bool is_v4_mapped(const rt_cidr *a)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return a->family == RT_IP_V6 && memcmp(a->addr, mapped, sizeof(mapped)) == 0;
}

/* ::ffff:a.b.c.d/n -> a.b.c.d/(n-96); the caller checked is_v4_mapped() and n >= 96. */
static void unmap_v4(rt_cidr *a)
{
    memmove(a->addr, a->addr + 12, 4);
    memset(a->addr + 4, 0, sizeof(a->addr) - 4);
    a->family = RT_IP_V4;
    a->prefix -= 96;
}

/* A bare address (no port, no prefix) as inet_pton() reads it: dotted quad, or RFC 4291 text
 * without a zone. The result has the full prefix. */
static bool parse_ip(const char *text, rt_cidr *out)
{
    struct in_addr a4;
    struct in6_addr a6;
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, text, &a4) == 1) {
        memcpy(out->addr, &a4, sizeof(a4));
        out->family = RT_IP_V4;
        out->prefix = 32;
        return true;
    }
    if (inet_pton(AF_INET6, text, &a6) == 1) {
        memcpy(out->addr, &a6, sizeof(a6));
        out->family = RT_IP_V6;
        out->prefix = 128;
        return true;
    }
    return false;
}

/* Clears every bit after the first `bits`. */
static void clear_host_bits(uint8_t addr[16], unsigned bits)
{
    for (unsigned i = 0; i < 16; i++) {
        unsigned keep = bits >= 8 * (i + 1) ? 8 : bits > 8 * i ? bits - 8 * i : 0;
        addr[i] &= (uint8_t)(0xff00u >> keep);
    }
}

static bool in_network(const rt_cidr *net, const rt_cidr *addr)
{
    if (net->family != addr->family || net->prefix > family_bits(net->family)) {
        return false;
    }
    rt_cidr a = *addr;
    clear_host_bits(a.addr, net->prefix);
    return memcmp(a.addr, net->addr, sizeof(a.addr)) == 0;
}

/* The list in force: the configured one, or the loopback rule for a NULL list. */
static const rt_cidr *trusted_list(const rt_config *cfg, size_t *n)
{
    if (cfg->mgmt_trusted) {
        *n = cfg->n_mgmt_trusted;
        return cfg->mgmt_trusted;
    }
    *n = sizeof(default_trusted) / sizeof(default_trusted[0]);
    return default_trusted;
}

/* A port as rt_peer.addr writes it: decimal, 0..65535. */
static bool port_is_valid(const char *p)
{
    size_t digits = strspn(p, "0123456789");
    return digits > 0 && digits <= 5 && p[digits] == '\0' && strtoul(p, NULL, 10) <= 65535;
}

static wamp_err refuse_network(cfg_ctx *c, const char *path, const char *text)
{
    return cfg_refuse(
            c, path, "\"%s\" is not an IPv4 or IPv6 network (\"a.b.c.d/n\", \"x::y/n\") or address",
            text);
}

/* One entry of trusted_networks (or of an HTTP bridge path's require_ip): "a.b.c.d/n", "x::y/n",
 * or a bare address (/32, /128). Host bits must be zero (a typo such as "10.0.0.1/8" is refused,
 * not widened). */
wamp_err cfg_parse_cidr(cfg_ctx *c, const char *path, const char *text, rt_cidr *out)
{
    char host[INET6_ADDRSTRLEN];
    const char *slash = strchr(text, '/');
    size_t n = slash ? (size_t)(slash - text) : strlen(text);
    if (n == 0 || n >= sizeof(host)) {
        return refuse_network(c, path, text);
    }
    memcpy(host, text, n);
    host[n] = '\0';
    if (!parse_ip(host, out)) {
        return refuse_network(c, path, text);
    }
    unsigned max = family_bits(out->family);
    if (slash) {
        const char *p = slash + 1;
        size_t digits = strspn(p, "0123456789");
        unsigned long len = digits > 0 && digits <= 3 ? strtoul(p, NULL, 10) : max + 1UL;
        if (p[digits] != '\0' || len > max) {
            return cfg_refuse(c, path, "the prefix length in \"%s\" must be 0..%u", text, max);
        }
        out->prefix = (unsigned)len;
    }
    char want[RT_CIDR_STRLEN];
    if (is_v4_mapped(out) && out->prefix >= 96) {
        /* Peers in ::ffff:0:0/96 are matched as IPv4, so this entry could never match. */
        rt_cidr v4 = *out;
        unmap_v4(&v4);
        clear_host_bits(v4.addr, v4.prefix);
        rt_config_format_cidr(&v4, want, sizeof(want));
        return cfg_refuse(c, path,
                          "\"%s\" is an IPv4-mapped IPv6 network; such peers are matched as IPv4, "
                          "write \"%s\"",
                          text, want);
    }
    rt_cidr net = *out;
    clear_host_bits(net.addr, net.prefix);
    if (memcmp(net.addr, out->addr, sizeof(net.addr)) != 0) {
        rt_config_format_cidr(&net, want, sizeof(want));
        return cfg_refuse(c, path, "\"%s\" has host bits set (the network is \"%s\")", text, want);
    }
    return WAMP_OK;
}

static wamp_err parse_trusted_item(cfg_ctx *c, const char *path, const json_t *v, void *items,
                                   size_t i, void *arg)
{
    (void)arg;
    rt_cidr *nets = items;
    const char *s = json_string_value(v);
    return s ? cfg_parse_cidr(c, path, s, &nets[i]) : cfg_refuse(c, path, "must be a string");
}

/* The array stays non-NULL for an empty list (NULL would mean the loopback rule). */
wamp_err cfg_parse_trusted(cfg_ctx *c, const char *path, const json_t *v, rt_config *cfg)
{
    free(cfg->mgmt_trusted);
    cfg->mgmt_trusted = NULL;
    cfg->n_mgmt_trusted = 0;
    void *items = NULL;
    wamp_err err = cfg_parse_list(c, path, v, sizeof(rt_cidr), parse_trusted_item, NULL, &items,
                                  &cfg->n_mgmt_trusted);
    cfg->mgmt_trusted = items;
    return err;
}

wamp_err cfg_default_trusted(cfg_ctx *c, rt_config *cfg)
{
    size_t n = sizeof(default_trusted) / sizeof(default_trusted[0]);
    cfg->mgmt_trusted = malloc(sizeof(default_trusted));
    if (!cfg->mgmt_trusted) {
        return cfg_oom(c);
    }
    memcpy(cfg->mgmt_trusted, default_trusted, sizeof(default_trusted));
    cfg->n_mgmt_trusted = n;
    return WAMP_OK;
}

/* NULL, or a wildcard address. */
static bool any_interface(const char *a)
{
    return !a || strcmp(a, "0.0.0.0") == 0 || strcmp(a, "::") == 0;
}

bool rt_config_interfaces_overlap(const char *a, const char *b)
{
    return any_interface(a) || any_interface(b) || strcmp(a, b) == 0;
}

bool rt_config_parse_peer_addr(const char *text, rt_cidr *out)
{
    char host[INET6_ADDRSTRLEN];
    const char *start = text;
    const char *end;
    const char *port = NULL;
    bool bracketed = false;

    memset(out, 0, sizeof(*out));
    if (!text) {
        return false;
    }
    if (text[0] == '[') { /* "[x::y]:port" */
        bracketed = true;
        start = text + 1;
        end = strchr(start, ']');
        if (!end || (end[1] != '\0' && end[1] != ':')) {
            return false;
        }
        port = end[1] == ':' ? end + 2 : NULL;
    } else { /* "a.b.c.d:port", bare "a.b.c.d", bare "x::y" (more than one ':') */
        const char *colon = strchr(text, ':');
        end = text + strlen(text);
        if (colon && !strchr(colon + 1, ':')) {
            end = colon;
            port = colon + 1;
        }
    }
    size_t n = (size_t)(end - start);
    if (n == 0 || n >= sizeof(host) || (port && !port_is_valid(port))) {
        return false;
    }
    memcpy(host, start, n);
    host[n] = '\0';
    if (!parse_ip(host, out) || (bracketed && out->family != RT_IP_V6)) {
        memset(out, 0, sizeof(*out));
        return false;
    }
    if (is_v4_mapped(out)) {
        unmap_v4(out);
    }
    return true;
}

bool rt_config_is_trusted(const rt_config *cfg, const rt_cidr *addr)
{
    if (!cfg || !addr || (addr->family != RT_IP_V4 && addr->family != RT_IP_V6)) {
        return false;
    }
    size_t n;
    const rt_cidr *nets = trusted_list(cfg, &n);
    return rt_config_addr_in(nets, n, addr);
}

bool rt_config_addr_in(const rt_cidr *nets, size_t n, const rt_cidr *addr)
{
    if (!addr || (addr->family != RT_IP_V4 && addr->family != RT_IP_V6)) {
        return false;
    }
    rt_cidr a = *addr;
    a.prefix = family_bits(a.family);
    if (is_v4_mapped(&a)) {
        unmap_v4(&a);
    }
    for (size_t i = 0; i < n; i++) {
        if (in_network(&nets[i], &a)) {
            return true;
        }
    }
    return false;
}

bool rt_config_peer_is_trusted(const rt_config *cfg, const char *peer_addr)
{
    rt_cidr a;
    return rt_config_parse_peer_addr(peer_addr, &a) && rt_config_is_trusted(cfg, &a);
}

void rt_config_format_cidr(const rt_cidr *net, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN];
    if (!buf || len == 0) {
        return;
    }
    buf[0] = '\0';
    if (!net || (net->family != RT_IP_V4 && net->family != RT_IP_V6)) {
        return;
    }
    struct in_addr a4;
    struct in6_addr a6;
    const char *s;
    if (net->family == RT_IP_V4) {
        memcpy(&a4, net->addr, sizeof(a4));
        s = inet_ntop(AF_INET, &a4, ip, sizeof(ip));
    } else {
        memcpy(&a6, net->addr, sizeof(a6));
        s = inet_ntop(AF_INET6, &a6, ip, sizeof(ip));
    }
    int w = s ? snprintf(buf, len, "%s/%u", ip, net->prefix) : -1;
    if (w < 0 || (size_t)w >= len) {
        buf[0] = '\0';
    }
}

void rt_config_format_trusted(const rt_config *cfg, char *buf, size_t len)
{
    static const char more[] = ", ...";
    if (!buf || len == 0) {
        return;
    }
    buf[0] = '\0';
    if (!cfg) {
        return;
    }
    size_t n;
    const rt_cidr *nets = trusted_list(cfg, &n);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        char one[RT_CIDR_STRLEN];
        rt_config_format_cidr(&nets[i], one, sizeof(one));
        const char *sep = i ? ", " : "";
        /* Every entry but the last leaves room for ", ..." after it. */
        size_t need = strlen(sep) + strlen(one) + (i + 1 < n ? strlen(more) : 0);
        if (used + need >= len) {
            snprintf(buf + used, len - used, "%s", i ? more : "...");
            return;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, one);
    }
}
