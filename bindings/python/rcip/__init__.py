"""rcip: the RCIP 1.0 capability runtime, from Python (ctypes over librcip).
Python 3.9 or later.

    import rcip
    from typing import Annotated

    app = rcip.App("greeter", name="Greeter", description="Says hello.")

    @app.capability(effect="read")
    def say(name: Annotated[str, rcip.Field(min_length=1)]) -> str:
        '''Say hello

        Greets someone by name.'''
        return "hello " + name

    with app.runtime() as runtime:                  # handlers bound
        print(runtime.client.invoke("say", {"name": "Ada"}).output)

    # Or by hand, from a catalog written as JSON:

    runtime = rcip.Runtime(catalog_dict)
    with runtime.host.bind("greeting.say", lambda inv: {"text": "hello " + inv.input["name"]}):
        outcome = runtime.client.invoke("greeting.say", {"name": "Ada"})
        print(outcome.status, outcome.output)

    # Serve the runtime to any MCP client over stdio (docs/MCP.md):
    rcip.McpSession(runtime).serve_stdio()

See the README (sections "Python" and "Installing") for the full tour.
"""

from ._app import App, ApprovalCheck, Capability, Example, Scope
from ._lib import EXPECTED_ABI_VERSION
from ._http import McpHttpServer, SessionRuntime, SessionSetup, TokenRefused, TokenVerifier
from ._mcp import McpSession, RequestSetup
from ._serve import ServeOptions
from ._runtime import (
    AvailabilityCheck,
    Binding,
    CancelToken,
    Catalog,
    Client,
    Handler,
    Host,
    Invocation,
    PendingOutcome,
    Policy,
    PolicyAnswer,
    PolicyRequest,
    Runtime,
    RuntimeOptions,
    Schema,
    Subscription,
    abi_version,
    library_path,
    library_version,
)
from .errors import (
    Aborted,
    AlreadyBoundError,
    AlreadyCompletedError,
    AlreadyUsedError,
    ClosedError,
    DeadlockError,
    InvalidArgumentError,
    InvalidCatalogError,
    InvalidJsonError,
    InvalidUtf8Error,
    IoError,
    UnsupportedError,
    NotFoundError,
    NotInCatalogError,
    NullArgumentError,
    PanicError,
    PreflightBatchInvalidError,
    PrimaryNotActiveError,
    RcipError,
    Result,
    UnknownScopeError,
    WrongContextError,
    TimedOutError,
    result_str,
)
from ._schema import DeclarationError, Field, JsonValue, named, to_json
from .types import (
    Availability,
    CatalogProblem,
    CatalogReport,
    CloseReason,
    Confirmation,
    ConfirmationNotice,
    Decision,
    DecisionName,
    Effect,
    ElicitResult,
    Event,
    ManualClock,
    Outcome,
    OutcomeError,
    Phase,
    PreflightOutcome,
    Progress,
    PreflightReport,
    PreflightStatus,
    Proposal,
    RawJson,
    Snapshot,
    Status,
    ValidationIssue,
    ValidationResult,
    allow,
    confirm,
    deny,
)

__version__ = "0.1.0"

__all__ = [
    "EXPECTED_ABI_VERSION",
    "Aborted",
    "App",
    "ApprovalCheck",
    "Capability",
    "DeclarationError",
    "Example",
    "Field",
    "Scope",
    "ServeOptions",
    "named",
    "to_json",
    "AlreadyBoundError",
    "AlreadyCompletedError",
    "AlreadyUsedError",
    "Availability",
    "Binding",
    "CancelToken",
    "Catalog",
    "CatalogProblem",
    "CatalogReport",
    "Client",
    "ClosedError",
    "Confirmation",
    "ConfirmationNotice",
    "DeadlockError",
    "Decision",
    "Effect",
    "ElicitResult",
    "Event",
    "Host",
    "InvalidArgumentError",
    "InvalidCatalogError",
    "InvalidJsonError",
    "InvalidUtf8Error",
    "Invocation",
    "ManualClock",
    "McpSession",
    "RequestSetup",
    "McpHttpServer",
    "SessionRuntime",
    "SessionSetup",
    "TokenRefused",
    "TokenVerifier",
    "IoError",
    "UnsupportedError",
    "NotFoundError",
    "NotInCatalogError",
    "NullArgumentError",
    "Outcome",
    "OutcomeError",
    "PanicError",
    "PendingOutcome",
    "PolicyRequest",
    "PreflightBatchInvalidError",
    "PreflightOutcome",
    "Progress",
    "PreflightReport",
    "PrimaryNotActiveError",
    "Proposal",
    "RawJson",
    "RcipError",
    "Result",
    "Runtime",
    "RuntimeOptions",
    "Schema",
    "Snapshot",
    "Status",
    "Subscription",
    "UnknownScopeError",
    "ValidationIssue",
    "ValidationResult",
    "WrongContextError",
    "TimedOutError",
    "abi_version",
    "allow",
    "confirm",
    "deny",
    "library_path",
    "library_version",
    "result_str",
    "AvailabilityCheck",
    "JsonValue",
    "CloseReason",
    "DecisionName",
    "Handler",
    "Phase",
    "Policy",
    "PolicyAnswer",
    "PreflightStatus",
]
