import { CairnError, Client } from "@cairnhq/client";

const cairn = new Client({ baseUrl: process.env.CAIRN_URL ?? "http://localhost:8080" });

const session = await cairn.createSession("main", "Deploy the latest build to production.", { wait: false });
let paused;
for await (const event of cairn.follow(session.id)) { // stored events first, then live ones
  console.log(event.seq, event.type);
  if (event.type === "turn_paused") {
    paused = await cairn.getSession(session.id);
    cairn.approve(paused.interrupts[0]); // not awaited: the loop goes on reading
  }
  if (event.type === "turn_completed" || event.type === "turn_failed") break;
}

try {
  await cairn.approve(paused.interrupts[0]); // a second decision on the same pause
} catch (err) {
  if (!(err instanceof CairnError)) throw err;
  console.log(err.status, err.code, err.message); // 409 already_decided: approve by … at …
}
