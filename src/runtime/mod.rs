//! The runtime state machine.
