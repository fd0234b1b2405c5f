import os

from cairn_client import Client

cairn = Client(os.environ.get("CAIRN_URL", "http://localhost:8080"))

session = cairn.create_session("main", "Deploy the latest build to production.")
print(session.status)  # paused: deploy_code waits for a person
for interrupt in cairn.pending(kind="approval"):
    if interrupt.session_id == session.id:
        print(interrupt.tool, interrupt.arguments, interrupt.message)
        session = cairn.approve(interrupt)  # or approve(interrupt, arguments={...}), reject(interrupt, "why")
print(session.status, session.output)
