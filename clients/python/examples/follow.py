import os
import threading

from cairn_client import CairnError, Client

cairn = Client(os.environ.get("CAIRN_URL", "http://localhost:8080"))

session = cairn.create_session("main", "Deploy the latest build to production.", wait=False)
for event in cairn.follow(session.id):  # stored events first, then live ones
    print(event.seq, event.type)
    if event.type == "turn_paused":
        paused = cairn.get_session(session.id)
        threading.Thread(target=cairn.approve, args=(paused.interrupts[0],)).start()
    if event.type in ("turn_completed", "turn_failed"):
        break

try:
    cairn.approve(paused.interrupts[0])  # a second decision on the same pause
except CairnError as err:
    print(err.status, err.code, err.message)  # 409 already_decided: approve by … at …
