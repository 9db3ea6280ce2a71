"""paperscope: ask questions of a pile of research papers."""

from .backend_logs import quiet_grpc

# Before anything of paperscope imports grpc (through pymilvus): its C core reads its log level only then.
quiet_grpc()

__version__ = "0.1.0"
