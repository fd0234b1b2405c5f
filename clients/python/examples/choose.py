import os

from cairn_client import Client

cairn = Client(os.environ.get("CAIRN_URL", "http://localhost:8080"))

# Any kind of interrupt, drawn from its ask: no code per kind.
session = cairn.create_session("main", "Deploy the latest build to production.")
for interrupt in session.interrupts:
    ask = interrupt.ask
    print(ask.label, "·", ask.text)
    print(" | ".join(c.label + (f" ({c.field})" if c.field else "") for c in ask.choices))
    session = cairn.choose(interrupt, ask.choices[0].action)  # or choose(interrupt, "reject", "why")
print(session.status, session.output)
