/* An installed-library smoke test: built with `pkg-config --cflags --libs
 * rcip` against a temporary prefix, it checks the ABI version, invokes one
 * capability and prints the outcome. Exit 0 on success. */
#include <stdio.h>
#include <string.h>

#include <rcip.h>

static const char *CATALOG =
    "{\"protocolVersion\": \"1.0\","
    " \"application\": {\"id\": \"installed\", \"name\": \"Installed\", \"description\": \"Install test.\"},"
    " \"scopes\": [],"
    " \"capabilities\": [{\"id\": \"ping\", \"title\": \"Ping\", \"description\": \"Answers pong.\","
    "   \"scopeIds\": [], \"effect\": \"read\", \"inputSchema\": {\"type\": \"object\"},"
    "   \"outputSchema\": {\"type\": \"object\", \"properties\": {\"pong\": {\"type\": \"boolean\"}},"
    "                    \"required\": [\"pong\"]}}]}";

static void pong(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    rcip_invocation_complete(invocation, "{\"pong\": true}");
    rcip_invocation_free(invocation);
}

int main(void) {
    rcip_catalog *catalog = NULL;
    rcip_runtime_builder *builder = NULL;
    rcip_runtime *runtime = NULL;
    rcip_binding *binding = NULL;
    char *outcome = NULL;
    int ok;

    if (rcip_abi_version() != RCIP_ABI_VERSION) {
        fprintf(stderr, "ABI mismatch: library %u, header %u\n", rcip_abi_version(), (unsigned)RCIP_ABI_VERSION);
        return 1;
    }
    if (rcip_catalog_new(CATALOG, &catalog) || rcip_runtime_builder_new(catalog, &builder) ||
        rcip_runtime_builder_build(builder, &runtime) ||
        rcip_host_bind(rcip_runtime_host(runtime), "ping", pong, NULL, NULL, NULL, &binding) ||
        rcip_client_invoke_blocking(rcip_runtime_client(runtime), "ping", "{}", NULL, NULL, &outcome)) {
        fprintf(stderr, "rcip: %s\n", rcip_last_error_message());
        return 1;
    }
    ok = strstr(outcome, "\"status\":\"succeeded\"") != NULL;
    printf("rcip %s: %s\n", rcip_version(), outcome);
    rcip_string_free(outcome);
    rcip_binding_free(binding);
    rcip_runtime_free(runtime);
    rcip_catalog_free(catalog);
    return ok ? 0 : 1;
}
