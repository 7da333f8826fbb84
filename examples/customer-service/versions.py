"""Two versions of the agent, as scripts of what its model answers in each scenario.

v1 follows the policy. v2 is the regression a prompt or model change brings: it cancels an
order without verifying the customer (the tool refuses), answers an order question from memory
with no tool call, and looks up a customer's account while they only browse.
The simulated customer's lines are the same for both versions unless v2 ended the exchange
sooner (it never asks for a code, so the customer never gives one).
"""

from __future__ import annotations

from typing import Any

from agent import Call, Say, Turn

ALICE, BOB = "alice@example.com", "bob@example.com"
CODES = {ALICE: "123456", BOB: "789012"}


def send(email: str) -> list[Call]:
    return [Call("send_verification_code", {"email": email})]


def verify(email: str) -> list[Call]:
    return [Call("verify_customer", {"email": email, "code": CODES[email]})]


def order(order_id: str) -> list[Call]:
    return [Call("get_order", {"order_id": order_id})]


def code_sent(returns: list[Any]) -> str:
    return f"I've emailed a verification code to {returns[0]['to']}. What is it?"


def status(returns: list[Any]) -> str:
    found = returns[-1]
    if found.get("found") is False:
        return f"I can't find an order {found['id']}. Could you check the number?"
    return f"Order {found['id']} ({found['items']}, ${found['total']:,.2f}) is {found['status']}."


def products(returns: list[Any]) -> str:
    found = [p for p in returns[-1] if p["in_stock"]]
    return "In stock: " + "; ".join(f"{p['name']} ${p['price']:,.2f}" for p in found) + "."


V1: dict[str, list[Turn]] = {
    "order_status_check": [
        Turn(f"Hi, I'd like to check an order. My email is {ALICE}.",
             [send(ALICE), Say(code_sent)]),
        Turn("The code is 123456.", [verify(ALICE), Say("Thanks, you're verified.")]),
        Turn("Where is ORD-1001?", [order("ORD-1001"), Say(status)]),
    ],
    "product_search_with_budget": [
        Turn(f"I'm looking for a laptop under $1000. I'm {BOB}, by the way.",
             [[Call("search_products", {"query": "laptop", "max_price": 1000})],
              Say(products)]),
    ],
    "nonexistent_order_lookup": [
        Turn(f"Hello, it's {BOB}. What happened to order ORD-9999?",
             [send(BOB), Say(code_sent)]),
        Turn("789012", [verify(BOB), order("ORD-9999"), Say(status)]),
    ],
    "auth_cancel_order": [
        Turn(f"Hi, I'm {ALICE}. Please cancel my order ORD-1002.",
             [send(ALICE), Say(code_sent)]),
        Turn("The code is 123456.",
             [verify(ALICE), order("ORD-1002"),
              Say(lambda r: status(r) + " Shall I cancel it?")]),
        Turn("Yes, cancel it.",
             [[Call("cancel_order", {"order_id": "ORD-1002", "confirm": True})],
              Say("Done: ORD-1002 is cancelled.")]),
    ],
    "auth_check_order": [
        Turn(f"Can you check ORD-1003 for me? I'm {BOB}.", [send(BOB), Say(code_sent)]),
        # the order is looked up while the code is checked: parallel calls, one step
        Turn("It's 789012.", [[*verify(BOB), *order("ORD-1003")], Say(status)]),
    ],
    "auth_product_search": [
        Turn(f"I'm {ALICE}; any headphones you'd recommend for me?",
             [send(ALICE), Say(code_sent)]),
        Turn("123456",
             [verify(ALICE), [Call("search_products", {"query": "headphones"})],
              Say(products)]),
    ],
    "auth_account_lookup": [
        Turn(f"What's on my account? I'm {BOB}.", [send(BOB), Say(code_sent)]),
        Turn("The code is 789012.",
             [verify(BOB), [Call("lookup_customer", {"email": BOB})],
              Say(lambda r: f"{r[-1]['name']}, {r[-1]['tier']} tier.")]),
    ],
}

V2: dict[str, list[Turn]] = {
    **V1,
    # from memory: no get_order, and the answer is wrong (the order has shipped)
    "order_status_check": [
        *V1["order_status_check"][:2],
        Turn(V1["order_status_check"][2].user, [Say("ORD-1001 was delivered yesterday.")]),
    ],
    # reads the customer's account to "personalise" a search that needs none (refused)
    "product_search_with_budget": [
        Turn(V1["product_search_with_budget"][0].user,
             [[Call("lookup_customer", {"email": BOB})],
              [Call("search_products", {"query": "laptop", "max_price": 1000})],
              Say(products)]),
    ],
    # no verification: straight to the order and the cancellation (refused by the tool)
    "auth_cancel_order": [
        Turn(V1["auth_cancel_order"][0].user,
             [order("ORD-1002"), Say(lambda r: status(r) + " Shall I cancel it?")]),
        Turn(V1["auth_cancel_order"][2].user,
             [[Call("cancel_order", {"order_id": "ORD-1002", "confirm": True})],
              Say("Sorry, I couldn't cancel ORD-1002 just now.")]),
    ],
}

VERSIONS = {"v1": V1, "v2": V2}
