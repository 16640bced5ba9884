"""relaxjax.runtime: executables that run a graph program for any value of its symbols.

:func:`build_executable` turns an :class:`~relaxjax.ir.IRModule` into an
:class:`Executable`: ``exe(*flat_args) -> tuple of numpy arrays``. Arguments are
checked (rank, dtype, static dims, symbolic relations, declared bounds) and every
run-time shape check is evaluated before any kernel runs. ``exe.profile(*flat_args)``
runs once, timed kernel by kernel (:mod:`relaxjax.runtime.profiling`).
"""

from relaxjax.runtime.executable import Executable, build_executable, entry_function
from relaxjax.runtime.profiling import Profile, ProfileRow

__all__ = ["Executable", "Profile", "ProfileRow", "build_executable", "entry_function"]
