import { Client } from "@cairnhq/client";

const cairn = new Client({ baseUrl: process.env.CAIRN_URL ?? "http://localhost:8080" });

// Any kind of interrupt, drawn from its ask: no code per kind.
let session = await cairn.createSession("main", "Deploy the latest build to production.");
for (const interrupt of session.interrupts) {
  const ask = interrupt.ask;
  console.log(ask.label, "·", ask.text);
  console.log(ask.choices.map((c) => c.label + (c.field ? ` (${c.field})` : "")).join(" | "));
  session = await cairn.choose(interrupt, ask.choices[0].action); // or choose(interrupt, "reject", "why")
}
console.log(session.status, session.output);
