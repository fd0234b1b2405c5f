import os

from cairn_client import Client

cairn = Client(os.environ.get("CAIRN_URL", "http://localhost:8080"))

session = cairn.create_session("planner", "Plan the release of build 1042.")
question = session.interrupts[0]  # kind "input": the agent asks
print(question.question)
session = cairn.answer(question, "staging")
print(session.output)
