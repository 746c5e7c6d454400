/*
 * http_server.c: a C host that serves MCP over Streamable HTTP (issue 14):
 * it creates a server with a session factory, starts it, talks to it over
 * a plain socket on 127.0.0.1 (initialize, a tools/call answered on an SSE
 * stream, a call left pending in a deferred handler), reaches the session's
 * runtime through rcip_mcp_server_session_find, shuts the server down and
 * frees everything. Run by `make test-c-tests`, under ASan/UBSan/LSan
 * (`make test-asan`) and valgrind (`make valgrind-c`), so the server's
 * threads, the factory's per-session data and the runtime's teardown are
 * checked for leaks and memory errors.
 *
 * Checks: every session user data is released exactly once, after the
 * runtime closed; the pending call's invocation ends EXECUTION_ABORTED at
 * shutdown; a host call through a session handle after the session ended
 * answers RCIP_RESULT_CLOSED; the factory's user data is released once at
 * the server's free; a failing bind gives RCIP_RESULT_IO and calls nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "rcip.h"

static _Atomic int failures;

#define CHECK(cond, what)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            atomic_fetch_add(&failures, 1);                                            \
            fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, what, #cond); \
        }                                                                              \
    } while (0)

#define OK(call)                                                                                          \
    do {                                                                                                  \
        rcip_result rc_ = (call);                                                                         \
        if (rc_ != RCIP_RESULT_OK) {                                                                      \
            atomic_fetch_add(&failures, 1);                                                               \
            fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, rcip_result_str(rc_), \
                    rcip_last_error_message() ? rcip_last_error_message() : "");                         \
        }                                                                                                 \
    } while (0)

static const char *CATALOG =
    "{\"protocolVersion\":\"1.0\","
    "\"application\":{\"id\":\"httptest\",\"name\":\"HTTP test\",\"description\":\"Tests.\"},"
    "\"scopes\":[],"
    "\"capabilities\":["
    "{\"id\":\"echo.now\",\"title\":\"Echo\",\"description\":\"Echoes.\",\"scopeIds\":[],\"effect\":\"read\","
    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"}},"
    "{\"id\":\"echo.later\",\"title\":\"Echo later\",\"description\":\"Echoes later.\",\"scopeIds\":[],"
    "\"effect\":\"read\",\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"}}]}";

typedef struct host {
    rcip_catalog *catalog;
    pthread_mutex_t mutex;
    rcip_invocation *pending; /* echo.later's handle, settled by nobody */
    atomic_int sessions_created;
    atomic_int sessions_released;
    atomic_int factory_released;
    atomic_int aborted_events;
    const rcip_host *view; /* the host view the factory took before accept */
} host;

typedef struct session_data {
    host *h;
    rcip_binding *now;
    rcip_binding *later;
    atomic_int closed_seen; /* the runtime was closed before the release */
} session_data;

static void on_echo_now(void *user_data, rcip_invocation *invocation)
{
    (void)user_data;
    OK(rcip_invocation_complete(invocation, "{\"echo\":true}"));
    rcip_invocation_free(invocation);
}

static void on_echo_later(void *user_data, rcip_invocation *invocation)
{
    host *h = user_data;
    pthread_mutex_lock(&h->mutex);
    h->pending = invocation; /* deferred: kept, settled by the shutdown */
    pthread_mutex_unlock(&h->mutex);
}

static void on_event(void *user_data, const char *event_json)
{
    host *h = user_data;
    if (strstr(event_json, "EXECUTION_ABORTED")) {
        atomic_fetch_add(&h->aborted_events, 1);
    }
}

static void release_session(void *user_data)
{
    session_data *s = user_data;
    /* The runtime is closed by now: its bindings answer CLOSED. */
    atomic_store(&s->closed_seen, rcip_binding_set_revision(s->now, 7) == RCIP_RESULT_CLOSED);
    CHECK(atomic_load(&s->closed_seen), "the runtime is closed before the session data goes");
    rcip_binding_free(s->now);
    rcip_binding_free(s->later);
    atomic_fetch_add(&s->h->sessions_released, 1);
    free(s);
}

static void release_factory(void *user_data)
{
    host *h = user_data;
    atomic_fetch_add(&h->factory_released, 1);
}

static int32_t factory(void *user_data, rcip_mcp_session_setup *setup)
{
    host *h = user_data;
    CHECK(strlen(rcip_mcp_session_setup_session_id(setup)) == 32, "a 128-bit session id");
    const char *name = rcip_mcp_session_setup_client_name(setup);
    CHECK(name && strcmp(name, "c-test") == 0, "the client's name");
    CHECK(strstr(rcip_mcp_session_setup_initialize_params(setup), "\"protocolVersion\"") != NULL,
          "the initialize params");
    const char *token = rcip_mcp_session_setup_header(setup, "Authorization");
    CHECK(token && strcmp(token, "Bearer t0ken") == 0, "a forwarded header");
    CHECK(rcip_mcp_session_setup_header(setup, "user-agent") == NULL, "only forwarded headers");

    rcip_runtime_builder *b = NULL;
    rcip_runtime *runtime = NULL;
    OK(rcip_runtime_builder_new(h->catalog, &b));
    OK(rcip_runtime_builder_add_event_observer(b, on_event, h, NULL));
    OK(rcip_runtime_builder_build(b, &runtime));
    session_data *s = calloc(1, sizeof *s);
    s->h = h;
    const rcip_host *hv = rcip_runtime_host(runtime);
    OK(rcip_host_bind(hv, "echo.now", on_echo_now, NULL, NULL, NULL, &s->now));
    OK(rcip_host_bind(hv, "echo.later", on_echo_later, NULL, h, NULL, &s->later));
    if (rcip_mcp_session_setup_accept(setup, runtime, s, release_session) != RCIP_RESULT_OK) {
        free(s);
        return 1;
    }
    h->view = hv; /* still valid: the runtime keeps its address in the session */
    atomic_fetch_add(&h->sessions_created, 1);
    return 0;
}

/* One HTTP/1.1 request on a fresh connection; the whole response (the
 * server closes SSE streams once their answers are written) into `out`. */
static size_t http(int port, const char *method, const char *session, const char *extra, const char *body,
                   char *out, size_t out_size, int read_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect to the server");
    struct timeval tv = {read_ms / 1000, (read_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\nConnection: close\r\n%s%s%s%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     method, port, session ? "Mcp-Session-Id: " : "", session ? session : "",
                     session ? "\r\n" : "", extra ? extra : "", strlen(body), body);
    CHECK(write(fd, req, (size_t)n) == n, "send the request");
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, out + got, out_size - 1 - got);
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    out[got] = '\0';
    close(fd);
    return got;
}

int main(void)
{
    host h;
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.mutex, NULL);
    OK(rcip_catalog_new(CATALOG, &h.catalog));

    /* An address beyond loopback without the auth option: refused before
     * anything is bound, and neither callback runs. */
    rcip_mcp_server *server = NULL;
    CHECK(rcip_mcp_server_new(h.catalog, "192.0.2.1:1", NULL, factory, &h, release_factory, &server) ==
              RCIP_RESULT_INVALID_ARGUMENT,
          "an exposed address needs authorization");
    CHECK(strstr(rcip_last_error_message(), "without authorization") != NULL, "the message says why");
    CHECK(server == NULL && atomic_load(&h.factory_released) == 0, "nothing kept, nothing released");
    /* With the explicit opt-out, an address that cannot be bound: IO. */
    CHECK(rcip_mcp_server_new(h.catalog, "192.0.2.1:1", "{\"allowUnauthenticated\": true}", factory, &h,
                              release_factory, &server) == RCIP_RESULT_IO,
          "a non-local address is IO");
    CHECK(server == NULL && atomic_load(&h.factory_released) == 0, "nothing kept, nothing released");
    CHECK(rcip_mcp_server_new(h.catalog, "not an address", NULL, factory, &h, NULL, &server) ==
              RCIP_RESULT_INVALID_ARGUMENT,
          "a bad address");
    CHECK(rcip_mcp_server_new(h.catalog, "127.0.0.1:0", "{\"nope\":1}", factory, &h, NULL, &server) ==
              RCIP_RESULT_INVALID_ARGUMENT,
          "an unknown option");
    CHECK(rcip_mcp_server_new(h.catalog, "127.0.0.1:0", NULL, NULL, &h, NULL, &server) ==
              RCIP_RESULT_NULL_ARGUMENT,
          "no factory");

    OK(rcip_mcp_server_new(h.catalog, "127.0.0.1:0", "{\"forwardHeaders\":[\"authorization\"]}", factory, &h,
                           release_factory, &server));
    char *url = NULL;
    OK(rcip_mcp_server_url(server, &url));
    int port = 0;
    CHECK(sscanf(url, "http://127.0.0.1:%d/mcp", &port) == 1 && port > 0, "the bound port");
    OK(rcip_mcp_server_start(server));
    CHECK(rcip_mcp_server_start(server) == RCIP_RESULT_ALREADY_USED, "started once");

    static char resp[65536];
    http(port, "POST", NULL, "Authorization: Bearer t0ken\r\n",
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
         "\"capabilities\":{},\"clientInfo\":{\"name\":\"c-test\",\"version\":\"1\"}}}",
         resp, sizeof resp, 5000);
    CHECK(strstr(resp, "HTTP/1.1 200") == resp, "initialize answered");
    char sid[64] = "";
    const char *at = strstr(resp, "mcp-session-id: ");
    CHECK(at != NULL, "a session id header");
    if (at) {
        sscanf(at + strlen("mcp-session-id: "), "%63[0-9a-f]", sid);
    }
    CHECK(atomic_load(&h.sessions_created) == 1, "the factory ran once");

    http(port, "POST", sid, NULL, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", resp,
         sizeof resp, 5000);
    CHECK(strstr(resp, "HTTP/1.1 202") == resp, "a notification is 202");

    http(port, "POST", sid, NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo.now\"}}", resp,
         sizeof resp, 5000);
    CHECK(strstr(resp, "text/event-stream") != NULL, "tools/call answered on an SSE stream");
    CHECK(strstr(resp, "\\\"echo\\\":true") != NULL || strstr(resp, "\"echo\":true") != NULL,
          "the structured result");

    /* A call left pending: the connection times out on our side after 300 ms. */
    http(port, "POST", sid, NULL,
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo.later\"}}", resp,
         sizeof resp, 300);
    pthread_mutex_lock(&h.mutex);
    CHECK(h.pending != NULL, "the deferred handler holds the call");
    pthread_mutex_unlock(&h.mutex);

    /* The view taken before accept is the session's runtime (ASan would see
     * a use after free if accept had moved the runtime). */
    OK(rcip_host_refresh(h.view));
    /* The host reaches the session's runtime by id. */
    char *list = NULL;
    OK(rcip_mcp_server_sessions(server, &list));
    CHECK(list && strstr(list, sid) != NULL, "the session is listed");
    rcip_string_free(list);
    rcip_mcp_server_session *handle = NULL;
    OK(rcip_mcp_server_session_find(server, sid, &handle));
    CHECK(rcip_mcp_server_session_user_data(handle) != NULL, "the session's user data");
    OK(rcip_host_refresh(rcip_mcp_server_session_host(handle)));
    const rcip_snapshot *snap = NULL;
    OK(rcip_client_snapshot(rcip_mcp_server_session_client(handle), &snap));
    rcip_snapshot_free(snap);
    rcip_mcp_server_session *none = NULL;
    CHECK(rcip_mcp_server_session_find(server, "0123", &none) == RCIP_RESULT_NOT_FOUND && none == NULL,
          "an unknown session");

    /* Shutdown: the session ends, its pending call is aborted. */
    OK(rcip_mcp_server_shutdown(server, 2000));
    CHECK(atomic_load(&h.sessions_released) == 1, "the session data released once");
    CHECK(atomic_load(&h.aborted_events) >= 1, "the pending call ended EXECUTION_ABORTED");
    /* The handle outlives the session: its runtime answers CLOSED. */
    CHECK(rcip_host_refresh(rcip_mcp_server_session_host(handle)) == RCIP_RESULT_CLOSED,
          "a late host call answers CLOSED");
    rcip_mcp_server_session_free(handle);
    OK(rcip_mcp_server_shutdown(server, 0)); /* idempotent */
    rcip_mcp_server_free(server);
    CHECK(atomic_load(&h.factory_released) == 1, "the factory's data released at the free");

    /* The deferred handle is still ours: settling it now is harmless. */
    rcip_invocation_complete(h.pending, "{}");
    rcip_invocation_free(h.pending);
    rcip_string_free(url);
    rcip_catalog_free(h.catalog);
    pthread_mutex_destroy(&h.mutex);
    int n = atomic_load(&failures);
    printf("http_server: %s\n", n ? "FAILED" : "ok");
    return n ? 1 : 0;
}
