"""Kozel Arena referee service (grpc.aio)."""
