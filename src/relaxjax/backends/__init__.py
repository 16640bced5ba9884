"""relaxjax.backends: code generation for kernels (``llvm/`` for CPU, ``cuda/`` for GPU)."""

from .dispatch import build

__all__ = ["build"]
