"""The runner that executes the domain's decisions, and the use cases around it."""
