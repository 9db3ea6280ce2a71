"""paperscope: ask questions of a pile of research papers."""

__version__ = "0.1.0"
