/* The ACP registry through the C ABI (acph_registry_*): the shared fixture loaded from its file and
 * from text, listed, resolved (npx, uvx, binary; options), bad documents, options and ids refused
 * with their status and `data.path`; installs from archives built here with tar (no network): a
 * file:// URL (async), whose resolved spec spawns and runs a turn; the fetch callback (chunks; a
 * second install fetches nothing), failing, serving other bytes, writing past maxArchiveBytes; no
 * callback; no sha256 (nothing fetched); a sha256 mismatch; a `../evil` member; still running
 * after a wait that timed out, abandoned by acph_call_cancel. After every failure the cache holds nothing of the attempt
 * and each finalizer ran exactly once. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "support/portable.h"

#include "acp_host.h"
#include "support/json.h"
#include "support/testutil.h"

static const char *const PLATFORMS[] = {"linux-x86_64",   "linux-aarch64",  "darwin-aarch64",
                                        "darwin-x86_64",  "windows-x86_64", "windows-aarch64"};

/* ----- helpers ----- */

static char *fmt(const char *f, ...) {
    va_list ap, ap2;
    va_start(ap, f);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, f, ap);
    va_end(ap);
    CHECK(n >= 0);
    char *s = malloc((size_t)n + 1);
    CHECK(s != NULL);
    vsnprintf(s, (size_t)n + 1, f, ap2);
    va_end(ap2);
    return s;
}

static void sh(const char *cmd) {
    int rc = system(cmd);
    CHECK_MSG(rc == 0, cmd);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f != NULL, path);
    CHECK(fwrite(text, 1, strlen(text), f) == strlen(text));
    CHECK(fclose(f) == 0);
}

static bool exists(const char *path) { return lstat(path, &(struct stat){0}) == 0; }

static char *sha256_of(const char *path) {
    char *cmd = fmt("sha256sum '%s'", path);
    FILE *p = popen(cmd, "r");
    CHECK_MSG(p != NULL, cmd);
    char hex[65] = {0};
    CHECK(fread(hex, 1, 64, p) == 64);
    CHECK(pclose(p) == 0);
    free(cmd);
    return strdup(hex);
}

static void sleep_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL); }

/* Take an owned JSON string from the library. */
static json *take_json(char *text) {
    CHECK(text != NULL);
    json *j = json_parse(text, strlen(text));
    CHECK_MSG(j != NULL, text);
    acph_string_free(text);
    return j;
}

static json *error_data(const acph_error *e) {
    CHECK(e != NULL);
    json *d = json_parse(e->data, strlen(e->data));
    CHECK_MSG(d != NULL, e->data);
    return d;
}

/* The error's `data.path` must be `want`. Frees the error. */
static void check_path(acph_error *e, const char *want) {
    json *d = error_data(e);
    const char *got = json_str(json_get(d, "path"));
    CHECK_MSG(got && strcmp(got, want) == 0, e->data);
    json_free(d);
    acph_error_free(e);
}

static void check_message(acph_error *e, const char *needle) {
    CHECK(e != NULL);
    CHECK_MSG(strstr(e->message, needle) != NULL, e->message);
    acph_error_free(e);
}

static acph_registry *load_text(const char *text) {
    acph_registry *r = NULL;
    EXPECT(ACPH_STATUS_OK, acph_registry_from_json(text, strlen(text), &r, ERR));
    CHECK(r != NULL);
    return r;
}

static json *resolve(const acph_registry *r, const char *id, const char *options) {
    char *out = NULL;
    EXPECT(ACPH_STATUS_OK,
           acph_registry_resolve(r, id, strlen(id), options, options ? strlen(options) : 0, &out, ERR));
    return take_json(out);
}

static bool str_is(const json *v, const char *want) { return json_str(v) && strcmp(json_str(v), want) == 0; }

/* `spec.args` equals the NULL-terminated list `want`. */
static bool args_are(const json *spec, const char *const *want) {
    const json *args = json_get(spec, "args");
    size_t n = 0;
    while (want[n]) n++;
    if (!args || args->length != n) return false;
    for (size_t i = 0; i < n; i++)
        if (!str_is(json_at(args, i), want[i])) return false;
    return true;
}

/* ----- the fixture: load, list, resolve ----- */

static char *fixture_path(void) { return fmt("%s/../registry/registry.json", fixtures_dir()); }

static void fixture_loads_and_lists(void) {
    char *path = fixture_path();
    acph_registry *r = NULL;
    EXPECT(ACPH_STATUS_OK, acph_registry_from_file(path, strlen(path), &r, ERR));
    char *version = NULL;
    EXPECT(ACPH_STATUS_OK, acph_registry_version(r, &version, ERR));
    CHECK(version && strcmp(version, "1.0.0") == 0);
    acph_string_free(version);

    char *text = NULL;
    EXPECT(ACPH_STATUS_OK, acph_registry_agents(r, &text, ERR));
    json *agents = take_json(text);
    const char *ids[] = {"npx-agent",        "uvx-agent",   "cmd-agent",   "binary-agent",
                         "unverified-agent", "mixed-agent", "escape-agent"};
    CHECK(agents->type == JSON_ARRAY && agents->length == 7);
    for (size_t i = 0; i < 7; i++) CHECK(str_is(json_get(json_at(agents, i), "id"), ids[i]));
    const json *npx = json_at(agents, 0);
    CHECK(str_is(json_get(npx, "license"), "MIT"));
    CHECK(str_is(json_get(json_get(json_get(npx, "distribution"), "npx"), "package"), "@example/npx-agent@1.2.3"));
    CHECK(json_get(npx, "futureField") == NULL); /* unknown fields are not kept */
    json_free(agents);

    EXPECT(ACPH_STATUS_OK, acph_registry_agent(r, "uvx-agent", 9, &text, ERR));
    json *uvx = take_json(text);
    CHECK(str_is(json_get(uvx, "name"), "Uvx Agent"));
    json_free(uvx);
    acph_error *e = NULL;
    EXPECT_E(ACPH_STATUS_NOT_FOUND, acph_registry_agent(r, "nope", 4, &text, ERR), &e);
    check_message(e, "nope");

    /* The same document from text; a single manifest is a registry of one, without a version. */
    size_t len = 0;
    char *doc = read_file(path, &len);
    CHECK(doc != NULL);
    acph_registry *r2 = NULL;
    EXPECT(ACPH_STATUS_OK, acph_registry_from_json(doc, len, &r2, ERR));
    EXPECT(ACPH_STATUS_OK, acph_registry_agents(r2, &text, ERR));
    agents = take_json(text);
    CHECK(agents->length == 7);
    json_free(agents);
    acph_registry_free(r2);
    free(doc);
    acph_registry *one = load_text("{\"id\":\"solo\",\"name\":\"Solo\",\"version\":\"1.0.0\","
                                   "\"description\":\"d\",\"distribution\":{\"uvx\":{\"package\":\"solo\"}}}");
    version = (char *)1;
    EXPECT(ACPH_STATUS_OK, acph_registry_version(one, &version, ERR));
    CHECK(version == NULL);
    json *solo = resolve(one, "solo", NULL);
    CHECK(str_is(json_get(solo, "kind"), "uvx"));
    json_free(solo);
    acph_registry_free(one);
    acph_registry_free(r);
    free(path);
}

static void fixture_resolves(void) {
    char *path = fixture_path();
    acph_registry *r = NULL;
    EXPECT(ACPH_STATUS_OK, acph_registry_from_file(path, strlen(path), &r, ERR));
    free(path);

    json *res = resolve(r, "npx-agent", NULL);
    CHECK(str_is(json_get(res, "kind"), "npx") && str_is(json_get(res, "agentId"), "npx-agent"));
    CHECK(str_is(json_get(res, "agentVersion"), "1.2.3"));
    const json *spec = json_get(res, "spec");
    CHECK(str_is(json_get(spec, "command"), "npx"));
    CHECK(args_are(spec, (const char *const[]){"-y", "@example/npx-agent@1.2.3", "--acp", "--verbose", NULL}));
    CHECK(str_is(json_get(json_get(spec, "env"), "NPX_AGENT_MODE"), "acp"));
    CHECK(json_is_null(json_get(res, "platform")) && json_is_null(json_get(res, "installDir")));
    CHECK(json_get(res, "needsInstall")->type == JSON_BOOL && !json_get(res, "needsInstall")->boolean);
    json_free(res);

    res = resolve(r, "uvx-agent", "{\"uvxCommand\":\"/opt/uv/bin/uvx\",\"platform\":null}");
    CHECK(str_is(json_get(res, "kind"), "uvx"));
    CHECK(str_is(json_get(json_get(res, "spec"), "command"), "/opt/uv/bin/uvx"));
    CHECK(args_are(json_get(res, "spec"), (const char *const[]){"uvx-agent==0.4.0", "acp", NULL}));
    json_free(res);

    res = resolve(r, "cmd-agent", "{\"prefer\":\"uvx\"}");
    CHECK(args_are(json_get(res, "spec"), (const char *const[]){"--from", "example-tools==2.0.0", "tools-acp", NULL}));
    json_free(res);
    res = resolve(r, "cmd-agent", "{\"npxCommand\":\"npx.cmd\"}");
    CHECK(str_is(json_get(json_get(res, "spec"), "command"), "npx.cmd"));
    CHECK(args_are(json_get(res, "spec"),
                   (const char *const[]){"-y", "--package", "@example/tools@2.0.0", "tools-acp", "--stdio", NULL}));
    json_free(res);

    const char *cache = scratch_dir();
    char *opts = fmt("{\"platform\":\"linux-x86_64\",\"cacheDir\":\"%s/fixture-cache\"}", cache);
    res = resolve(r, "binary-agent", opts);
    CHECK(str_is(json_get(res, "kind"), "binary") && str_is(json_get(res, "platform"), "linux-x86_64"));
    CHECK(json_get(res, "needsInstall")->boolean);
    char *dir = fmt("%s/fixture-cache/binary-agent/3.1.4/linux-x86_64", cache);
    char *cmd = fmt("%s/binary-agent", dir);
    CHECK(str_is(json_get(res, "installDir"), dir));
    CHECK(str_is(json_get(json_get(res, "spec"), "command"), cmd));
    CHECK(args_are(json_get(res, "spec"), (const char *const[]){"acp", NULL}));
    CHECK(!exists(dir)); /* resolution never installs */
    json_free(res);
    bool installed = true;
    EXPECT(ACPH_STATUS_OK, acph_registry_is_installed(r, "binary-agent", 12, opts, strlen(opts), &installed, ERR));
    CHECK(!installed);
    free(opts);
    free(dir);
    free(cmd);

    /* npx before a binary that needs installing, unless `prefer` says otherwise. */
    opts = fmt("{\"platform\":\"linux-x86_64\",\"cacheDir\":\"%s\"}", cache);
    res = resolve(r, "mixed-agent", opts);
    CHECK(str_is(json_get(res, "kind"), "npx"));
    json_free(res);
    free(opts);
    opts = fmt("{\"prefer\":[\"binary\",\"npx\"],\"platform\":\"linux-x86_64\",\"cacheDir\":\"%s\"}", cache);
    res = resolve(r, "mixed-agent", opts);
    CHECK(str_is(json_get(res, "kind"), "binary") && json_get(res, "needsInstall")->boolean);
    json_free(res);
    free(opts);

    /* Errors. */
    char *out = NULL;
    acph_error *e = NULL;
    EXPECT_E(ACPH_STATUS_NOT_FOUND, acph_registry_resolve(r, "no-such-agent", 13, NULL, 0, &out, ERR), &e);
    check_message(e, "no-such-agent");
    const char *o = "{\"platform\":\"linux-x86_64\",\"prefer\":[\"npx\"]}";
    EXPECT(ACPH_STATUS_NOT_FOUND, acph_registry_resolve(r, "binary-agent", 12, o, strlen(o), &out, ERR));
    o = "{\"prefer\":[\"pip\"]}";
    EXPECT_E(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_resolve(r, "npx-agent", 9, o, strlen(o), &out, ERR), &e);
    check_path(e, "prefer[0]");
    o = "{\"platform\":\"beos-m68k\"}";
    EXPECT_E(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_resolve(r, "npx-agent", 9, o, strlen(o), &out, ERR), &e);
    check_path(e, "platform");
    o = "{\"cachedir\":\"/tmp\"}";
    EXPECT_E(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_resolve(r, "npx-agent", 9, o, strlen(o), &out, ERR), &e);
    check_path(e, "cachedir");
    o = "{\"platform\":\"linux-x86_64\"}"; /* a binary needs a cache directory */
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_resolve(r, "binary-agent", 12, o, strlen(o), &out, ERR));
    o = "{\"prefer\":";
    EXPECT(ACPH_STATUS_INVALID_JSON, acph_registry_resolve(r, "npx-agent", 9, o, strlen(o), &out, ERR));
    opts = fmt("{\"platform\":\"linux-x86_64\",\"cacheDir\":\"%s\"}", cache);
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_registry_resolve(r, "escape-agent", 12, opts, strlen(opts), &out, ERR), &e);
    check_path(e, "agents[6].distribution.binary.linux-x86_64.cmd");
    free(opts);
    CHECK(out == NULL); /* out-params are written only on success */
    acph_registry_free(r);
}

static void bad_documents_and_arguments(void) {
    acph_registry *r = NULL;
    acph_error *e = NULL;
    const char *t = "{not json";
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_registry_from_json(t, strlen(t), &r, ERR), &e);
    check_path(e, "$");
    t = "[1, 2]";
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_registry_from_json(t, strlen(t), &r, ERR), &e);
    check_path(e, "$");
    t = "{\"agents\":[{\"id\":\"a\",\"name\":\"A\",\"version\":\"1\",\"description\":\"d\","
        "\"distribution\":{\"npx\":{\"package\":\"a\"}}},{\"id\":\"b\",\"name\":\"B\",\"version\":\"1\","
        "\"description\":\"d\",\"distribution\":{\"npx\":{\"args\":[]}}}]}";
    EXPECT_E(ACPH_STATUS_INVALID_CONFIG, acph_registry_from_json(t, strlen(t), &r, ERR), &e);
    check_path(e, "agents[1].distribution.npx.package");
    CHECK(r == NULL);
    const char *missing = "/nonexistent/registry.json";
    EXPECT_E(ACPH_STATUS_IO, acph_registry_from_file(missing, strlen(missing), &r, ERR), &e);
    check_message(e, missing);
    const char bad_utf8[] = "{\"agents\":[]}\xff";
    EXPECT(ACPH_STATUS_INVALID_UTF8, acph_registry_from_json(bad_utf8, sizeof bad_utf8 - 1, &r, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_from_json(NULL, 3, &r, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_from_json("{}", 2, NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_from_file(NULL, 0, &r, ERR));
    CHECK(r == NULL);
    acph_registry_free(NULL); /* a no-op */

    r = load_text("{\"agents\":[]}");
    char *out = NULL;
    bool installed = false;
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_agents(NULL, &out, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_agents(r, NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_version(r, NULL, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_agent(r, NULL, 0, &out, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_resolve(NULL, "a", 1, NULL, 0, &out, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_resolve(r, NULL, 1, NULL, 0, &out, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_resolve(r, "a", 1, NULL, 0, NULL, ERR));
    EXPECT(ACPH_STATUS_INVALID_UTF8, acph_registry_resolve(r, "\xc3", 1, NULL, 0, &out, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_is_installed(r, "a", 1, NULL, 0, &installed, ERR));
    const char *o = "{\"cacheDir\":\"/tmp\"}";
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_is_installed(r, "a", 1, o, strlen(o), NULL, ERR));
    EXPECT(ACPH_STATUS_NOT_FOUND, acph_registry_is_installed(r, "a", 1, o, strlen(o), &installed, ERR));
    acph_error *e2 = NULL;
    o = "{\"platform\":\"linux-x86_64\"}";
    EXPECT_E(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_is_installed(r, "a", 1, o, strlen(o), &installed, ERR), &e2);
    check_path(e2, "cacheDir");
    o = "{\"cacheDir\":\"/tmp\",\"maxEntries\":3}"; /* limits are install options */
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_is_installed(r, "a", 1, o, strlen(o), &installed, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_fetch_sink_write(NULL, (const uint8_t *)"x", 1, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_fetch_sink_fail(NULL, "x", 1, ERR));
    CHECK(out == NULL);
    acph_registry_free(r);
}

/* ----- installs ----- */

typedef enum { SERVE, SERVE_OTHER, FAIL, STREAM } fetch_mode;

typedef struct {
    fetch_mode mode;
    const char *data; /* SERVE: the archive */
    size_t len;
    size_t chunk;
    atomic_int calls;
    atomic_int finalized;
    atomic_int last_status; /* the status of the write that failed (STREAM, SERVE) */
    atomic_int streaming;   /* STREAM: the first write went through */
    char url[256];
    /* The progress callback's reports: "phase stage;" each, and the first report's details. */
    char steps[512];
    uint64_t download_bytes; /* `bytes` of `download done` */
    char failure[512];       /* `message` of the first `failed` */
    bool bad_report;         /* a report that was not the documented shape */
} fetch_ctx;

static void ctx_init(fetch_ctx *c, fetch_mode mode, const char *data, size_t len) {
    memset(c, 0, sizeof *c);
    c->mode = mode;
    c->data = data;
    c->len = len;
    c->chunk = 1000;
    atomic_init(&c->calls, 0);
    atomic_init(&c->finalized, 0);
    atomic_init(&c->last_status, ACPH_STATUS_OK);
    atomic_init(&c->streaming, 0);
}

/* Runs on a library thread (the host's blocking pool). */
static int fetch_cb(void *user, const char *url, size_t url_len, acph_fetch_sink *sink) {
    fetch_ctx *c = user;
    atomic_fetch_add(&c->calls, 1);
    if (strlen(url) != url_len) return 90;
    snprintf(c->url, sizeof c->url, "%s", url);
    switch (c->mode) {
    case SERVE:
        for (size_t off = 0; off < c->len; off += c->chunk) {
            size_t n = c->len - off < c->chunk ? c->len - off : c->chunk;
            acph_status st = acph_fetch_sink_write(sink, (const uint8_t *)c->data + off, n, NULL);
            if (st != ACPH_STATUS_OK) {
                atomic_store(&c->last_status, (int)st);
                return 1;
            }
        }
        return acph_fetch_sink_write(sink, NULL, 0, NULL) == ACPH_STATUS_OK ? 0 : 91;
    case SERVE_OTHER:
        return acph_fetch_sink_write(sink, (const uint8_t *)"not the archive", 15, NULL) == ACPH_STATUS_OK ? 0 : 92;
    case FAIL:
        acph_fetch_sink_fail(sink, "HTTP 404 Not Found", 18, NULL);
        return 7;
    case STREAM:
        /* Streams until the library refuses the bytes (bounded: 60 s). */
        for (int i = 0; i < 12000; i++) {
            acph_status st = acph_fetch_sink_write(sink, (const uint8_t *)"0123456789abcdef", 16, NULL);
            if (st != ACPH_STATUS_OK) {
                atomic_store(&c->last_status, (int)st);
                return 1;
            }
            atomic_store(&c->streaming, 1);
            sleep_ms(5);
        }
        return 93;
    }
    return 94;
}

/* The progress callback: on the install's thread, between its steps. */
static void progress_cb(void *user, const char *text, size_t len) {
    fetch_ctx *c = user;
    json *p = strlen(text) == len ? json_parse(text, len) : NULL;
    const char *phase = json_str(json_get(p, "phase")), *stage = json_str(json_get(p, "stage"));
    uint64_t elapsed = 0;
    if (!phase || !stage || !json_u64(json_get(p, "elapsedMs"), &elapsed) || !json_get(p, "bytes") ||
        !json_get(p, "message") || p->length != 5) {
        c->bad_report = true;
        json_free(p);
        return;
    }
    size_t used = strlen(c->steps);
    snprintf(c->steps + used, sizeof c->steps - used, "%s %s;", phase, stage);
    if (strcmp(phase, "download") == 0 && strcmp(stage, "done") == 0)
        json_u64(json_get(p, "bytes"), &c->download_bytes);
    if (strcmp(stage, "failed") == 0 && !c->failure[0] && json_str(json_get(p, "message")))
        snprintf(c->failure, sizeof c->failure, "%s", json_str(json_get(p, "message")));
    json_free(p);
}

static void fetch_fin(void *user) { atomic_fetch_add(&((fetch_ctx *)user)->finalized, 1); }

static void wait_finalized(fetch_ctx *c) {
    uint64_t until = now_ms() + T_WAIT;
    while (atomic_load(&c->finalized) == 0 && now_ms() < until) sleep_ms(5);
    CHECK(atomic_load(&c->finalized) == 1);
}

typedef struct {
    char *dir;         /* scratch */
    char *archive;     /* tool.tar.gz: agent/run.sh execs the mock agent */
    char *sha;
    char *data;        /* its bytes */
    size_t len;
    char *hostile;     /* hostile.tar.gz: agent/run.sh and ../evil */
    char *hostile_sha;
    char *registry;    /* the registry document */
} fixture;

/* One entry with the same binary target on every platform key. */
static json *entry(const char *id, const char *archive, const char *sha) {
    json *a = json_new_object();
    json_set(a, "id", json_new_string(id));
    json_set(a, "name", json_new_string(id));
    json_set(a, "version", json_new_string("0.1.0"));
    json_set(a, "description", json_new_string("from a local archive"));
    json *bin = json_new_object();
    for (size_t i = 0; i < sizeof PLATFORMS / sizeof *PLATFORMS; i++) {
        json *t = json_new_object();
        json_set(t, "archive", json_new_string(archive));
        json_set(t, "cmd", json_new_string("./agent/run.sh"));
        json *args = json_new_array();
        json_push(args, json_new_string("--from-registry"));
        json_set(t, "args", args);
        json *env = json_new_object();
        json_set(env, "TOOL_FROM_REGISTRY", json_new_string("1"));
        json_set(t, "env", env);
        if (sha) json_set(t, "sha256", json_new_string(sha));
        json_set(bin, PLATFORMS[i], t);
    }
    json *dist = json_new_object();
    json_set(dist, "binary", bin);
    json_set(a, "distribution", dist);
    return a;
}

static fixture make_fixture(void) {
    fixture f = {0};
    f.dir = strdup(scratch_dir());
    char *script = fmt("#!/bin/sh\n"
                       "[ \"$TOOL_FROM_REGISTRY\" = 1 ] || exit 3\n"
                       "[ \"$1\" = --from-registry ] || exit 4\n"
                       "shift\n"
                       "exec '%s' \"$@\"\n",
                       mock_agent_path());
    char *cmd = fmt("mkdir -p '%s/src/agent' '%s/bad/sub'", f.dir, f.dir);
    sh(cmd);
    free(cmd);
    char *p = fmt("%s/src/agent/run.sh", f.dir);
    write_text(p, script); /* 0644: the install makes the cmd executable */
    free(p);
    free(script);
    f.archive = fmt("%s/tool.tar.gz", f.dir);
    cmd = fmt("tar -C '%s/src' -czf '%s' agent", f.dir, f.archive);
    sh(cmd);
    free(cmd);
    f.sha = sha256_of(f.archive);
    f.data = read_file(f.archive, &f.len);
    CHECK(f.data != NULL && f.len > 0);

    /* A member named ../evil (tar -P keeps it). */
    p = fmt("%s/bad/sub/run.sh", f.dir);
    write_text(p, "#!/bin/sh\n");
    free(p);
    p = fmt("%s/bad/evil", f.dir);
    write_text(p, "pwned\n");
    free(p);
    f.hostile = fmt("%s/hostile.tar.gz", f.dir);
    cmd = fmt("tar -C '%s/bad/sub' -czPf '%s' run.sh ../evil 2>/dev/null", f.dir, f.hostile);
    sh(cmd);
    free(cmd);
    f.hostile_sha = sha256_of(f.hostile);

    char *url = fmt("file://%s", f.archive);
    json *agents = json_new_array();
    json_push(agents, entry("tool", url, f.sha));
    json_push(agents, entry("remote-tool", "https://example.invalid/tool-0.1.0.tar.gz", f.sha));
    json_push(agents, entry("nosha", url, NULL));
    json_push(agents, entry("badsha", url, "0000000000000000000000000000000000000000000000000000000000000000"));
    json_push(agents, entry("hostile", f.hostile, f.hostile_sha)); /* a plain local path */
    json *doc = json_new_object();
    json_set(doc, "version", json_new_string("1.0.0"));
    json_set(doc, "agents", agents);
    f.registry = json_dump(doc);
    json_free(doc);
    free(url);
    return f;
}

static void free_fixture(fixture *f) {
    free(f->dir);
    free(f->archive);
    free(f->sha);
    free(f->data);
    free(f->hostile);
    free(f->hostile_sha);
    free(f->registry);
}

static char *cache_opts(const char *cache) { return fmt("{\"cacheDir\":\"%s\"}", cache); }

/* Nothing of agent `id` is in `cache`. */
static void nothing_installed(const char *cache, const char *id) {
    char *p = fmt("%s/%s", cache, id);
    CHECK_MSG(!exists(p), p);
    free(p);
}

/* From a file:// URL (asynchronous), then the resolved spec spawns and a turn ends `end_turn`. */
static void install_then_spawn(acph_host *h, const acph_registry *r, const fixture *f) {
    char *cache = fmt("%s/cache-file", f->dir);
    char *opts = cache_opts(cache);
    json *before = resolve(r, "tool", opts);
    CHECK(str_is(json_get(before, "kind"), "binary") && json_get(before, "needsInstall")->boolean);
    const char *platform = json_str(json_get(before, "platform"));
    CHECK(platform != NULL);
    char *dir = fmt("%s/tool/0.1.0/%s", cache, platform);
    char *cmd = fmt("%s/agent/run.sh", dir);
    CHECK(str_is(json_get(before, "installDir"), dir));
    CHECK(str_is(json_get(json_get(before, "spec"), "command"), cmd));
    json_free(before);

    fetch_ctx ctx;
    ctx_init(&ctx, SERVE, f->data, f->len);
    event_list evs = {0};
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK,
           acph_registry_install(h, r, "tool", 4, opts, strlen(opts), fetch_cb, progress_cb, &ctx, fetch_fin, &call,
                                 ERR));
    CHECK(call != 0);
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    json *result = NULL;
    char *kind = NULL;
    CHECK_MSG(call_result(done, &kind, &result), kind);
    CHECK(str_is(json_get(result, "dir"), dir) && str_is(json_get(result, "cmd"), cmd));
    CHECK(!json_get(result, "alreadyInstalled")->boolean);
    json_free(result);
    events_free(&evs);
    wait_finalized(&ctx);
    CHECK(atomic_load(&ctx.calls) == 0); /* a file:// URL is read by the library */
    /* The local archive's download and extraction, in order; the download's size. */
    CHECK(!ctx.bad_report);
    CHECK_MSG(strcmp(ctx.steps, "download started;download done;extract started;extract done;") == 0, ctx.steps);
    CHECK(ctx.download_bytes == f->len);
    struct stat st;
    CHECK(stat(cmd, &st) == 0 && (st.st_mode & 0100));

    bool installed = false;
    EXPECT(ACPH_STATUS_OK, acph_registry_is_installed(r, "tool", 4, opts, strlen(opts), &installed, ERR));
    CHECK(installed);
    char *out = NULL;
    /* Already installed: nothing to report. */
    ctx_init(&ctx, SERVE, f->data, f->len);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_registry_install(h, r, "tool", 4, opts, strlen(opts), NULL, progress_cb, &ctx, fetch_fin, CALL, ERR), NULL, &out);
    json *again = take_json(out);
    CHECK(json_get(again, "alreadyInstalled")->boolean);
    json_free(again);
    wait_finalized(&ctx);
    CHECK_MSG(ctx.steps[0] == 0, ctx.steps);

    json *res = resolve(r, "tool", opts);
    CHECK(str_is(json_get(res, "kind"), "binary") && !json_get(res, "needsInstall")->boolean);
    char *spec = json_dump(json_get(res, "spec"));
    json_free(res);
    uint64_t agent = 0, session = 0;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_host_spawn(h, spec, strlen(spec), CALL, ERR), &agent, NULL);
    free(spec);
    char *info = NULL;
    EXPECT(ACPH_STATUS_OK, acph_agent_info(h, agent, &info, ERR));
    CHECK_MSG(strstr(info, "acp-mock-agent") != NULL, info);
    acph_string_free(info);
    char *sopts = session_options(f->dir);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_new_session(h, agent, sopts, strlen(sopts), CALL, ERR), &session, NULL);
    free(sopts);
    char *turn = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_session_prompt_text(h, session, "hello", 5, CALL, ERR), NULL, &turn);
    json *t = take_json(turn);
    CHECK(str_is(json_get(t, "stopReason"), "end_turn"));
    json_free(t);
    char *exit_json = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_agent_shutdown(h, agent, CALL, ERR), NULL, &exit_json);
    acph_string_free(exit_json);
    EXPECT(ACPH_STATUS_OK, acph_agent_release(h, agent, ERR));
    acph_event *ev = NULL;
    while (acph_host_try_next_event(h, &ev) == ACPH_STATUS_OK) acph_event_free(ev);
    free(dir);
    free(cmd);
    free(opts);
    free(cache);
}

/* An https URL through the fetch callback, in chunks; installed once, fetched once. */
static void install_through_the_callback(acph_host *h, const acph_registry *r, const fixture *f) {
    char *cache = fmt("%s/cache-hook", f->dir);
    char *opts = cache_opts(cache);
    fetch_ctx ctx;
    ctx_init(&ctx, SERVE, f->data, f->len);
    ctx.chunk = 333;
    char *out = NULL;
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_registry_install(h, r, "remote-tool", 11, opts, strlen(opts), fetch_cb, NULL, &ctx, fetch_fin, CALL, ERR), NULL, &out);
    json *res = take_json(out);
    CHECK(!json_get(res, "alreadyInstalled")->boolean);
    const char *cmd = json_str(json_get(res, "cmd"));
    CHECK(cmd != NULL);
    size_t len = 0;
    char *installed = read_file(cmd, &len);
    CHECK(installed && strstr(installed, mock_agent_path()) != NULL);
    free(installed);
    json_free(res);
    wait_finalized(&ctx);
    CHECK(atomic_load(&ctx.calls) == 1);
    CHECK(strcmp(ctx.url, "https://example.invalid/tool-0.1.0.tar.gz") == 0);

    fetch_ctx again;
    ctx_init(&again, SERVE, f->data, f->len);
    EXPECT_CALL(ACPH_STATUS_OK, h, acph_registry_install(h, r, "remote-tool", 11, opts, strlen(opts), fetch_cb, NULL, &again, fetch_fin, CALL, ERR), NULL, &out);
    res = take_json(out);
    CHECK(json_get(res, "alreadyInstalled")->boolean);
    json_free(res);
    wait_finalized(&again);
    CHECK(atomic_load(&again.calls) == 0); /* installed: nothing fetched */
    free(opts);
    free(cache);
}

/* Install `id` under a fresh cache with `ctx` (NULL: no callback) and `extra` options; the status
 * must be `want`; returns the error (the caller checks it). Nothing may be left installed. */
static acph_error *install_fails(acph_host *h, const acph_registry *r, const fixture *f, const char *id,
                                 fetch_ctx *ctx, const char *extra, acph_status want) {
    static int n = 0;
    char *cache = fmt("%s/cache-fail-%d", f->dir, n++);
    char *opts = fmt("{\"cacheDir\":\"%s\"%s}", cache, extra ? extra : "");
    char *out = NULL;
    acph_error *e = NULL;
    EXPECT_CALL_E(want, h,
                  acph_registry_install(h, r, id, strlen(id), opts, strlen(opts), ctx ? fetch_cb : NULL,
                                        ctx ? progress_cb : NULL, ctx, ctx ? fetch_fin : NULL, CALL, ERR),
                  NULL, &out, &e);
    CHECK(out == NULL);
    if (ctx) wait_finalized(ctx);
    nothing_installed(cache, id);
    bool installed = true;
    char *plain = cache_opts(cache);
    EXPECT(ACPH_STATUS_OK, acph_registry_is_installed(r, id, strlen(id), plain, strlen(plain), &installed, ERR));
    CHECK(!installed);
    free(plain);
    free(opts);
    free(cache);
    return e;
}

static void failed_installs(acph_host *h, const acph_registry *r, const fixture *f) {
    fetch_ctx ctx;
    /* No sha256: refused before anything is fetched. */
    ctx_init(&ctx, SERVE, f->data, f->len);
    acph_error *e = install_fails(h, r, f, "nosha", &ctx, NULL, ACPH_STATUS_INVALID_CONFIG);
    CHECK(atomic_load(&ctx.calls) == 0);
    CHECK_MSG(ctx.steps[0] == 0, ctx.steps); /* nothing started */
    json *d = error_data(e);
    const char *path = json_str(json_get(d, "path"));
    CHECK_MSG(path && strncmp(path, "agents[2].distribution.binary.", 30) == 0, e->data);
    CHECK_MSG(strlen(path) > 7 && strcmp(path + strlen(path) - 7, ".sha256") == 0, e->data);
    json_free(d);
    acph_error_free(e);

    /* A digest mismatch (a file:// archive), and a callback serving other bytes. */
    ctx_init(&ctx, SERVE, NULL, 0);
    e = install_fails(h, r, f, "badsha", &ctx, NULL, ACPH_STATUS_INVALID_CONFIG);
    CHECK_MSG(strstr(e->message, "sha256") != NULL, e->message);
    acph_error_free(e);
    /* The progress callback hears the download failed, and why; nothing is extracted. */
    CHECK(atomic_load(&ctx.calls) == 0 && !ctx.bad_report);
    CHECK_MSG(strcmp(ctx.steps, "download started;download failed;") == 0, ctx.steps);
    CHECK_MSG(strstr(ctx.failure, "sha256") != NULL, ctx.failure);
    ctx_init(&ctx, SERVE_OTHER, NULL, 0);
    e = install_fails(h, r, f, "remote-tool", &ctx, NULL, ACPH_STATUS_INVALID_CONFIG);
    CHECK(atomic_load(&ctx.calls) == 1);
    d = error_data(e);
    path = json_str(json_get(d, "path"));
    CHECK_MSG(path && strstr(path, "agents[1].distribution.binary.") == path && strstr(path, ".sha256"), e->data);
    json_free(d);
    acph_error_free(e);

    /* The callback fails: io naming the URL and its message. */
    ctx_init(&ctx, FAIL, NULL, 0);
    e = install_fails(h, r, f, "remote-tool", &ctx, NULL, ACPH_STATUS_IO);
    CHECK_MSG(strstr(e->message, "https://example.invalid/tool-0.1.0.tar.gz") != NULL, e->message);
    check_message(e, "HTTP 404 Not Found");

    /* The callback writes more than maxArchiveBytes: its write fails, the install is refused. */
    ctx_init(&ctx, SERVE, f->data, f->len);
    ctx.chunk = 16;
    e = install_fails(h, r, f, "remote-tool", &ctx, ",\"maxArchiveBytes\":64", ACPH_STATUS_INVALID_CONFIG);
    CHECK(atomic_load(&ctx.last_status) == ACPH_STATUS_IO);
    d = error_data(e);
    path = json_str(json_get(d, "path"));
    CHECK_MSG(path && strstr(path, ".archive") != NULL, e->data);
    json_free(d);
    check_message(e, "64 bytes");

    /* No callback for an https URL. */
    e = install_fails(h, r, f, "remote-tool", NULL, NULL, ACPH_STATUS_UNSUPPORTED);
    CHECK_MSG(strstr(e->message, "file://") != NULL, e->message);
    check_message(e, "fetch callback");

    /* A member named ../evil (nothing_installed: not even <cache>/hostile/0.1.0/evil). */
    e = install_fails(h, r, f, "hostile", NULL, NULL, ACPH_STATUS_INVALID_CONFIG);
    d = error_data(e);
    path = json_str(json_get(d, "path"));
    CHECK_MSG(path && strstr(path, "agents[4].distribution.binary.") == path && strstr(path, ".archive"), e->data);
    json_free(d);
    check_message(e, "..");

    /* Unknown id, unknown platform, bad options: refused before any call, finalizer run. */
    const char *o = "{\"cacheDir\":\"/tmp/x\"}";
    uint64_t call = 0;
    ctx_init(&ctx, SERVE, NULL, 0);
    EXPECT(ACPH_STATUS_NOT_FOUND,
           acph_registry_install(h, r, "nope", 4, o, strlen(o), fetch_cb, NULL, &ctx, fetch_fin, &call, ERR));
    CHECK(call == 0 && atomic_load(&ctx.finalized) == 1);
    o = "{\"cacheDir\":\"/tmp/x\",\"platform\":\"beos-m68k\"}";
    ctx_init(&ctx, SERVE, NULL, 0);
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT,
           acph_registry_install(h, r, "tool", 4, o, strlen(o), fetch_cb, NULL, &ctx, fetch_fin, &call, ERR));
    CHECK(atomic_load(&ctx.finalized) == 1);
    o = "{\"cacheDir\":\"/tmp/x\",\"maxArchiveBytes\":-1}";
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT,
           acph_registry_install(h, r, "tool", 4, o, strlen(o), NULL, NULL, NULL, NULL, &call, ERR));
    o = "{}";
    EXPECT(ACPH_STATUS_INVALID_ARGUMENT, acph_registry_install(h, r, "tool", 4, o, 2, NULL, NULL, NULL, NULL, &call, ERR));
    o = "{\"cacheDir\":";
    EXPECT(ACPH_STATUS_INVALID_JSON,
           acph_registry_install(h, r, "tool", 4, o, strlen(o), NULL, NULL, NULL, NULL, &call, ERR));
    o = "{\"cacheDir\":\"/tmp/x\"}";
    ctx_init(&ctx, SERVE, NULL, 0);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT,
           acph_registry_install(NULL, r, "tool", 4, o, strlen(o), fetch_cb, NULL, &ctx, fetch_fin, &call, ERR));
    CHECK(atomic_load(&ctx.finalized) == 1);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT,
           acph_registry_install(h, NULL, "tool", 4, o, strlen(o), NULL, NULL, NULL, NULL, &call, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_install(h, r, NULL, 4, o, strlen(o), NULL, NULL, NULL, NULL, &call, ERR));
    EXPECT(ACPH_STATUS_NULL_ARGUMENT, acph_registry_install(h, r, "tool", 4, NULL, 0, NULL, NULL, NULL, NULL, &call, ERR));
    ctx_init(&ctx, SERVE, NULL, 0);
    EXPECT(ACPH_STATUS_NULL_ARGUMENT,
           acph_registry_install(h, r, "tool", 4, o, strlen(o), fetch_cb, NULL, &ctx, fetch_fin, NULL, ERR));
    CHECK(atomic_load(&ctx.finalized) == 1);
    CHECK(call == 0);
}

/* A streaming callback: a wait that times out leaves the install running (the callback goes on
 * streaming); acph_call_cancel abandons it (waited for, then pulled as an event): its next write
 * fails `cancelled`, the install cleans up, the finalizer runs once. */
static void abandoned_installs(acph_host *h, const acph_registry *r, const fixture *f) {
    char *cache = fmt("%s/cache-abandoned", f->dir);
    char *opts = cache_opts(cache);
    fetch_ctx ctx;
    ctx_init(&ctx, STREAM, NULL, 0);
    char *out = NULL;
    uint64_t call = 0;
    EXPECT(ACPH_STATUS_OK, acph_registry_install(h, r, "remote-tool", 11, opts, strlen(opts), fetch_cb, NULL, &ctx,
                                                 fetch_fin, &call, ERR));
    EXPECT(ACPH_STATUS_TIMEOUT, acph_call_wait(h, call, 300, NULL, &out, ERR));
    uint64_t until = now_ms() + T_WAIT;
    while (!atomic_load(&ctx.streaming) && now_ms() < until) sleep_ms(5);
    CHECK(atomic_load(&ctx.streaming) && atomic_load(&ctx.finalized) == 0);
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(h, call, ERR));
    EXPECT(ACPH_STATUS_CANCELLED, acph_call_wait(h, call, T_WAIT, NULL, &out, ERR));
    CHECK(out == NULL);
    wait_finalized(&ctx);
    CHECK(atomic_load(&ctx.last_status) == ACPH_STATUS_CANCELLED);
    nothing_installed(cache, "remote-tool");

    ctx_init(&ctx, STREAM, NULL, 0);
    event_list evs = {0};
    EXPECT(ACPH_STATUS_OK, acph_registry_install(h, r, "remote-tool", 11, opts, strlen(opts), fetch_cb, NULL, &ctx,
                                                 fetch_fin, &call, ERR));
    until = now_ms() + T_WAIT;
    while (!atomic_load(&ctx.streaming) && now_ms() < until) sleep_ms(5);
    CHECK(atomic_load(&ctx.streaming));
    EXPECT(ACPH_STATUS_OK, acph_call_cancel(h, call, ERR));
    const acph_event *done = wait_call(h, &evs, call, T_WAIT);
    char *kind = NULL;
    CHECK(!call_result(done, &kind, NULL));
    CHECK_MSG(kind && strcmp(kind, "cancelled") == 0, kind);
    free(kind);
    events_free(&evs);
    wait_finalized(&ctx);
    CHECK(atomic_load(&ctx.last_status) == ACPH_STATUS_CANCELLED);
    nothing_installed(cache, "remote-tool");
    free(opts);
    free(cache);
}

int main(void) {
    fixture_loads_and_lists();
    fixture_resolves();
    bad_documents_and_arguments();

    fixture f = make_fixture();
    acph_registry *r = load_text(f.registry);
    acph_host *h = make_host("{\"shutdownGraceMs\":500}");
    install_then_spawn(h, r, &f);
    install_through_the_callback(h, r, &f);
    failed_installs(h, r, &f);
    abandoned_installs(h, r, &f);
    acph_host_free(h);
    acph_registry_free(r);
    free_fixture(&f);
    printf("test_registry: ok\n");
    return 0;
}
