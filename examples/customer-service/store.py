"""The shop's SQLite database and the six tools' logic, framework-free.

The tools enforce the identity policy themselves, so an agent that skips it is refused by the
tool rather than trusted: `verify_customer` needs a code sent in the same conversation, and
`lookup_customer` and `cancel_order` need the conversation verified as that customer.
A refusal raises `Refused`; the agent framework turns it into a failed tool call.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT UNIQUE NOT NULL,
                        tier TEXT NOT NULL);
CREATE TABLE orders (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
                     status TEXT NOT NULL, total REAL NOT NULL, items TEXT NOT NULL);
CREATE TABLE products (id TEXT PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                       price REAL NOT NULL, in_stock INTEGER NOT NULL);
-- the one-time codes the (simulated) mail server would deliver
CREATE TABLE codes (customer_id TEXT PRIMARY KEY REFERENCES customers(id), code TEXT NOT NULL);
-- identity state per conversation: a code sent, then verified
CREATE TABLE sessions (conversation TEXT NOT NULL, customer_id TEXT NOT NULL,
                       verified INTEGER NOT NULL DEFAULT 0,
                       PRIMARY KEY (conversation, customer_id));
"""
CUSTOMERS = [("C-001", "Alice Johnson", "alice@example.com", "premium"),
             ("C-002", "Bob Smith", "bob@example.com", "standard")]
CODES = [("C-001", "123456"), ("C-002", "789012")]
ORDERS = [("ORD-1001", "C-001", "shipped", 249.99, "Wireless headphones x1"),
          ("ORD-1002", "C-001", "processing", 1299.00, "ThinkPad X1 Carbon x1"),
          ("ORD-1003", "C-002", "delivered", 59.99, "USB-C hub x1"),
          ("ORD-1004", "C-002", "cancelled", 899.00, "MacBook Air x1")]
PRODUCTS = [("P-001", "ThinkPad X1 Carbon", "laptop", 1299.00, 1),
            ("P-002", "MacBook Air", "laptop", 1199.00, 1),
            ("P-003", "Dell XPS 13", "laptop", 949.00, 1),
            ("P-004", "Chromebook Plus", "laptop", 429.00, 0),
            ("P-005", "Sony WH-1000XM5", "headphones", 249.99, 1),
            ("P-006", "USB-C hub", "accessories", 59.99, 1)]


class Refused(Exception):
    """The tool refused: the policy the tool enforces was not followed."""


def seed(path: Path) -> Path:
    """A fresh database at `path` (an existing one is replaced)."""
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(SCHEMA)
        db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?)", CUSTOMERS)
        db.executemany("INSERT INTO codes VALUES (?, ?)", CODES)
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", ORDERS)
        db.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?)", PRODUCTS)
    return path


class Shop:
    """The tools' logic over one database, for one conversation."""

    def __init__(self, path: Path, conversation: str) -> None:
        self.path = path
        self.conversation = conversation

    def _rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with closing(sqlite3.connect(self.path)) as db:
            db.row_factory = sqlite3.Row
            return [dict(row) for row in db.execute(sql, params)]

    def _write(self, sql: str, *params: Any) -> None:
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute(sql, params)

    def _customer(self, email: str) -> dict[str, Any]:
        rows = self._rows("SELECT * FROM customers WHERE email = ?", email.strip().lower())
        if not rows:
            raise Refused(f"no customer with email {email}")
        return rows[0]

    def _verified(self, customer_id: str) -> bool:
        return bool(self._rows("SELECT 1 FROM sessions WHERE conversation = ? AND "
                               "customer_id = ? AND verified = 1", self.conversation,
                               customer_id))

    def lookup_customer(self, email: str) -> dict[str, Any]:
        customer = self._customer(email)
        if not self._verified(customer["id"]):
            raise Refused("identity not verified: send_verification_code, then verify_customer")
        return customer

    def get_order(self, order_id: str) -> dict[str, Any]:
        rows = self._rows("SELECT id, status, total, items FROM orders WHERE id = ?", order_id)
        return rows[0] if rows else {"id": order_id, "found": False}

    def search_products(self, query: str, max_price: float | None = None) -> list[dict[str, Any]]:
        like = f"%{query.strip().rstrip('s')}%"
        return [row for row in self._rows(
            "SELECT * FROM products WHERE (name LIKE ? OR category LIKE ?) ORDER BY price",
            like, like) if max_price is None or row["price"] <= max_price]

    def send_verification_code(self, email: str) -> dict[str, Any]:
        customer = self._customer(email)
        self._write("INSERT OR REPLACE INTO sessions VALUES (?, ?, 0)", self.conversation,
                    customer["id"])
        return {"sent": True, "to": customer["email"]}

    def verify_customer(self, email: str, code: str) -> dict[str, Any]:
        customer = self._customer(email)
        if not self._rows("SELECT 1 FROM sessions WHERE conversation = ? AND customer_id = ?",
                          self.conversation, customer["id"]):
            raise Refused("no code was sent to this customer in this conversation")
        (expected,) = self._rows("SELECT code FROM codes WHERE customer_id = ?", customer["id"])
        if expected["code"] != code.strip():
            return {"verified": False}
        self._write("UPDATE sessions SET verified = 1 WHERE conversation = ? AND customer_id = ?",
                    self.conversation, customer["id"])
        return {"verified": True, "customer_id": customer["id"]}

    def cancel_order(self, order_id: str, confirm: bool) -> dict[str, Any]:
        rows = self._rows("SELECT * FROM orders WHERE id = ?", order_id)
        if not rows:
            raise Refused(f"no order {order_id}")
        order = rows[0]
        if not self._verified(order["customer_id"]):
            raise Refused("identity not verified: send_verification_code, then verify_customer")
        if confirm is not True:
            raise Refused("cancelling needs the customer's explicit confirmation")
        if order["status"] != "processing":
            raise Refused(f"order {order_id} is {order['status']}: only processing orders "
                          "can be cancelled")
        self._write("UPDATE orders SET status = 'cancelled' WHERE id = ?", order_id)
        return {"id": order_id, "status": "cancelled"}


def order_status(path: Path, order_id: str) -> str:
    """What the database says now (for the demo's own checks)."""
    with closing(sqlite3.connect(path)) as db:
        (status,) = db.execute("SELECT status FROM orders WHERE id = ?", (order_id,)).fetchone()
    return str(status)
