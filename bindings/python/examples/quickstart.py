"""quickstart.py: the smallest Python host (the README example, runnable).

A one-capability catalog, a handler bound with `with` (unbound when the
block ends), a policy, one good call, one invalid input, a handler that
raises, and an asyncio host with a coroutine handler.
"""

import asyncio

import rcip

CATALOG = {
    "protocolVersion": "1.0",
    "application": {"id": "greeter", "name": "Greeter", "description": "Says hello."},
    "scopes": [],
    "capabilities": [
        {
            "id": "greeting.say",
            "title": "Say hello",
            "description": "Greets someone by name.",
            "scopeIds": [],
            "effect": "read",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
                "additionalProperties": False,
            },
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        }
    ],
}


def hello(invocation: rcip.Invocation):
    return {"text": "hello, " + invocation.input["name"]}  # the output; raise to fail


def policy(request: rcip.PolicyRequest):
    return "allow" if request.effect == "read" else rcip.deny("read-only host")


runtime = rcip.Runtime(CATALOG, policy=policy, on_event=lambda e: print("  event", e.phase, e.error_code or ""))
with runtime.host.bind("greeting.say", hello):
    outcome = runtime.client.invoke("greeting.say", {"name": "Ada"})
    print("good input  ->", outcome.status, outcome.output)
    outcome = runtime.client.invoke("greeting.say", {"name": ""})
    print("bad input   ->", outcome.status, outcome.code, [i.instance_path for i in outcome.error.validation_issues])
print("after unbind ->", runtime.client.invoke("greeting.say", {"name": "Ada"}).code)


def broken(invocation):
    raise RuntimeError("the database is down")  # logged for the host; the consumer sees a code


runtime = rcip.Runtime(CATALOG, on_error=lambda exc, where: print("  host log:", where, "raised", repr(exc)))
runtime.host.bind("greeting.say", broken)
print("raising     ->", runtime.client.invoke("greeting.say", {"name": "Bo"}).code)
runtime.close()


async def main():
    runtime = rcip.Runtime(CATALOG)  # coroutine callbacks run on the loop running now

    async def slow_hello(invocation):
        await asyncio.sleep(0.01)
        return {"text": "hello from asyncio, " + invocation.input["name"]}

    runtime.host.bind("greeting.say", slow_hello)
    outcome = await runtime.client.invoke_async("greeting.say", {"name": "Cy"})
    print("asyncio     ->", outcome.status, outcome.output)
    runtime.close()


asyncio.run(main())
