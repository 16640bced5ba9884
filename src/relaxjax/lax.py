"""``relaxjax.lax``: jax.lax's control flow and dynamic slicing, compiled as graph control flow.

Use it as ``import relaxjax.lax as lax``, with jax.lax's signatures and semantics::

    @relax.jit
    def power_sum(x: relax.Tensor(("n",), "float32")):
        # one executable for every n; the loop runs n times at run time
        return lax.fori_loop(0, x.shape[0], lambda i, acc: acc + x ** i, rnp.zeros_like(x))

- branches: :func:`cond`, :func:`switch` (index clamped into range);
- loops: :func:`fori_loop` (bounds may be ints, symbolic dims or traced integers),
  :func:`while_loop`, :func:`scan` (over a leading axis that may be symbolic);
- windows at run-time offsets: :func:`dynamic_slice`, :func:`dynamic_update_slice`
  (in place when the operand is dead afterwards), and their ``_in_dim`` / index forms;
- elementwise math with jax.lax's dtype rules (no implicit promotion; floating functions
  refuse integers): ``exp log tanh erf erfc erf_inv logistic rsqrt ... add sub mul div rem
  max min pow clamp select convert_element_type`` and the comparisons ``eq ne lt le gt ge``;
- sorting: :func:`top_k` (the ``k`` largest along an axis, ``k`` may be a symbolic dim).

Each branch or loop body is traced once into a function of the compiled module and
called at run time: nothing is unrolled, and the trip counts and predicates are run-time
values. Loop carries keep their structure, shapes and dtypes, as in jax (a ``TypeError``
names the carry a body changes). The implementation lives in ``relaxjax._lax``.
"""

from relaxjax._lax import control as _control
from relaxjax._lax import elementwise as _elementwise
from relaxjax._lax import slicing as _slicing
from relaxjax._lax import sorting as _sorting
from relaxjax._lax.control import *  # noqa: F403
from relaxjax._lax.elementwise import *  # noqa: F403
from relaxjax._lax.slicing import *  # noqa: F403
from relaxjax._lax.sorting import *  # noqa: F403

__all__ = sorted({*_control.__all__, *_elementwise.__all__, *_slicing.__all__, *_sorting.__all__})


def __dir__() -> list[str]:
    return list(__all__)
