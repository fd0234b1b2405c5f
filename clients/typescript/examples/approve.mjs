import { Client } from "@cairnhq/client";

const cairn = new Client({ baseUrl: process.env.CAIRN_URL ?? "http://localhost:8080" });

let session = await cairn.createSession("main", "Deploy the latest build to production.");
console.log(session.status); // paused: deploy_code waits for a person
for await (const interrupt of cairn.pending({ kind: "approval" })) {
  if (interrupt.session_id !== session.id) continue;
  console.log(interrupt.tool, interrupt.arguments, interrupt.message);
  session = await cairn.approve(interrupt); // or approve(interrupt, { arguments }), reject(interrupt, "why")
}
console.log(session.status, session.output);
