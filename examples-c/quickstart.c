/*
 * quickstart.c: the smallest complete rcip host.
 *
 * Loads a one-capability catalog, binds a synchronous handler, lets a
 * consumer invoke it twice (one good call, one invalid input) and frees
 * everything. Shows the basic ownership rules:
 *   - handles created through `*_out` parameters are freed with their
 *     `*_free` function;
 *   - the handler owns the completion handle it receives: settle it once,
 *     then free it;
 *   - strings the library returns through `char **` are freed with
 *     rcip_string_free; strings lent to callbacks are valid during the call.
 */
#include <stdio.h>
#include <string.h>

#include "rcip.h"

static const char *CATALOG =
    "{\"protocolVersion\": \"1.0\","
    " \"application\": {\"id\": \"greeter\", \"name\": \"Greeter\", \"description\": \"Says hello.\"},"
    " \"scopes\": [],"
    " \"capabilities\": [{"
    "   \"id\": \"greeting.say\", \"title\": \"Say hello\", \"description\": \"Greets someone by name.\","
    "   \"scopeIds\": [], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"minLength\": 1}},"
    "                     \"required\": [\"name\"], \"additionalProperties\": false},"
    "   \"outputSchema\": {\"type\": \"object\", \"properties\": {\"text\": {\"type\": \"string\"}},"
    "                      \"required\": [\"text\"]}}]}";

/* Fails the program with the library's message. */
static int check(rcip_result rc, const char *what) {
    if (rc != RCIP_RESULT_OK) {
        const char *detail = rcip_last_error_message();
        fprintf(stderr, "%s failed: %s (%s)\n", what, rcip_result_str(rc), detail ? detail : "");
        return 1;
    }
    return 0;
}

/* The handler: reads its input copy, completes inline, frees its handle.
 * A real host would parse the input with its JSON library; this one only
 * echoes it back inside a greeting. */
static void say_hello(void *user_data, rcip_invocation *invocation) {
    int *calls = user_data;
    char output[512];
    (*calls)++;
    snprintf(output, sizeof output, "{\"text\": \"hello, the input was %zu bytes\"}",
             strlen(rcip_invocation_input(invocation)));
    if (rcip_invocation_complete(invocation, output) != RCIP_RESULT_OK) {
        fprintf(stderr, "complete: %s\n", rcip_last_error_message());
    }
    rcip_invocation_free(invocation);
}

/* The consumer's outcome callback: called exactly once per invocation. */
static void print_outcome(void *user_data, const char *outcome_json) {
    printf("%s -> %s\n", (const char *)user_data, outcome_json);
}

int main(void) {
    rcip_catalog *catalog = NULL;
    rcip_runtime_builder *builder = NULL;
    rcip_runtime *runtime = NULL;
    rcip_binding *binding = NULL;
    int calls = 0;
    int failed = 1;

    if (check(rcip_catalog_new(CATALOG, &catalog), "rcip_catalog_new")) goto done;
    if (check(rcip_runtime_builder_new(catalog, &builder), "rcip_runtime_builder_new")) goto done;
    /* build consumes the builder, on success and failure alike */
    if (check(rcip_runtime_builder_build(builder, &runtime), "rcip_runtime_builder_build")) goto done;
    /* the runtime keeps its own reference to the catalog */
    rcip_catalog_free(catalog);
    catalog = NULL;

    if (check(rcip_host_bind(rcip_runtime_host(runtime), "greeting.say", say_hello, NULL, &calls, NULL, &binding),
              "rcip_host_bind"))
        goto done;

    const rcip_client *client = rcip_runtime_client(runtime);
    /* the outcome arrives before rcip_client_invoke returns: the handler
     * and the default policy (read: allow) are synchronous */
    if (check(rcip_client_invoke(client, "greeting.say", "{\"name\": \"Ada\"}", NULL, NULL, print_outcome,
                                 "good call", NULL, NULL),
              "rcip_client_invoke"))
        goto done;
    /* invalid input is an outcome (INPUT_INVALID with issues), not an error code */
    if (check(rcip_client_invoke(client, "greeting.say", "{\"name\": \"\"}", NULL, NULL, print_outcome,
                                 "empty name", NULL, NULL),
              "rcip_client_invoke"))
        goto done;

    char *outcome = NULL;
    if (check(rcip_client_invoke_blocking(client, "greeting.say", "not json", NULL, NULL, &outcome),
              "rcip_client_invoke_blocking"))
        goto done;
    printf("not json -> %s\n", outcome);
    rcip_string_free(outcome);

    failed = calls != 1;
    if (failed) fprintf(stderr, "expected exactly one handler call, got %d\n", calls);

done:
    rcip_binding_free(binding); /* unbinds if still installed */
    rcip_runtime_free(runtime);
    rcip_catalog_free(catalog);
    return failed;
}
