"""Clients of the public API: the remote bot player used by the demo, tests and load tests."""
