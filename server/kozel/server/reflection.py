"""gRPC server reflection that also finds method symbols.

The Python reflection service asks the descriptor pool for the file containing a symbol, and
the pool does not index methods (grpc/grpc#34743), so ``grpcurl describe
kozel.v1.RefereeService.Play`` fails. This servicer answers a method name with its service's
file, which is what reflection clients then read the method from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc


class MethodAwareReflection(reflection.aio.ReflectionServicer):
    """The stock aio reflection servicer, plus ``Service.Method`` symbols."""

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        pool = self._pool
        service, _, method = fully_qualified_name.rpartition(".")
        try:
            pool.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            try:
                found = pool.FindServiceByName(service)
            except KeyError:
                found = None
            if found is not None and method in found.methods_by_name:
                fully_qualified_name = service
        return super()._file_containing_symbol(request, fully_qualified_name)


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection for ``service_names`` on ``server``."""
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        MethodAwareReflection(tuple(service_names)), server
    )
