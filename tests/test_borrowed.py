"""``borrowed``: a compiled entry point's arrays without reference counting.

The view must be the same memory (shape, strides, layout), so that what a
compiled function writes through it, or through views of it, lands in the
caller's array; and it takes arrays only."""
import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from sayuri_async.borrowed import borrowed


@njit(cache=False)
def _fill_rows(a, v):
    b = borrowed(a)
    for i in range(b.shape[0]):
        row = b[i]  # a view of a borrowed array
        for j in range(row.shape[0]):
            row[j] = v * i + j
    return b.shape, b.strides


@njit(cache=False)
def _sum_of(tree):
    x, y = borrowed(tree[0]), borrowed(tree[1])
    return x.sum() + y.sum()


def test_writes_through_a_borrowed_view_land_in_the_callers_array():
    a = np.zeros((3, 4), np.int64)
    shape, strides = _fill_rows(a, 10)
    assert shape == a.shape and strides == a.strides
    assert a.tolist() == [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]


def test_a_strided_view_keeps_its_strides():
    base = np.zeros((4, 6), np.int64)
    view = base[::2, 1::2]  # not contiguous
    _fill_rows(view, 100)
    assert base[0, 1::2].tolist() == [0, 1, 2]
    assert base[2, 1::2].tolist() == [100, 101, 102]
    assert base[1].tolist() == [0] * 6 and base[:, 0].tolist() == [0] * 4


def test_borrowed_arrays_of_a_tuple_read_as_the_originals():
    x = np.arange(5.0)
    y = np.ones((2, 2), np.float32)
    assert _sum_of((x, y)) == pytest.approx(14.0)


def test_the_callers_array_survives_many_calls():
    import sys
    a = np.zeros((2, 3), np.int64)
    before = sys.getrefcount(a)
    for _ in range(1000):
        _fill_rows(a, 1)
    assert sys.getrefcount(a) == before
    assert a.tolist() == [[0, 1, 2], [1, 2, 3]]


def test_only_arrays_can_be_borrowed():
    @njit(cache=False)
    def scalar(v):
        return borrowed(v)

    with pytest.raises(TypingError):
        scalar(3)
