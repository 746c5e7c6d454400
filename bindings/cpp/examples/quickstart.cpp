// quickstart.cpp: the smallest C++ host. A catalog with one read capability,
// a handler bound for the scope of a block (the Binding unbinds when it is
// destroyed), a policy written as a lambda, one good call, one bad input,
// and a handler that throws (an outcome, never a crash).
#include <rcip/rcip.hpp>

#include <iostream>
#include <stdexcept>

static const char *CATALOG = R"({
  "protocolVersion": "1.0",
  "application": {"id": "greeter", "name": "Greeter", "description": "Says hello."},
  "scopes": [],
  "capabilities": [{
    "id": "greeting.say", "title": "Say hello", "description": "Greets someone by name.",
    "scopeIds": [], "effect": "read",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"], "additionalProperties": false},
    "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]})";

int main() {
    try {
        rcip::Catalog catalog(CATALOG);
        rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                    .policy([](rcip::PolicyRequest &request) {
                                        return request.effect() == "read" ? rcip::Decision::allow()
                                                                          : rcip::Decision::deny("read-only host");
                                    })
                                    .build();
        rcip::Client client = runtime.client();
        {
            // The handler returns the output JSON text; the binding lives for this block.
            rcip::Binding binding = runtime.host().bind("greeting.say", [](rcip::Invocation &inv) {
                std::string name = rcip::json::string_member(inv.input(), "name");
                return "{\"text\": " + rcip::json::quote("hello, " + name) + "}";
            });
            rcip::Outcome ok = client.invoke("greeting.say", R"({"name": "Ada"})").get();
            std::cout << "good input  -> " << ok.json << "\n";
            rcip::Outcome bad = client.invoke("greeting.say", R"({"name": ""})").get();
            std::cout << "bad input   -> " << bad.error_code << "\n";
        }
        std::cout << "after unbind -> " << client.invoke("greeting.say", R"({"name": "Ada"})").get().error_code << "\n";

        rcip::Binding throwing = runtime.host().bind("greeting.say", [](rcip::Invocation &) -> std::string {
            throw std::runtime_error("the database is down");
        });
        std::cout << "throwing    -> " << client.invoke("greeting.say", R"({"name": "Bo"})").get().error_code << "\n";
        return 0;
    } catch (const rcip::Error &e) {
        std::cerr << "rcip error " << e.code() << ": " << e.what() << "\n";
        return 1;
    }
}
