import os
import threading
import time

from cairn_client import CairnRejected, Client

cairn = Client(os.environ.get("CAIRN_URL", "http://localhost:8080"))


@cairn.require_approval(tool="refund", message="Refund {amount} EUR on order {order}?",
                        idempotency_key=lambda a: f"refund-{a['order']}-{os.getpid()}")
def refund(order: str, amount: int) -> dict:
    return {"refunded": amount}  # runs only once a person approved


def person() -> None:
    """Stands in for the approver: the inbox shows the refund; they lower it."""
    while True:
        for interrupt in cairn.pending(kind="approval"):
            if interrupt.tool == "refund":
                print("asked:", interrupt.message)
                cairn.approve(interrupt, arguments={"order": "A-17", "amount": 100})
                return
        time.sleep(0.1)


threading.Thread(target=person).start()
try:
    print("refunded:", refund("A-17", amount=120))  # waits for the decision
except CairnRejected as no:
    print("not refunded:", no.reason)
