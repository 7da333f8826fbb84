"""The demo shop's tools enforce the identity policy themselves (examples/customer-service/
store.py): a code must be sent, then verified, in the same conversation, before an account is
read or an order cancelled; a refusal changes nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "customer-service"))
from store import Refused, Shop, order_status, seed

ALICE = "alice@example.com"


def test_cancelling_needs_a_verified_owner_and_a_confirmation(tmp_path: Path) -> None:
    db = seed(tmp_path / "shop.db")
    shop = Shop(db, "conversation-1")
    with pytest.raises(Refused, match="no code was sent"):
        shop.verify_customer(ALICE, "123456")
    with pytest.raises(Refused, match="identity not verified"):
        shop.cancel_order("ORD-1002", True)
    with pytest.raises(Refused, match="identity not verified"):
        shop.lookup_customer(ALICE)
    assert shop.send_verification_code(ALICE) == {"sent": True, "to": ALICE}
    assert shop.verify_customer(ALICE, "000000") == {"verified": False}
    with pytest.raises(Refused, match="identity not verified"):
        shop.cancel_order("ORD-1002", True)
    assert order_status(db, "ORD-1002") == "processing"

    assert shop.verify_customer(ALICE, "123456")["verified"] is True
    with pytest.raises(Refused, match="confirmation"):
        shop.cancel_order("ORD-1002", False)
    with pytest.raises(Refused, match="only processing orders"):
        shop.cancel_order("ORD-1001", True)  # Alice's, but shipped
    with pytest.raises(Refused, match="identity not verified"):
        shop.cancel_order("ORD-1003", True)  # Bob's order: Alice's verification does not count
    assert shop.cancel_order("ORD-1002", True) == {"id": "ORD-1002", "status": "cancelled"}
    assert order_status(db, "ORD-1002") == "cancelled"
    assert shop.lookup_customer(ALICE)["tier"] == "premium"


def test_verification_belongs_to_one_conversation(tmp_path: Path) -> None:
    db = seed(tmp_path / "shop.db")
    first = Shop(db, "conversation-1")
    first.send_verification_code(ALICE)
    first.verify_customer(ALICE, "123456")
    with pytest.raises(Refused, match="identity not verified"):
        Shop(db, "conversation-2").cancel_order("ORD-1002", True)
    assert order_status(db, "ORD-1002") == "processing"


def test_lookups_and_search_need_no_verification(tmp_path: Path) -> None:
    shop = Shop(seed(tmp_path / "shop.db"), "c")
    assert shop.get_order("ORD-9999") == {"id": "ORD-9999", "found": False}
    assert shop.get_order("ORD-1001")["status"] == "shipped"
    laptops = shop.search_products("laptops", 1000)
    assert [p["name"] for p in laptops] == ["Chromebook Plus", "Dell XPS 13"]
