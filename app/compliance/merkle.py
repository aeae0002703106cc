"""RFC 6962 Merkle trees (pure): tree heads over finished rounds and inclusion proofs.

Leaf hash ``SHA-256(0x00 ‖ leaf)``, node hash ``SHA-256(0x01 ‖ left ‖ right)``; a tree of
``n > 1`` leaves splits at ``k``, the largest power of two smaller than ``n`` (RFC 6962
§2.1, unchanged in RFC 9162 §2.1.1).  The empty tree's hash is ``SHA-256("")``.

:class:`MerkleTree` keeps every complete level, so the root of any prefix (a checkpoint of
an older size) and any audit path cost O(log n) after an O(n) build.  Without the build, a
root or an audit path needs only the hashes of a few complete subtrees (:func:`subtrees`,
:func:`proof_ranges`, :func:`subtree_hash`): what the service reads from the stored tree
(``game.merkle_nodes``), O(log n) rows instead of every leaf.
:func:`verify_inclusion` is the RFC 9162 §2.1.3.2 algorithm, the one an outside verifier
runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

__all__ = (
    "EMPTY_ROOT",
    "MerkleTree",
    "inclusion_proof",
    "leaf_hash",
    "merkle_root",
    "node_hash",
    "proof_ranges",
    "subtree_hash",
    "subtrees",
    "verify_inclusion",
)

EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The hash of a tree with no leaves."""


def leaf_hash(leaf: bytes) -> bytes:
    """``SHA-256(0x00 ‖ leaf)``."""
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 ‖ left ‖ right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two strictly smaller than ``size`` (``size >= 2``)."""
    return 1 << ((size - 1).bit_length() - 1)


def merkle_root(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH of a list of leaf hashes, straight from the RFC's recursive definition."""
    if not leaf_hashes:
        return EMPTY_ROOT
    if len(leaf_hashes) == 1:
        return leaf_hashes[0]
    k = _split(len(leaf_hashes))
    return node_hash(merkle_root(leaf_hashes[:k]), merkle_root(leaf_hashes[k:]))


def inclusion_proof(leaf_hashes: Sequence[bytes], index: int) -> list[bytes]:
    """PATH(index, D[n]) straight from the RFC's recursive definition."""
    size = len(leaf_hashes)
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    if size == 1:
        return []
    k = _split(size)
    if index < k:
        return [*inclusion_proof(leaf_hashes[:k], index), merkle_root(leaf_hashes[k:])]
    return [*inclusion_proof(leaf_hashes[k:], index - k), merkle_root(leaf_hashes[:k])]


Node = tuple[int, int]
"""A complete subtree ``(level, index)``: the ``2**level`` leaves from ``index << level``."""


def subtrees(start: int, end: int) -> list[Node]:
    """The complete subtrees whose hashes make the MTH of leaves ``start..end-1``.

    For the ranges a root or an audit path meets (each starts on a multiple of the largest
    power of two that fits in it), one per level at most.
    """
    width = end - start
    if width <= 0:
        raise ValueError(f"no leaves from {start} to {end}")
    if width & (width - 1) == 0:
        level = width.bit_length() - 1
        return [(level, start >> level)]
    k = _split(width)
    return [*subtrees(start, start + k), *subtrees(start + k, end)]


def subtree_hash(nodes: Mapping[Node, bytes], start: int, end: int) -> bytes:
    """MTH of leaves ``start..end-1`` from the hashes of its :func:`subtrees`."""
    width = end - start
    if width & (width - 1) == 0:
        level = width.bit_length() - 1
        return nodes[level, start >> level]
    k = _split(width)
    return node_hash(subtree_hash(nodes, start, start + k), subtree_hash(nodes, start + k, end))


def proof_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose roots make the audit path of leaf ``index`` in a tree of ``size``
    leaves, in the path's order (nearest the leaf first)."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    ranges: list[tuple[int, int]] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    ranges.reverse()
    return ranges


class MerkleTree:
    """Every complete level of a tree, for prefix roots and audit paths in O(log n)."""

    __slots__ = ("_levels",)

    def __init__(self, leaf_hashes: Sequence[bytes]) -> None:
        levels = [list(leaf_hashes)]
        while len(levels[-1]) > 1:
            below = levels[-1]
            levels.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])
        self._levels = levels

    @property
    def size(self) -> int:
        """Number of leaves."""
        return len(self._levels[0])

    def leaf(self, index: int) -> bytes:
        """The hash of leaf ``index``."""
        return self._levels[0][index]

    def _range_root(self, start: int, end: int) -> bytes:
        # Every range met below starts on a multiple of the largest power of two that fits
        # in it, so a power-of-two range is one complete node of a stored level.
        width = end - start
        if width & (width - 1) == 0:
            level = width.bit_length() - 1
            return self._levels[level][start >> level]
        k = _split(width)
        return node_hash(self._range_root(start, start + k), self._range_root(start + k, end))

    def root(self, size: int | None = None) -> bytes:
        """MTH of the first ``size`` leaves (all of them by default)."""
        size = self.size if size is None else size
        if not 0 <= size <= self.size:
            raise ValueError(f"no prefix of {size} leaves in a tree of {self.size}")
        return EMPTY_ROOT if size == 0 else self._range_root(0, size)

    def proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The audit path of leaf ``index`` in the tree of the first ``size`` leaves."""
        size = self.size if size is None else size
        if not 0 <= index < size <= self.size:
            raise ValueError(f"leaf {index} is not in a tree of {size}")
        return [self._range_root(start, end) for start, end in proof_ranges(index, size)]


def verify_inclusion(
    leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """Whether ``proof`` shows the leaf hash ``leaf`` at ``index`` of the tree with ``root``."""
    if not 0 <= index < tree_size:
        return False
    fn, sn, value = index, tree_size - 1, leaf
    for sibling in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            value = node_hash(sibling, value)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            value = node_hash(value, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and value == root
