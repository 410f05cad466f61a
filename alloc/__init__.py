"""alloc: an optimization-based batch allocator for shared GPU training clusters."""

__version__ = "0.1.0"
