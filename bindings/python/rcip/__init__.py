"""rcip: the RCIP 1.0 capability runtime, from Python (ctypes over librcip).

    import rcip

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
from ._mcp import McpSession
from ._runtime import (
    Binding,
    CancelToken,
    Catalog,
    Client,
    Host,
    Invocation,
    PendingOutcome,
    PolicyRequest,
    Runtime,
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
    NotInCatalogError,
    NullArgumentError,
    PanicError,
    PreflightBatchInvalidError,
    PrimaryNotActiveError,
    RcipError,
    Result,
    UnknownScopeError,
    WrongContextError,
    result_str,
)
from ._schema import DeclarationError, Field, named, to_json
from .types import (
    Availability,
    CatalogProblem,
    CatalogReport,
    Confirmation,
    ConfirmationNotice,
    Decision,
    Effect,
    Event,
    ManualClock,
    Outcome,
    OutcomeError,
    PreflightOutcome,
    PreflightReport,
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
    "Event",
    "Host",
    "InvalidArgumentError",
    "InvalidCatalogError",
    "InvalidJsonError",
    "InvalidUtf8Error",
    "Invocation",
    "ManualClock",
    "McpSession",
    "NotInCatalogError",
    "NullArgumentError",
    "Outcome",
    "OutcomeError",
    "PanicError",
    "PendingOutcome",
    "PolicyRequest",
    "PreflightBatchInvalidError",
    "PreflightOutcome",
    "PreflightReport",
    "PrimaryNotActiveError",
    "Proposal",
    "RawJson",
    "RcipError",
    "Result",
    "Runtime",
    "Schema",
    "Snapshot",
    "Status",
    "Subscription",
    "UnknownScopeError",
    "ValidationIssue",
    "ValidationResult",
    "WrongContextError",
    "abi_version",
    "allow",
    "confirm",
    "deny",
    "library_path",
    "library_version",
    "result_str",
]
