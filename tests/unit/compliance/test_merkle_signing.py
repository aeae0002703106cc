"""RFC 6962 trees (the Certificate Transparency test vectors) and Ed25519 keyrings."""

from __future__ import annotations

import base64
import os

import pytest

from app.compliance.merkle import (
    EMPTY_ROOT,
    MerkleTree,
    inclusion_proof,
    leaf_hash,
    merkle_root,
    verify_inclusion,
)
from app.compliance.record import account_id, split_pool
from app.compliance.signing import (
    Signer,
    SigningKeyError,
    checkpoint_message,
    parse_signing_keyring,
    round_message,
    verify_signature,
)
from app.config import DEV_SIGNING_KEYRING
from ledger import AccountType, account_id_for, split_settlement

# certificate-transparency's merkle_tree_test: leaves and the roots of the first n of them.
CT_LEAVES = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


def test_roots_match_the_certificate_transparency_vectors():
    leaves = [leaf_hash(bytes.fromhex(leaf)) for leaf in CT_LEAVES]
    tree = MerkleTree(leaves)
    assert tree.root(0) == EMPTY_ROOT == merkle_root([])
    for size, root in enumerate(CT_ROOTS, start=1):
        assert merkle_root(leaves[:size]).hex() == root
        assert tree.root(size).hex() == root


def test_every_audit_path_of_every_prefix_verifies_and_matches_the_rfc_definition():
    for size in range(1, 40):
        leaves = [leaf_hash(os.urandom(8)) for _ in range(size)]
        tree = MerkleTree(leaves)
        for prefix in range(1, size + 1):
            root = tree.root(prefix)
            for index in range(prefix):
                proof = tree.proof(index, prefix)
                assert proof == inclusion_proof(leaves[:prefix], index)
                assert verify_inclusion(leaves[index], index, prefix, proof, root)
                if prefix > 1:
                    assert not verify_inclusion(
                        leaves[index], (index + 1) % prefix, prefix, proof, root
                    )
                    assert not verify_inclusion(leaf_hash(b"other"), index, prefix, proof, root)


def test_a_proof_fails_against_the_wrong_size_or_with_a_changed_node():
    leaves = [leaf_hash(bytes([i])) for i in range(11)]
    tree = MerkleTree(leaves)
    proof = tree.proof(6)
    assert verify_inclusion(leaves[6], 6, 11, proof, tree.root())
    assert not verify_inclusion(leaves[6], 11, 11, proof, tree.root())
    broken = [proof[0][:-1] + bytes([proof[0][-1] ^ 1]), *proof[1:]]
    assert not verify_inclusion(leaves[6], 6, 11, broken, tree.root())


def test_a_proof_is_refused_when_it_walks_a_tree_of_another_size_than_it_claims():
    """RFC 9162 §2.1.3.2's own checks, each of which a hash comparison alone would miss: the
    path must end exactly at the root of a tree of the claimed size (not before: leaf 6's path
    in the tree of 8 reaches that tree's root, but the claim is a tree of 11), must not run
    past it (a 1-leaf tree has no sibling: leaf 1 hashed with leaf 0 is the root of 2 leaves),
    and the index must be a leaf of that size (a 1-leaf tree's root is its leaf 0, not 1)."""
    leaves = [leaf_hash(bytes([i])) for i in range(11)]
    tree = MerkleTree(leaves)
    assert verify_inclusion(leaves[6], 6, 8, tree.proof(6, 8), tree.root(8))
    assert not verify_inclusion(leaves[6], 6, 11, tree.proof(6, 8), tree.root(8))
    assert verify_inclusion(leaves[1], 1, 2, [leaves[0]], tree.root(2))
    assert not verify_inclusion(leaves[1], 0, 1, [leaves[0]], tree.root(2))
    assert verify_inclusion(leaves[0], 0, 1, [], tree.root(1))
    assert not verify_inclusion(leaves[0], 1, 1, [], tree.root(1))


def test_the_development_keyring_signs_and_only_the_signed_message_verifies():
    signer = Signer.from_keyring(DEV_SIGNING_KEYRING)
    assert signer.key_id == "dev1" and len(signer.public_key) == 32
    digest = bytes(32)
    signature = signer.sign(round_message(digest))
    assert verify_signature(signer.public_key, signature, round_message(digest))
    assert not verify_signature(signer.public_key, signature, round_message(bytes(31) + b"\x01"))
    head = {"tree_size": 1, "root": digest.hex(), "created_at": "x", "key_id": "dev1"}
    # Domain separation: a round signature is never a checkpoint signature.
    assert not verify_signature(signer.public_key, signature, checkpoint_message(head))
    assert not verify_signature(b"\x00" * 32, signature, round_message(digest))


def test_keyrings_rotate_and_refuse_bad_keys():
    new = base64.b64encode(b"n" * 32).decode()
    ring = f"{DEV_SIGNING_KEYRING},k2:{new}"
    assert list(parse_signing_keyring(ring)) == ["dev1", "k2"]
    assert Signer.from_keyring(ring, "k2").key_id == "k2"
    for bad in (
        "",
        "k1",
        "k1:!!",
        f"k1:{base64.b64encode(b'short').decode()}",
        f"k1:{new},k1:{new}",
    ):
        with pytest.raises(SigningKeyError):
            parse_signing_keyring(bad)
    with pytest.raises(SigningKeyError):
        Signer.from_keyring(ring, "k3")


def test_the_independent_money_formulas_agree_with_the_ledger():
    for pool, bps in ((2_000, 1_000), (1_004, 1_000), (0, 0), (999, 5_000), (10**9 + 7, 333)):
        assert split_pool(pool, bps, 1) == split_settlement(pool, bps, 1)
    owner = "6d2f9c1e-4a0b-4b7c-9f3a-1e2d3c4b5a69"
    import uuid

    assert account_id("player_wallet", "BRL", owner) == str(
        account_id_for(AccountType.PLAYER_WALLET, "BRL", uuid.UUID(owner))
    )
    assert account_id("house_revenue", "BRL", None) == str(
        account_id_for(AccountType.HOUSE_REVENUE, "BRL")
    )
