"""A scripted Anthropic Messages API on 127.0.0.1 that plays a model and every failure."""
