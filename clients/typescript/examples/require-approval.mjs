import { CairnRejected, Client } from "@cairnhq/client";

const cairn = new Client({ baseUrl: process.env.CAIRN_URL ?? "http://localhost:8080" });

const refund = cairn.requireApproval(
  async ({ order, amount }) => ({ refunded: amount }), // runs only once a person approved
  { tool: "refund", message: (a) => `Refund ${a.amount} EUR on ${a.order}?`, idempotencyKey: (a) => `refund-${a.order}-${process.pid}` },
);

// Stands in for the approver: the inbox shows the refund; they lower it.
async function person() {
  for (;;) {
    for await (const interrupt of cairn.pending({ kind: "approval" })) {
      if (interrupt.tool !== "refund") continue;
      console.log("asked:", interrupt.message);
      return cairn.approve(interrupt, { arguments: { order: "A-17", amount: 100 } });
    }
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

try {
  const [refunded] = await Promise.all([refund({ order: "A-17", amount: 120 }), person()]);
  console.log("refunded:", refunded);
} catch (err) {
  if (!(err instanceof CairnRejected)) throw err;
  console.log("not refunded:", err.reason);
}
