"""How the generated code refers to the program's tensors.

At build time each graph value becomes a :class:`Value`: where its data is (a local
holding a numpy array, or an address inside the memory arena), and Python source
for each of its dims. Aliases (``y = x``, ``match_cast``, tuple items) share the
storage of the value they name, with possibly more precise dims.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from relaxjax.ir import TensorInfo

__all__ = ["Storage", "Value", "ViewCode"]


@dataclass(frozen=True, slots=True, eq=False)
class Storage:
    """One buffer of the program, compared by identity.

    ``kind`` is ``"param"`` (an argument), ``"constant"``, ``"scalar"`` (a symbolic scalar
    computed per call), ``"kernel"`` (a call's result: its own numpy array when it is
    returned, else a slice of the per-call arena) or ``"call"`` (an array a called graph
    function allocated and returned, its shape only known once it ran).
    """

    kind: str
    index: int


@dataclass(frozen=True, slots=True)
class ViewCode:
    """Where a view's elements sit in its base's memory: source for each stride and for
    the offset, in elements."""

    strides: tuple[str, ...]
    offset: str


@dataclass(frozen=True, slots=True)
class Value:
    """A tensor as the generated code sees it.

    ``ref`` is source for the data: a numpy array when ``by_object`` (the launcher
    reads its data pointer natively), else an int address. ``shape`` holds source
    for each dim; ``info`` is the static struct info (dims may be coarser). ``view``:
    the value reads its storage (its base's) through a layout rather than row-major
    from its start.
    """

    info: TensorInfo
    shape: tuple[str, ...]
    ref: str
    by_object: bool
    storage: Storage
    view: ViewCode | None = None

    @property
    def shape_code(self) -> str:
        """Source of the shape tuple."""
        return "(" + "".join(f"{d}, " for d in self.shape) + ")"

    def with_shape(self, info: TensorInfo, shape: tuple[str, ...]) -> Value:
        """The same storage seen with other dims (an alias, e.g. after ``match_cast``)."""
        return replace(self, info=info, shape=shape)
