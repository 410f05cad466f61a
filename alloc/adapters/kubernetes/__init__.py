"""The Kubernetes executor (issue 16): nodes and the pods `alloc` manages in, bindings,
evictions and cordons out."""
