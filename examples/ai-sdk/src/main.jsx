// useChat from the Vercel AI SDK against Cairn's /v1/agents/{agent}/chat:
// tool calls that need a person show Approve / Deny; Cairn runs them once.
import { useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

const agent = new URLSearchParams(location.search).get("agent") ?? "main";
const token = new URLSearchParams(location.search).get("token"); // with auth: an approver token

function ToolPart({ part, respond }) {
  const name = part.type.replace(/^tool-/, "");
  return (
    <div style={{ border: "1px solid #ccc", borderRadius: 6, padding: 8, margin: "6px 0" }}>
      <code>{name}({JSON.stringify(part.input)})</code> — <em>{part.state}</em>
      {part.state === "approval-requested" && (
        <div>
          <button onClick={() => respond({ id: part.approval.id, approved: true })}>Approve</button>{" "}
          <button onClick={() => respond({ id: part.approval.id, approved: false, reason: prompt("Why not?") ?? "" })}>Deny</button>
        </div>
      )}
      {part.state === "output-available" && <pre>{String(part.output)}</pre>}
      {part.state === "output-error" && <pre style={{ color: "crimson" }}>{part.errorText}</pre>}
    </div>
  );
}

function Chat() {
  const [input, setInput] = useState("");
  const [id] = useState(() => "web_" + Math.random().toString(36).slice(2)); // the Cairn session id, fixed for the page
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id,
    transport: new DefaultChatTransport({
      api: `/v1/agents/${agent}/chat`,
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  return (
    <main style={{ maxWidth: 720, margin: "2em auto", fontFamily: "system-ui" }}>
      <h1>Cairn × useChat</h1>
      {messages.map((m) => (
        <div key={m.id}>
          <strong>{m.role}:</strong>
          {m.parts.map((part, i) =>
            part.type === "text" ? <span key={i}> {part.text}</span>
              : part.type.startsWith("tool-") ? <ToolPart key={i} part={part} respond={addToolApprovalResponse} />
              : null)}
        </div>
      ))}
      {error && <p style={{ color: "crimson" }}>{error.message}</p>}
      <form onSubmit={(e) => { e.preventDefault(); if (input.trim()) { sendMessage({ text: input }); setInput(""); } }}>
        <input value={input} onChange={(e) => setInput(e.target.value)} placeholder="Deploy to production" disabled={status !== "ready"} size={50} />
        <button type="submit" disabled={status !== "ready"}>Send</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Chat />);
