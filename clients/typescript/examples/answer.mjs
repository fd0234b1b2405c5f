import { Client } from "@cairnhq/client";

const cairn = new Client({ baseUrl: process.env.CAIRN_URL ?? "http://localhost:8080" });

let session = await cairn.createSession("planner", "Plan the release of build 1042.");
const question = session.interrupts[0]; // kind "input": the agent asks
console.log(question.question);
session = await cairn.answer(question, "staging");
console.log(session.output);
