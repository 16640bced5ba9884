"""The table of the reductions / statistics / scans / sorting / searching / sets /
counting names of ``relaxjax.numpy`` (and ``top_k``), each checked against jax.numpy.

An entry is ``fn(m, x, y, w)`` with ``m`` the numpy-like module (``relaxjax.numpy`` or
``jax.numpy``; ``m.top_k`` is ``lax.top_k``) on ``x: (n, 4)``, ``y: (m,)`` and
``w: (4,)`` of one dtype. Entries of a *group* are compiled together, as one jitted
function returning a dict (one executable per group and dtype, for every size), so a
failure names its entry. ``sizes`` says which ``(n, m)`` a group runs at: entries that
need a non-empty row (``partition``, quantiles over all elements) sit in groups that
skip the empty sizes.

Data: small integers (many ties), and for floats NaN, +-inf and -0.0 sprinkled in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

import relaxjax.numpy as rnp
from relaxjax._numpy.sorting import top_k

F, I, B = "float32", "int32", "bool"


class JaxNumpy:
    """``jax.numpy`` with ``top_k`` (``lax.top_k``), mirroring where relaxjax has it."""

    def __getattr__(self, name: str):
        if name == "top_k":
            return jax.lax.top_k
        return getattr(jnp, name)


class RelaxNumpy:
    """``relaxjax.numpy`` with ``top_k`` (its own module until ``relaxjax.lax`` exists)."""

    def __getattr__(self, name: str):
        if name == "top_k":
            return top_k
        return getattr(rnp, name)


JNP, RNP = JaxNumpy(), RelaxNumpy()


@dataclass(frozen=True)
class Entry:
    """One checked use of a name (``names``: the jax.numpy names it covers);
    ``dynamic`` when jax cannot jit it (a result length that depends on the data)."""

    key: str
    fn: Callable
    names: tuple[str, ...]
    dynamic: bool = False


@dataclass(frozen=True)
class Group:
    """Entries compiled as one function, at ``sizes`` (``(n, m)`` pairs), per dtype."""

    name: str
    entries: tuple[Entry, ...]
    dtypes: tuple[str, ...]
    sizes: tuple[tuple[int, int], ...]


def E(key: str, fn: Callable, *names: str) -> Entry:  # noqa: N802 - a table constructor
    return Entry(key, fn, names or (key,))


def D(key: str, fn: Callable, *names: str) -> Entry:  # noqa: N802 - a table constructor
    """An entry whose result length depends on the data (jax evaluates it eagerly)."""
    return Entry(key, fn, names or (key,), dynamic=True)


ALL_SIZES = ((0, 0), (1, 1), (5, 3))
NONEMPTY = ((1, 1), (3, 5), (6, 2))
Q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])


def _quantiles(method: str) -> tuple[Entry, ...]:
    q = Q.astype(np.float32) if method == "inverted_cdf" else Q  # jax needs q in a's dtype there
    return (
        E(
            f"quantile_{method}",
            lambda m, x, y, w: m.quantile(x, q, axis=1, method=method),
            "quantile",
        ),
        E(
            f"nanquantile_{method}",
            lambda m, x, y, w: m.nanquantile(x, q[2], axis=(0, 1), method=method, keepdims=True),
            "nanquantile",
        ),
    )


REDUCTIONS = (
    E("all", lambda m, x, y, w: m.all(x, axis=1)),
    E("all_where", lambda m, x, y, w: m.all(x, axis=0, keepdims=True, where=w > 0), "all"),
    E("any", lambda m, x, y, w: m.any(x, axis=(0, 1))),
    E("any_where", lambda m, x, y, w: m.any(y, where=y != 1), "any"),
    E("amax", lambda m, x, y, w: m.amax(x, axis=1)),
    E("amin", lambda m, x, y, w: m.amin(x, axis=-1, keepdims=True)),
    E("ptp", lambda m, x, y, w: m.ptp(x, axis=1)),
    E("std", lambda m, x, y, w: m.std(x, axis=1, ddof=1)),
    E("std_where", lambda m, x, y, w: m.std(x, axis=0, where=x > 0), "std"),
    E("average", lambda m, x, y, w: m.average(x, axis=1, weights=w, returned=True)),
    E("average_plain", lambda m, x, y, w: m.average(x, axis=0, keepdims=True), "average"),
    E("nansum", lambda m, x, y, w: m.nansum(x, axis=0)),
    E("nansum_initial", lambda m, x, y, w: m.nansum(y, initial=2), "nansum"),
    E("nanprod", lambda m, x, y, w: m.nanprod(x, axis=1)),
    E("nanmean", lambda m, x, y, w: m.nanmean(x, axis=1)),
    E("nanvar", lambda m, x, y, w: m.nanvar(x, axis=0, ddof=1)),
    E("nanstd", lambda m, x, y, w: m.nanstd(x, axis=1, keepdims=True)),
    E("nanmax", lambda m, x, y, w: m.nanmax(x, axis=1)),
    E("nanmin", lambda m, x, y, w: m.nanmin(x, axis=0, initial=5)),
    E("nanargmax", lambda m, x, y, w: m.nanargmax(x, axis=1)),
    E("nanargmin", lambda m, x, y, w: m.nanargmin(x, axis=-1, keepdims=True)),
    E("cumsum", lambda m, x, y, w: m.cumsum(x, axis=0)),
    E("cumsum_flat", lambda m, x, y, w: m.cumsum(x), "cumsum"),
    E("cumprod", lambda m, x, y, w: m.cumprod(x, axis=1)),
    E("nancumsum", lambda m, x, y, w: m.nancumsum(x, axis=0)),
    E("nancumprod", lambda m, x, y, w: m.nancumprod(x)),
    E("cumulative_sum", lambda m, x, y, w: m.cumulative_sum(y, include_initial=True)),
    E("cumulative_prod", lambda m, x, y, w: m.cumulative_prod(x, axis=1)),
)

ORDER = (
    E("sort", lambda m, x, y, w: m.sort(x, axis=0)),
    E("sort_flat", lambda m, x, y, w: m.sort(x, axis=None, descending=True), "sort"),
    E("argsort", lambda m, x, y, w: m.argsort(x, axis=1, descending=True)),
    E("argsort_rows", lambda m, x, y, w: m.argsort(x, axis=0), "argsort"),
    E("lexsort", lambda m, x, y, w: m.lexsort((x[:, 0], x[:, 1]))),
    E("partition", lambda m, x, y, w: m.partition(x, 2, axis=1)),
    E("argpartition", lambda m, x, y, w: m.argpartition(x, -3, axis=1)),
    E("top_k", lambda m, x, y, w: m.top_k(x, 3)),
    E("searchsorted", lambda m, x, y, w: m.searchsorted(m.sort(y), x)),
    E(
        "searchsorted_right",
        lambda m, x, y, w: m.searchsorted(y, x, side="right", sorter=m.argsort(y)),
        "searchsorted",
    ),
    E("digitize", lambda m, x, y, w: m.digitize(x, m.sort(y))),
    E("digitize_right", lambda m, x, y, w: m.digitize(x, m.sort(y)[::-1], right=True), "digitize"),
    E("median", lambda m, x, y, w: m.median(x, axis=1)),
    E("nanmedian", lambda m, x, y, w: m.nanmedian(x, axis=-1, keepdims=True)),
    E("percentile", lambda m, x, y, w: m.percentile(x, Q * 100, axis=1, method="nearest")),
    E("nanpercentile", lambda m, x, y, w: m.nanpercentile(x, 40.0, axis=(1,))),
    *(
        entry
        for method in ("linear", "lower", "higher", "midpoint", "inverted_cdf")
        for entry in _quantiles(method)
    ),
)

WHOLE = (  # over every element: needs a non-empty array
    E("median_all", lambda m, x, y, w: m.median(x), "median"),
    E("quantile_nearest", lambda m, x, y, w: m.quantile(y, 0.3, method="nearest"), "quantile"),
    E(
        "quantile_weights",
        lambda m, x, y, w: m.quantile(
            x, np.float32(0.6), axis=1, method="inverted_cdf", weights=m.abs(w)
        ),
        "quantile",
    ),
    E("nanpercentile_all", lambda m, x, y, w: m.nanpercentile(x, Q * 100), "nanpercentile"),
    E("partition_rows", lambda m, x, y, w: m.partition(x, 0, axis=0), "partition"),
    E("argpartition_flat", lambda m, x, y, w: m.argpartition(y, 0), "argpartition"),
    E("top_k_all", lambda m, x, y, w: m.top_k(y, y.shape[0]), "top_k"),
)

SETS = (
    E("isin", lambda m, x, y, w: m.isin(x, y)),
    E("isin_invert", lambda m, x, y, w: m.isin(y, x, invert=True), "isin"),
    D("union1d", lambda m, x, y, w: m.union1d(x, y)),
    E("union1d_size", lambda m, x, y, w: m.union1d(y, w, size=6, fill_value=-1), "union1d"),
    D("intersect1d", lambda m, x, y, w: m.intersect1d(x, y)),
    D(
        "intersect1d_indices",
        lambda m, x, y, w: m.intersect1d(x, y, return_indices=True),
        "intersect1d",
    ),
    E(
        "intersect1d_size",
        lambda m, x, y, w: m.intersect1d(x, w, return_indices=True, size=3),
        "intersect1d",
    ),
    D("setdiff1d", lambda m, x, y, w: m.setdiff1d(x, y)),
    E("setdiff1d_size", lambda m, x, y, w: m.setdiff1d(w, x, size=4, fill_value=7), "setdiff1d"),
    D("setxor1d", lambda m, x, y, w: m.setxor1d(x, y)),
    E("setxor1d_size", lambda m, x, y, w: m.setxor1d(y, w, size=5), "setxor1d"),
    D("unique_all", lambda m, x, y, w: tuple(m.unique_all(x))),
    D("unique_counts", lambda m, x, y, w: tuple(m.unique_counts(y))),
    D("unique_inverse", lambda m, x, y, w: tuple(m.unique_inverse(x))),
    D("unique_values", lambda m, x, y, w: m.unique_values(x)),
    E(
        "unique_values_size",
        lambda m, x, y, w: m.unique_values(y, size=7, fill_value=0),
        "unique_values",
    ),
    E("histogram", lambda m, x, y, w: m.histogram(x, bins=3, range=(-2, 3))),
    E(
        "histogram_weights",
        lambda m, x, y, w: m.histogram(
            y, bins=np.array([-3.0, 0.0, 0.5, 4.0]), weights=y * 2, density=True
        ),
        "histogram",
    ),
    E("histogram_bin_edges", lambda m, x, y, w: m.histogram_bin_edges(w, bins=4)),
    E(
        "histogram2d",
        lambda m, x, y, w: m.histogram2d(x[:, 0], x[:, 1], bins=[2, 3], range=[(-2, 3), (0, 4)]),
    ),
    E(
        "histogramdd",
        lambda m, x, y, w: m.histogramdd(
            x, bins=2, range=[(-3, 5)] * 4, weights=x[:, 0], density=True
        ),
    ),
)

COUNTS = (  # integer input
    E("bincount", lambda m, x, y, w: m.bincount(y)),
    E(
        "bincount_weights",
        lambda m, x, y, w: m.bincount(x[:, 0], weights=x[:, 1] * 0.5, minlength=4),
        "bincount",
    ),
    E("bincount_length", lambda m, x, y, w: m.bincount(y, length=3), "bincount"),
)

BOOLS = (
    E("all_bool", lambda m, x, y, w: m.all(x, axis=0), "all"),
    E("any_bool", lambda m, x, y, w: m.any(y), "any"),
    E("sort_bool", lambda m, x, y, w: m.sort(x, axis=0), "sort"),
    E("argsort_bool", lambda m, x, y, w: m.argsort(y, descending=True), "argsort"),
    E("cumsum_bool", lambda m, x, y, w: m.cumsum(x, axis=1), "cumsum"),
    E("nansum_bool", lambda m, x, y, w: m.nansum(x, axis=1), "nansum"),
    E("isin_bool", lambda m, x, y, w: m.isin(x, y), "isin"),
    E("count_nonzero", lambda m, x, y, w: m.count_nonzero(x, axis=1)),
)

GROUPS = (
    Group("reductions", REDUCTIONS, (F, I), ALL_SIZES),
    Group("order", ORDER, (F, I), NONEMPTY),
    Group("whole", WHOLE, (F, I), NONEMPTY),
    Group("sets", SETS, (F, I), ALL_SIZES),
    Group("counts", COUNTS, (I,), ALL_SIZES),
    Group("bools", BOOLS, (B,), ALL_SIZES),
)


def covered_names() -> set[str]:
    """Every jax name the table checks."""
    return {name for group in GROUPS for entry in group.entries for name in entry.names}


def inputs(dtype: str, n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x: (n, 4)``, ``y: (m,)``, ``w: (4,)``: small integers with ties; for floats
    also NaN, +-inf and -0.0."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in ((n, 4), (m,), (4,)):
        if dtype == B:
            arrays.append(rng.random(shape) < 0.5)
            continue
        values = rng.integers(-3, 6, shape).astype(dtype)
        if dtype == F and values.size:
            flat = values.reshape(-1)
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], np.float32)
            picks = rng.random(flat.size) < 0.3
            flat[picks] = rng.choice(specials, picks.sum())
        arrays.append(values)
    return tuple(arrays)
