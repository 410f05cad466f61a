"""The controller: rounds beside a real cluster manager, with durable state."""

from alloc.controller.loop import Controller, RoundOutcome
from alloc.controller.state import Run, StateStore

__all__ = ["Controller", "RoundOutcome", "Run", "StateStore"]
